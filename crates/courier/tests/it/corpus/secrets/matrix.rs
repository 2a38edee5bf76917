//! The secrets check's dimensions: the places a caller can put a
//! credential, the routes to the origins, the redirects on the way, and
//! where each place's canary is meant to arrive.

use super::World;

/// A place a caller can put a credential.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Place {
    /// `ClientBuilder::default_headers`: `Authorization`.
    DefaultAuthorization,
    /// `ClientBuilder::default_headers`: `Cookie`.
    DefaultCookie,
    /// `ClientBuilder::default_headers`: a header the policy names sensitive.
    DefaultCustom,
    /// `ServiceClient::with_default_headers`: `Authorization`.
    ServiceDefault,
    /// The request's own `Authorization`.
    RequestHeader,
    /// The request's own `Cookie`.
    RequestCookie,
    /// `basic_auth` (the password).
    BasicAuth,
    /// `bearer_auth`.
    BearerAuth,
    /// A cookie in a `CookieJar`, set by the first origin's host.
    #[cfg(feature = "cookies")]
    Jar,
    /// The password in the proxy's URL.
    ProxyUrl,
    /// The request's own `Host` (a virtual host): sent to the first origin
    /// (HTTP/2 and HTTP/3 as `:authority`); a hop to another origin must not
    /// carry it there.
    RequestHost,
    /// A careless caller's framing headers in `ClientBuilder::default_headers`
    /// (`Host`, `Content-Length`, `Transfer-Encoding`): never on the wire.
    DefaultFraming,
    /// The same in `ServiceClient::with_default_headers`.
    ServiceFraming,
}

impl Place {
    pub fn all() -> Vec<Place> {
        use Place::*;
        vec![
            DefaultAuthorization,
            DefaultCookie,
            DefaultCustom,
            ServiceDefault,
            RequestHeader,
            RequestCookie,
            BasicAuth,
            BearerAuth,
            #[cfg(feature = "cookies")]
            Jar,
            ProxyUrl,
            RequestHost,
            DefaultFraming,
            ServiceFraming,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            Place::DefaultAuthorization => "default authorization",
            Place::DefaultCookie => "default cookie",
            Place::DefaultCustom => "default x-api-key",
            Place::ServiceDefault => "service default auth",
            Place::RequestHeader => "request authorization",
            Place::RequestCookie => "request cookie",
            Place::BasicAuth => "basic_auth",
            Place::BearerAuth => "bearer_auth",
            #[cfg(feature = "cookies")]
            Place::Jar => "cookie jar",
            Place::ProxyUrl => "proxy URL password",
            Place::RequestHost => "request host",
            Place::DefaultFraming => "default framing",
            Place::ServiceFraming => "service framing",
        }
    }
}

/// How requests reach the origins.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    Direct,
    /// An HTTP proxy for every origin: `http` forwarded, `https` by CONNECT.
    HttpProxy,
    /// The same proxy, with `localhost` (origins B and SB) bypassing it.
    HttpProxyBypassed,
    /// SOCKS5, names resolved by the proxy.
    Socks5,
    /// Direct, the client learning `Alt-Svc`; `s` offered HTTP/3 on
    /// another port of its host (`s3`, valid for it: `s3` is `s`).
    #[cfg(feature = "http3")]
    AltSvc,
    /// As [`Route::AltSvc`], then `Alt-Svc: clear`: TCP again.
    #[cfg(feature = "http3")]
    AltSvcCleared,
    /// `s` offered HTTP/3 on another host (`x3`, whose certificate is
    /// valid for `s` too): courier uses only the origin's own host.
    #[cfg(feature = "http3")]
    AltSvcOtherHost,
    /// `s` offered HTTP/3 on its host, at `bad3`, whose certificate is not
    /// valid for `s`.
    #[cfg(feature = "http3")]
    AltSvcBadCert,
    /// `s` named `origin.test`, whose HTTPS record offers `h3` at `s3`'s
    /// port (the first request goes there).
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    HttpsRecord,
    /// `origin.test`'s HTTPS records name another host (`x3`'s port on
    /// `localhost`) and `bad3`'s port with an address hint elsewhere.
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    HttpsRecordHostile,
}

impl Route {
    pub fn all() -> Vec<Route> {
        vec![
            Route::Direct,
            Route::HttpProxy,
            Route::HttpProxyBypassed,
            Route::Socks5,
            #[cfg(feature = "http3")]
            Route::AltSvc,
            #[cfg(feature = "http3")]
            Route::AltSvcCleared,
            #[cfg(feature = "http3")]
            Route::AltSvcOtherHost,
            #[cfg(feature = "http3")]
            Route::AltSvcBadCert,
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecord,
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecordHostile,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::HttpProxy => "http proxy",
            Route::HttpProxyBypassed => "proxy, b bypasses",
            Route::Socks5 => "socks5h",
            #[cfg(feature = "http3")]
            Route::AltSvc => "alt-svc h3",
            #[cfg(feature = "http3")]
            Route::AltSvcCleared => "alt-svc cleared",
            #[cfg(feature = "http3")]
            Route::AltSvcOtherHost => "alt-svc x-host",
            #[cfg(feature = "http3")]
            Route::AltSvcBadCert => "alt-svc bad cert",
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecord => "https rr h3",
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecordHostile => "https rr hostile",
        }
    }

    /// The route lets `s` be served by `s3` (HTTP/3, the same origin).
    pub fn s3_is_s(self) -> bool {
        match self {
            #[cfg(feature = "http3")]
            Route::AltSvc | Route::AltSvcCleared => true,
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecord => true,
            _ => false,
        }
    }

    /// `s` is named `origin.test` (an HTTPS record is looked up only for
    /// a name): another host than the jar's 127.0.0.1.
    pub fn names_s(self) -> bool {
        match self {
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            Route::HttpsRecord | Route::HttpsRecordHostile => true,
            _ => false,
        }
    }

    /// A proxy carries the requests.
    pub fn proxied(self) -> bool {
        matches!(
            self,
            Route::HttpProxy | Route::HttpProxyBypassed | Route::Socks5
        )
    }
}

/// A redirect (or none) the request meets.
pub struct Scenario {
    pub name: &'static str,
    url: fn(&World) -> String,
    /// Follow https -> http (else it is refused, and nothing reaches `a`).
    pub downgrade: bool,
    /// The request ends in a `200` (else in a `redirect` error).
    pub succeeds: bool,
}

pub fn scenarios() -> Vec<Scenario> {
    fn s(name: &'static str, url: fn(&World) -> String) -> Scenario {
        Scenario {
            name,
            url,
            downgrade: false,
            succeeds: true,
        }
    }
    vec![
        s("none", |w| format!("{}/final", w.a())),
        s("same origin", |w| format!("{}/go?to=/final", w.a())),
        s("cross host", |w| format!("{}/go?to={}/final", w.a(), w.b())),
        s("cross port", |w| {
            format!("{}/go?to={}/final", w.a(), w.a2())
        }),
        s("//host", |w| {
            format!("{}/go?to=//localhost:{}/final", w.a(), w.b.port())
        }),
        s("a>b>a", |w| {
            format!("{}/go?to={}/go?to={}/final", w.a(), w.b(), w.a())
        }),
        s("http>https", |w| format!("{}/go?to={}/final", w.a(), w.s())),
        s("https same", |w| format!("{}/go?to=/final", w.s())),
        s("https x-host", |w| {
            format!("{}/go?to={}/final", w.s(), w.sb())
        }),
        Scenario {
            downgrade: true,
            ..s("https>http", |w| format!("{}/go?to={}/final", w.s(), w.a()))
        },
        Scenario {
            succeeds: false,
            ..s("https>http no", |w| {
                format!("{}/go?to={}/final", w.s(), w.a())
            })
        },
    ]
}

impl Scenario {
    pub fn url(&self, world: &World) -> String {
        (self.url)(world)
    }
}

/// Where a place's canary may go, and where it must arrive, given where
/// the request starts (`a` or `s`).
pub fn meant(
    place: Place,
    route: Route,
    first: &'static str,
) -> (Vec<&'static str>, Vec<&'static str>) {
    // A plain http request through a forward proxy is read by the proxy.
    let forward = if first == "a" && matches!(route, Route::HttpProxy | Route::HttpProxyBypassed) {
        vec!["proxy-forward"]
    } else {
        vec![]
    };
    match place {
        // Framing defaults are dropped: they may arrive nowhere.
        Place::DefaultFraming | Place::ServiceFraming => (vec![], vec![]),
        Place::ProxyUrl => match route {
            Route::Socks5 => (vec!["socks5"], vec!["socks5"]),
            _ => (vec!["proxy-forward", "proxy-connect"], vec![]),
        },
        #[cfg(feature = "cookies")]
        Place::Jar => {
            // RFC 6265 §8.5: a cookie is its host's on every port and scheme
            // (it is not Secure); `localhost` is another host.
            let mut allowed = vec!["a", "a2", "s"];
            if matches!(route, Route::HttpProxy | Route::HttpProxyBypassed) {
                allowed.push("proxy-forward");
            }
            (allowed, vec![first])
        }
        _ => {
            let mut allowed = vec![first];
            allowed.extend(forward);
            (allowed, vec![first])
        }
    }
}

/// [`meant`], with `s3` wherever `s` is on a route that serves `s` from
/// it (an alternative valid for the origin is the origin, RFC 7838), and
/// `s` counted as reached when `s3` was.
pub fn meant_on(
    place: Place,
    route: Route,
    first: &'static str,
) -> (Vec<&'static str>, Vec<&'static str>) {
    let (mut allowed, mut required) = meant(place, route, first);
    let jar = {
        #[cfg(feature = "cookies")]
        {
            place == Place::Jar
        }
        #[cfg(not(feature = "cookies"))]
        {
            false
        }
    };
    if jar && route.names_s() {
        // The jar's cookie is 127.0.0.1's; `origin.test` is another host.
        allowed.retain(|e| *e != "s");
        required.retain(|e| *e != "s");
    }
    if route.s3_is_s() && allowed.contains(&"s") {
        allowed.push("s3");
    }
    (allowed, required)
}
