//! The secrets check (issue 27): a canary credential in every place a
//! caller can put one, sent through every redirect and every proxy route,
//! and the record of every endpoint it reached. A canary may reach the
//! origin it was meant for (and the forward proxy that carries a plain
//! `http` request to it), a proxy's credentials the proxy, a jar's cookie
//! the hosts RFC 6265 gives it to (every port of its host); anything else
//! is a leak. A canary that never reached where it was meant fails too:
//! the check must be able to see the credential it looks for.
//!
//! Two kinds of header travel the same matrix: the request's own `Host`
//! (a virtual host, sent to the first origin, as `:authority` over HTTP/2
//! and HTTP/3, and to no other),
//! and a careless caller's framing defaults (`Host`, `Content-Length`,
//! `Transfer-Encoding` among a client's or a service client's default
//! headers), which must reach no endpoint at all: a default length would
//! misframe every body it is not the size of.
//!
//! `cargo test -p courier-http --test it corpus::secrets -- --nocapture` prints
//! the matrix (place × route × redirect: where the canary arrived); with
//! `--features cookies` the jar's row is in it.

#[cfg(feature = "http3")]
mod alternatives;
mod endpoints;
mod matrix;

use std::net::SocketAddr;
use std::time::Duration;

use courier::http::{HeaderMap, HeaderName, HeaderValue};
use courier::middleware::{RedirectConfig, Stack};
use courier::{Client, ErrorKind, Proxy, ServiceClient};

use super::tls;
use endpoints::{Log, Offer, Tasks};
use matrix::{meant_on, scenarios, Place, Route, Scenario};

/// Each request's bound (the servers are on loopback).
const TIMEOUT: Duration = Duration::from_secs(5);

/// The endpoints, by the names they record under.
struct World {
    log: Log,
    _tasks: Tasks,
    /// `http://127.0.0.1`: where every http scenario starts.
    a: SocketAddr,
    /// `http://127.0.0.1`, another port.
    a2: SocketAddr,
    /// `http://localhost`: another host.
    b: SocketAddr,
    /// `https://127.0.0.1` (HTTP/2): where every https scenario starts.
    s: SocketAddr,
    /// `https://localhost` (HTTP/2).
    sb: SocketAddr,
    proxy: SocketAddr,
    socks: SocketAddr,
    /// The `Alt-Svc` the origins send on `/learn`.
    #[cfg_attr(not(feature = "http3"), allow(dead_code))]
    offer: Offer,
    /// `s` is named `origin.test` (the HTTPS-record routes).
    named: std::sync::atomic::AtomicBool,
    /// HTTP/3 alternatives (`alternatives.rs`): `s`'s own, another host's, and one
    /// whose certificate is not valid for `s`.
    #[cfg(feature = "http3")]
    s3: SocketAddr,
    #[cfg(feature = "http3")]
    x3: SocketAddr,
    #[cfg(feature = "http3")]
    bad3: SocketAddr,
    /// The HTTPS records `origin.test` has in this run, and their server.
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    records: alternatives::dns::Records,
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    dns: crate::support::nameserver::Nameserver,
}

impl World {
    async fn start() -> World {
        let log = Log::default();
        let tasks = Tasks::default();
        let offer = Offer::default();
        #[cfg(all(feature = "http3", feature = "dns-srv"))]
        let records = alternatives::dns::Records::default();
        World {
            a: endpoints::origin("a", false, &log, &tasks, &offer).await,
            a2: endpoints::origin("a2", false, &log, &tasks, &offer).await,
            b: endpoints::origin("b", false, &log, &tasks, &offer).await,
            s: endpoints::origin("s", true, &log, &tasks, &offer).await,
            sb: endpoints::origin("sb", true, &log, &tasks, &offer).await,
            proxy: endpoints::http_proxy(&log, &tasks).await,
            socks: endpoints::socks5(&log, &tasks).await,
            #[cfg(feature = "http3")]
            s3: alternatives::h3_origin("s3", &alternatives::origin_cert(), &log, &tasks, &offer),
            #[cfg(feature = "http3")]
            x3: alternatives::h3_origin("x3", &alternatives::origin_cert(), &log, &tasks, &offer),
            #[cfg(feature = "http3")]
            bad3: alternatives::h3_origin("bad3", alternatives::other_cert(), &log, &tasks, &offer),
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            dns: alternatives::dns::start(&records).await,
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            records,
            named: Default::default(),
            offer,
            log,
            _tasks: tasks,
        }
    }

    fn a(&self) -> String {
        format!("http://127.0.0.1:{}", self.a.port())
    }
    fn a2(&self) -> String {
        format!("http://127.0.0.1:{}", self.a2.port())
    }
    fn b(&self) -> String {
        format!("http://localhost:{}", self.b.port())
    }
    fn s(&self) -> String {
        if self.named.load(std::sync::atomic::Ordering::Relaxed) {
            return format!("https://origin.test:{}", self.s.port());
        }
        format!("https://127.0.0.1:{}", self.s.port())
    }
    fn sb(&self) -> String {
        format!("https://localhost:{}", self.sb.port())
    }
}

/// Base64 (RFC 4648, padded): how Basic credentials travel.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The `Content-Length` a careless caller's defaults claim: no request of
/// the check has a body that long.
const FRAMING_LENGTH: u32 = 7919;

/// A careless caller's default headers: its own virtual host and framing
/// for every request, whatever its body or origin.
fn framing(host: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::try_from(host).unwrap());
    headers.insert("content-length", HeaderValue::from(FRAMING_LENGTH));
    headers.insert("transfer-encoding", HeaderValue::from_static("chunked"));
    headers
}

/// One run's canary: unique, so a record of another run cannot match.
fn canary(place: Place, route: Route, scenario: &str) -> String {
    let tag: String = format!("{}-{}-{scenario}", place.name(), route.name())
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("CANARY{tag}{:08x}", fastrand::u32(..))
}

/// The proxy `route` goes through, with `password` in its URL.
fn proxy_for(route: Route, world: &World, password: &str) -> Option<Proxy> {
    let http = format!("http://puser:{password}@{}", world.proxy);
    match route {
        Route::HttpProxy => Some(Proxy::all(&http).unwrap()),
        Route::HttpProxyBypassed => Some(Proxy::all(&http).unwrap().no_proxy("localhost")),
        Route::Socks5 => {
            Some(Proxy::all(&format!("socks5h://suser:{password}@{}", world.socks)).unwrap())
        }
        _ => None,
    }
}

/// The HTTP/3 discovery of `route`: the client's settings, the run's offer
/// and records (the origins' state; runs are one at a time).
#[cfg(feature = "http3")]
fn discovery(
    route: Route,
    world: &World,
    builder: courier::ClientBuilder,
) -> courier::ClientBuilder {
    use std::sync::atomic::Ordering::Relaxed;
    world.offer.set(None);
    world.named.store(false, Relaxed);
    #[cfg(feature = "dns-srv")]
    world.records.lock().unwrap().clear();
    let offer = match route {
        Route::AltSvc | Route::AltSvcCleared => format!("h3=\":{}\"", world.s3.port()),
        Route::AltSvcOtherHost => format!("h3=\"localhost:{}\"", world.x3.port()),
        Route::AltSvcBadCert => format!("h3=\":{}\"", world.bad3.port()),
        #[cfg(feature = "dns-srv")]
        Route::HttpsRecord | Route::HttpsRecordHostile => {
            use crate::corpus::dns::{alpn, https, ipv4hint, port};
            let records = if route == Route::HttpsRecord {
                vec![https(1, ".", vec![alpn(&["h3"]), port(world.s3.port())])]
            } else {
                vec![
                    https(1, "localhost.", vec![alpn(&["h3"]), port(world.x3.port())]),
                    https(
                        2,
                        ".",
                        vec![
                            alpn(&["h3"]),
                            port(world.bad3.port()),
                            ipv4hint([127, 0, 0, 2]),
                        ],
                    ),
                ]
            };
            *world.records.lock().unwrap() = records;
            world.named.store(true, Relaxed);
            return builder
                .resolve("origin.test", ([127, 0, 0, 1], 0).into())
                .http3_https_records(true)
                .http3_https_records_nameserver(world.dns.addr)
                .http3_head_start(TIMEOUT / 2)
                .add_root_certificate(&alternatives::other_cert().pem);
        }
        _ => return builder,
    };
    world.offer.set(Some(offer));
    builder
        .http3_alt_svc(true)
        .http3_head_start(TIMEOUT / 2)
        .add_root_certificate(&alternatives::other_cert().pem)
}

/// What the client must have learnt before the request: `s`'s offer (and,
/// for the cleared route, its `clear`), by requests that carry nothing the
/// run looks for but what the client adds itself.
#[cfg(feature = "http3")]
async fn warm_up(route: Route, world: &World, client: &Client) {
    let paths: &[&str] = match route {
        Route::AltSvc | Route::AltSvcOtherHost | Route::AltSvcBadCert => &["/learn"],
        Route::AltSvcCleared => &["/learn", "/clear"],
        _ => &[],
    };
    for path in paths {
        let url = format!("{}{path}", world.s());
        let res = tokio::time::timeout(TIMEOUT, async {
            client.get(&url).send().await?.bytes().await
        })
        .await;
        assert!(matches!(res, Ok(Ok(_))), "warm-up {url}: {res:?}");
    }
}

/// The outcome of one run, as a matrix cell and a verdict.
struct Cell {
    text: String,
    failure: Option<String>,
}

/// Who follows the redirects: `FollowRedirectLayer` in a stack, or a plain
/// `Client` by itself (issue 28: the same code, by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follower {
    Layer,
    Client,
}

impl Follower {
    /// Whether this follower has a run for `place` and `scenario`: a plain
    /// client has reqwest's fixed list of sensitive headers (no
    /// `x-api-key`), no downgrade knob, and no jar.
    fn runs(self, place: Place, scenario: &Scenario) -> bool {
        match self {
            Follower::Layer => true,
            Follower::Client => {
                #[cfg(feature = "cookies")]
                if place == Place::Jar {
                    return false;
                }
                place != Place::DefaultCustom && !scenario.downgrade
            }
        }
    }
}

async fn run(
    world: &World,
    place: Place,
    route: Route,
    scenario: &Scenario,
    follower: Follower,
) -> Cell {
    let canary = canary(place, route, scenario.name);
    let proxy_password = if place == Place::ProxyUrl {
        canary.clone()
    } else {
        "not-a-canary".to_owned()
    };
    // A host name of this run's own, for the `Host` places.
    let host = format!("c{:08x}.invalid", fastrand::u32(..));
    // What travels: Basic credentials in base64, a `Host` as it is; the
    // framing defaults as header lines no request of this run has.
    let needles = match (place, route) {
        (Place::BasicAuth, _) => vec![base64(format!("user:{canary}").as_bytes())],
        (Place::ProxyUrl, Route::Socks5) => vec![canary.clone()],
        (Place::ProxyUrl, _) => vec![base64(format!("puser:{canary}").as_bytes())],
        (Place::RequestHost, _) => vec![host.clone()],
        (Place::DefaultFraming | Place::ServiceFraming, _) => vec![
            host.clone(),
            format!("content-length: {FRAMING_LENGTH}"),
            "transfer-encoding".to_owned(),
        ],
        _ => vec![canary.clone()],
    };
    let mut builder = Client::builder()
        .no_env_proxy()
        .timeout(TIMEOUT)
        .tls_built_in_root_certs(false)
        .add_root_certificate(tls::root_pem());
    if let Some(proxy) = proxy_for(route, world, &proxy_password) {
        builder = builder.proxy(proxy);
    }
    #[cfg(feature = "http3")]
    {
        builder = discovery(route, world, builder);
    }
    let mut defaults = HeaderMap::new();
    let bearer = HeaderValue::try_from(format!("Bearer {canary}")).unwrap();
    match place {
        Place::DefaultAuthorization => {
            defaults.insert("authorization", bearer.clone());
        }
        Place::DefaultCookie => {
            defaults.insert(
                "cookie",
                HeaderValue::try_from(format!("c={canary}")).unwrap(),
            );
        }
        Place::DefaultCustom => {
            defaults.insert("x-api-key", HeaderValue::try_from(&canary).unwrap());
        }
        Place::DefaultFraming => defaults = framing(&host),
        _ => {}
    }
    let client = builder.default_headers(defaults).build().unwrap();
    let mut sensitive = RedirectConfig::default().sensitive_headers;
    sensitive.push(HeaderName::from_static("x-api-key"));
    let policy = RedirectConfig::default()
        .sensitive_headers(sensitive)
        .allow_https_to_http(scenario.downgrade);
    #[allow(unused_mut)]
    let mut stack = match follower {
        Follower::Layer => Stack::new().redirect(policy),
        Follower::Client => Stack::new(),
    };
    #[cfg(feature = "cookies")]
    if place == Place::Jar {
        let jar = std::sync::Arc::new(courier::middleware::CookieJar::new());
        jar.add(&format!("c={canary}; Path=/"), &world.a().parse().unwrap());
        stack = stack.cookies(jar);
    }
    let plain = client.clone();
    #[cfg(feature = "http3")]
    warm_up(route, world, &plain).await;
    let mut service: ServiceClient = stack.client(client);
    match place {
        Place::ServiceDefault => {
            let mut headers = HeaderMap::new();
            headers.insert("authorization", bearer);
            service = service.with_default_headers(headers);
        }
        Place::ServiceFraming => service = service.with_default_headers(framing(&host)),
        _ => {}
    }
    // The credential on the request, whichever builder it is.
    macro_rules! with_credential {
        ($request:expr) => {
            match place {
                Place::RequestHeader => {
                    $request.header("authorization", format!("Bearer {canary}"))
                }
                Place::RequestCookie => $request.header("cookie", format!("c={canary}")),
                Place::BasicAuth => $request.basic_auth("user", Some(&canary)),
                Place::BearerAuth => $request.bearer_auth(&canary),
                Place::RequestHost => $request.header("host", &host),
                _ => $request,
            }
        };
    }
    // Before the request: a plain `Client`'s `send` starts at once (a
    // connection at hand, or the dial), and what it reaches must be seen.
    world.log.clear();
    // A plain `Client` sends by itself unless the credential is a
    // `ServiceClient`'s (whose empty stack then leaves following to it).
    let service_place = matches!(place, Place::ServiceDefault | Place::ServiceFraming);
    let send: futures_util::future::BoxFuture<'_, Result<courier::Response, courier::Error>> =
        if follower == Follower::Client && !service_place {
            Box::pin(with_credential!(plain.get(scenario.url(world))).send())
        } else {
            Box::pin(with_credential!(service.get(scenario.url(world))).send())
        };
    let outcome = tokio::time::timeout(TIMEOUT * 2, async {
        let res = send.await?;
        let status = res.status().as_u16();
        res.bytes().await?;
        Ok::<u16, courier::Error>(status)
    })
    .await;
    drop(service);
    drop(plain);

    let first = if scenario.url(world).starts_with("https") {
        "s"
    } else {
        "a"
    };
    let (allowed, required) = meant_on(place, route, first);
    let mut seen = Vec::new();
    for needle in &needles {
        for endpoint in world.log.who_saw(needle) {
            if !seen.contains(&endpoint) {
                seen.push(endpoint);
            }
        }
    }
    let mut problems = Vec::new();
    match (&outcome, scenario.succeeds) {
        (Ok(Ok(200)), true) => {}
        (Ok(Err(e)), false) if e.kind() == ErrorKind::Redirect => {
            if world.log.requests("a") > 0 {
                problems.push("the refused downgrade reached a".to_owned());
            }
        }
        (Ok(Ok(status)), _) => problems.push(format!("status {status}")),
        (Ok(Err(e)), _) => problems.push(format!("error {e}")),
        (Err(_), _) => problems.push("no answer in time".to_owned()),
    }
    let leaked: Vec<&str> = seen
        .iter()
        .copied()
        .filter(|e| !allowed.contains(e))
        .collect();
    if !leaked.is_empty() {
        problems.push(format!("LEAK to {}", leaked.join(",")));
    }
    // `s` is reached when `s3`, its alternative, was (where `s3` is `s`).
    let reached = |e: &str| {
        seen.contains(&e) || (e == "s" && allowed.contains(&"s3") && seen.contains(&"s3"))
    };
    let missing: Vec<&str> = required.iter().copied().filter(|e| !reached(e)).collect();
    if !missing.is_empty() || (place == Place::ProxyUrl && seen.is_empty()) {
        problems.push(format!("never reached {}", missing.join(",")));
    }
    let arrived = if seen.is_empty() {
        "-".to_owned()
    } else {
        seen.iter().map(|e| short(e)).collect::<Vec<_>>().join("+")
    };
    let text = if !leaked.is_empty() {
        format!("LEAK:{arrived}")
    } else if problems.is_empty() {
        arrived
    } else {
        format!("FAIL:{arrived}")
    };
    Cell {
        text,
        failure: (!problems.is_empty()).then(|| {
            format!(
                "{} / {} / {}: {} (arrived at {:?})",
                place.name(),
                route.name(),
                scenario.name,
                problems.join("; "),
                seen
            )
        }),
    }
}

fn short(endpoint: &str) -> &str {
    match endpoint {
        "proxy-forward" => "fwd",
        "proxy-connect" => "conn",
        "socks5" => "socks",
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canaries_reach_only_where_they_were_meant() {
    matrix_of(Follower::Layer).await;
}

/// Issue 28: the same matrix with the redirects followed by a plain
/// `Client` (its default policy), no middleware.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canaries_reach_only_where_they_were_meant_through_a_plain_client() {
    matrix_of(Follower::Client).await;
}

async fn matrix_of(follower: Follower) {
    let world = World::start().await;
    let scenarios = scenarios();
    let width = 13;
    let mut table = String::new();
    table.push_str(&format!("{:<22} {:<18}", "place", "route"));
    for s in &scenarios {
        table.push_str(&format!(" {:<width$}", s.name));
    }
    table.push('\n');
    let mut failures = Vec::new();
    let mut runs = 0;
    for place in Place::all() {
        for route in Route::all() {
            table.push_str(&format!("{:<22} {:<18}", place.name(), route.name()));
            for scenario in &scenarios {
                let cell = if (place == Place::ProxyUrl && !route.proxied())
                    || !follower.runs(place, scenario)
                {
                    Cell {
                        text: "n/a".into(),
                        failure: None,
                    }
                } else {
                    runs += 1;
                    run(&world, place, route, scenario, follower).await
                };
                table.push_str(&format!(" {:<width$}", cell.text));
                failures.extend(cell.failure);
            }
            table.push('\n');
        }
    }
    println!(
        "secrets check ({follower:?} follows): {runs} runs; a cell says where the canary arrived (a, a2 = 127.0.0.1 \
         on two ports, b = localhost, all http; s = https://127.0.0.1, sb = https://localhost, \
         HTTP/2; fwd, conn = the HTTP proxy's forwarded requests and CONNECTs; socks; \
         s3 = s's HTTP/3 alternative, x3 = one on another host, bad3 = one whose \
         certificate is not s's, all HTTP/3); \
         LEAK = somewhere it was not meant, FAIL = never where it was meant or a wrong outcome\n{table}"
    );
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
