//! Redirects: limits, loops, method rewriting, credentials across origins,
//! downgrade; each through `FollowRedirectLayer` and through a plain
//! `Client`, which follows with the same code by default.

use crate::support::middleware::{reply, scripted, with_header, Scripted};
use crate::support::server;
use courier::http::{HeaderMap, HeaderValue};
use courier::middleware::{RedirectConfig, Redirects, Stack};
use courier::{Client, ClientBuilder, ErrorKind};
use courier_server::{ServerConfig, ServerHandle, TestPki};

/// Who follows: the layer, or the client under an empty stack (a plain
/// `Client`'s own following; `ServiceClient` only to share the tests).
#[derive(Debug, Clone, Copy)]
enum By {
    Layer,
    Client,
}

const BOTH: [By; 2] = [By::Layer, By::Client];

fn following(by: By) -> courier::ServiceClient {
    match by {
        By::Layer => Stack::new()
            .redirect(RedirectConfig::default())
            .client(Client::new()),
        By::Client => Stack::new().client(Client::new()),
    }
}

#[tokio::test]
async fn a_chain_is_followed_and_recorded() {
    let srv = server().await;
    for by in BOTH {
        let client = following(by);
        let res = client.get(srv.url("/redirect/3")).send().await.unwrap();
        assert_eq!(res.status(), 200, "{by:?}");
        let chain = res.extensions().get::<Redirects>().unwrap().clone();
        assert_eq!(chain.chain.len(), 3);
        assert_eq!(
            chain.final_uri().unwrap().to_string(),
            srv.url("/redirect/0")
        );
        assert_eq!(res.url().as_str(), srv.url("/redirect/0"), "{by:?}");
        assert_eq!(res.text().await.unwrap(), "ok");
        // The three redirect bodies were drained: one connection did it all.
        assert_eq!(client.metrics().connections_established, 1, "{by:?}");
    }
}

#[tokio::test]
async fn a_loop_stops_at_the_limit_with_a_clear_error() {
    let srv = server().await;
    let client = Stack::new()
        .redirect(RedirectConfig::default().max_redirects(5))
        .client(Client::new());
    // Redirects to itself forever.
    let looping = scripted(|_| async { with_header(reply(302, ""), "location", "/again") }).await;
    let err = client.get(looping.url("/again")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyRedirects);
    let message = format!("{err:#}");
    assert!(message.contains("stopped after 5 redirects"), "{message}");
    assert!(message.contains("loop"), "{message}");
    assert_eq!(looping.hits(), 6, "the original request and 5 redirects");

    // A long chain that is not a loop hits the same limit.
    let err = client.get(srv.url("/redirect/6")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyRedirects);
    assert!(client.get(srv.url("/redirect/5")).send().await.is_ok());
}

#[tokio::test]
async fn authorization_and_cookies_are_dropped_across_origins() {
    for by in BOTH {
        credentials_stay_with_their_origin(by).await;
    }
}

async fn credentials_stay_with_their_origin(by: By) {
    let target = scripted(|_| async { reply(200, "landed") }).await;
    let target_url = target.url("/landing");
    let origin = scripted(move |req| {
        let target_url = target_url.clone();
        async move {
            match req.uri.path() {
                "/elsewhere" => with_header(reply(302, ""), "location", &target_url),
                "/here" => with_header(reply(307, ""), "location", "/final"),
                _ => reply(200, "same origin"),
            }
        }
    })
    .await;
    let client = following(by);
    let send = |url: String| {
        client
            .get(url)
            .header("authorization", "Bearer secret")
            .header("cookie", "session=1")
            .header("proxy-authorization", "Basic eA==")
            .header("x-request-id", "abc")
            .send()
    };

    let res = send(origin.url("/elsewhere")).await.unwrap();
    assert_eq!(res.text().await.unwrap(), "landed");
    let seen = &target.seen()[0];
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(seen.header("cookie"), None);
    assert_eq!(seen.header("proxy-authorization"), None);
    assert_eq!(seen.header("x-request-id"), Some("abc"));

    // Same origin: kept.
    let res = send(origin.url("/here")).await.unwrap();
    assert_eq!(res.text().await.unwrap(), "same origin");
    let last = origin.seen().last().unwrap().clone();
    assert_eq!(last.uri.path(), "/final");
    assert_eq!(last.header("authorization"), Some("Bearer secret"));
    assert_eq!(last.header("cookie"), Some("session=1"));
}

#[tokio::test]
async fn methods_are_rewritten_per_rfc_9110() {
    for by in BOTH {
        methods_are_rewritten(by).await;
    }
}

async fn methods_are_rewritten(by: By) {
    let srv = scripted(|req| async move {
        let path = req.uri.path().to_owned();
        match path.as_str() {
            "/303" => with_header(reply(303, ""), "location", "/landing"),
            "/302" => with_header(reply(302, ""), "location", "/landing"),
            "/301" => with_header(reply(301, ""), "location", "/landing"),
            "/307" => with_header(reply(307, ""), "location", "/landing"),
            "/308" => with_header(reply(308, ""), "location", "/landing"),
            _ => reply(200, format!("{} {}", req.method, req.body.len())),
        }
    })
    .await;
    let client = following(by);
    let post = |path: &str| {
        client
            .post(srv.url(path))
            .header("content-type", "application/json")
            .body("{\"a\":1}")
            .send()
    };
    for (path, expect) in [
        ("/303", "GET 0"),
        ("/302", "GET 0"),
        ("/301", "GET 0"),
        ("/307", "POST 7"),
        ("/308", "POST 7"),
    ] {
        let res = post(path).await.unwrap();
        assert_eq!(res.text().await.unwrap(), expect, "{path}");
    }
    // The GETs lost the body's headers; the 307/308 POSTs kept them.
    let landings: Vec<_> = srv
        .seen()
        .into_iter()
        .filter(|s| s.uri.path() == "/landing")
        .collect();
    assert_eq!(landings[0].header("content-type"), None);
    assert_eq!(landings[3].header("content-type"), Some("application/json"));

    // PUT on a 302 stays a PUT; HEAD on a 303 stays a HEAD.
    let res = client.put(srv.url("/302")).body("xy").send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "PUT 2");
    let res = client.head(srv.url("/303")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(srv.seen().last().unwrap().method, http::Method::HEAD);
}

/// A plain-HTTP server answering "plain", and an https URL on a TLS server
/// (for `localhost`, signed by the returned PKI's CA) that redirects to it.
async fn https_redirecting_to_plain() -> (Scripted, TestPki, ServerHandle, String) {
    let plain = scripted(|_| async { reply(200, "plain") }).await;
    let pki = TestPki::new();
    let tls = courier_server::start(ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let url = format!(
        "https://localhost:{}/redirect-to/302?{}",
        tls.local_addr().port(),
        plain.url("/x")
    );
    (plain, pki, tls, url)
}

#[tokio::test]
async fn https_to_http_is_refused_unless_allowed() {
    let (plain, pki, _tls, url) = https_redirecting_to_plain().await;
    let inner = || {
        Client::builder()
            .add_root_certificate(pki.ca_pem())
            .build()
            .unwrap()
    };
    let client = Stack::new()
        .redirect(RedirectConfig::default())
        .client(inner());
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Redirect);
    assert!(format!("{err:#}").contains("https to http"), "{err}");
    assert_eq!(plain.hits(), 0);

    let client = Stack::new()
        .redirect(RedirectConfig::default().allow_https_to_http(true))
        .client(inner());
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "plain");
}

#[tokio::test]
async fn with_policy_none_redirects_are_returned() {
    let srv = server().await;
    let client = Client::builder()
        .redirect(courier::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client.get(srv.url("/redirect/1")).send().await.unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/redirect/0");
    assert_eq!(res.url().as_str(), srv.url("/redirect/1"));
    // The default follows (issue 28: a plain `Client` returned the 302).
    let res = Client::new()
        .get(srv.url("/redirect/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.url().path(), "/redirect/0");
}

/// The default headers of the credential tests: a bearer token and a cookie
/// (sensitive), `extra`, then a user agent (not sensitive), in that order.
fn credential_defaults(extra: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut defaults = HeaderMap::new();
    defaults.insert(
        "authorization",
        HeaderValue::from_static("Bearer svc-token"),
    );
    defaults.insert("cookie", HeaderValue::from_static("session=default"));
    for &(name, value) in extra {
        defaults.insert(name, HeaderValue::from_static(value));
    }
    defaults.insert("user-agent", HeaderValue::from_static("billing/1.4"));
    defaults
}

/// A client builder sending `defaults`, over HTTP/2 (prior knowledge) when
/// `http2`, else HTTP/1.1; and the protocol's name for the messages.
fn sending(defaults: &HeaderMap, http2: bool) -> (ClientBuilder, &'static str) {
    let builder = Client::builder().default_headers(defaults.clone());
    if http2 {
        (builder.http2_prior_knowledge(), "HTTP/2")
    } else {
        (builder, "HTTP/1.1")
    }
}

/// Issue 27: the client's default headers are added when the request is
/// written, below the redirect layer; a default `Authorization` (or any
/// header the policy calls sensitive) must still stay with the origin it
/// was sent to, over HTTP/1.1 and HTTP/2, from a plain `Client` and from a
/// factory's cluster pool alike (both write defaults at the bottom).
#[tokio::test]
async fn default_credentials_are_dropped_across_origins() {
    use crate::support::middleware::headers_json;
    use courier::http::HeaderName;

    let first = server().await;
    let other = server().await;
    let defaults = credential_defaults(&[("x-api-key", "key-1")]);
    let policy = RedirectConfig::default();
    let mut names = policy.sensitive_headers.clone();
    names.push(HeaderName::from_static("x-api-key"));
    let policy = policy.sensitive_headers(names);
    for http2 in [false, true] {
        let (builder, protocol) = sending(&defaults, http2);
        let client = Stack::new()
            .redirect(policy.clone())
            .client(builder.build().unwrap());
        // Another origin (another port): none of the sensitive defaults.
        let away = first.url(&format!("/redirect-to/302?{}", other.url("/headers")));
        let seen = headers_json(client.get(away).send().await.unwrap()).await;
        for name in ["authorization", "cookie", "x-api-key"] {
            assert_eq!(seen.get(name), None, "{protocol}: {name} crossed: {seen:?}");
        }
        assert_eq!(seen["user-agent"], "billing/1.4", "{protocol}: {seen:?}");
        // The same origin: all of them.
        let here = first.url("/redirect-to/302?/headers");
        let seen = headers_json(client.get(here).send().await.unwrap()).await;
        assert_eq!(seen["authorization"], "Bearer svc-token", "{protocol}");
        assert_eq!(seen["x-api-key"], "key-1", "{protocol}");
        // There and back (A -> B -> A): once dropped, they stay dropped, as
        // reqwest does (the request continues without them).
        let back = other.url(&format!("/redirect-to/302?{}", first.url("/headers")));
        // The query is the Location verbatim, so a chain nests unescaped.
        let round = first.url(&format!("/redirect-to/302?{back}"));
        let res = client.get(round).send().await.unwrap();
        let seen = headers_json(res).await;
        assert_eq!(seen.get("authorization"), None, "{protocol}: {seen:?}");
    }
}

/// Issue 28: a plain `Client` follows with the layer's rules: its default
/// credentials stay with their origin, over HTTP/1.1 and HTTP/2.
#[tokio::test]
async fn a_plain_client_keeps_default_credentials_with_their_origin() {
    use crate::support::middleware::headers_json;

    let first = server().await;
    let other = server().await;
    let defaults = credential_defaults(&[]);
    for http2 in [false, true] {
        let (builder, protocol) = sending(&defaults, http2);
        let client = builder.build().unwrap();
        let away = first.url(&format!("/redirect-to/302?{}", other.url("/headers")));
        let res = client
            .get(away)
            .header("proxy-authorization", "Basic eA==")
            .send()
            .await
            .unwrap();
        assert_eq!(res.url().as_str(), other.url("/headers"), "{protocol}");
        let seen = headers_json(res).await;
        for name in ["authorization", "cookie", "proxy-authorization"] {
            assert_eq!(seen.get(name), None, "{protocol}: {name} crossed: {seen:?}");
        }
        assert_eq!(seen["user-agent"], "billing/1.4", "{protocol}: {seen:?}");
        // The same origin: all of them.
        let here = first.url("/redirect-to/302?/headers");
        let seen = headers_json(client.get(here).send().await.unwrap()).await;
        assert_eq!(seen["authorization"], "Bearer svc-token", "{protocol}");
        assert_eq!(seen["cookie"], "session=default", "{protocol}");
    }
}

#[tokio::test]
async fn a_plain_client_refuses_https_to_http() {
    let (plain, pki, _tls, url) = https_redirecting_to_plain().await;
    let client = Client::builder()
        .add_root_certificate(pki.ca_pem())
        .build()
        .unwrap();
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Redirect);
    assert!(format!("{err:#}").contains("https to http"), "{err}");
    assert_eq!(plain.hits(), 0);
}

/// One follower per request: a stack's redirect layer over a client that
/// follows by itself turns the client's following off for the requests
/// it sends, so its own limit holds (the client's, 10, would have hidden
/// it) and no redirect is followed twice.
#[tokio::test]
async fn a_redirect_layer_over_a_client_is_the_only_follower() {
    let srv = scripted(|req| async move {
        match req.uri.path() {
            "/a" => with_header(reply(302, ""), "location", "/b"),
            "/b" => with_header(reply(302, ""), "location", "/c"),
            _ => reply(200, "c"),
        }
    })
    .await;
    let client = Stack::new()
        .redirect(RedirectConfig::default().max_redirects(1))
        .client(Client::new());
    let err = client.get(srv.url("/a")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyRedirects, "{err:#}");
    assert_eq!(srv.hits(), 2, "/a and /b, never /c");

    // Followed by the layer, hop by hop through the stack: one chain.
    let client = Stack::new().redirect(RedirectConfig::default()).client(
        Client::builder()
            .redirect(courier::redirect::Policy::none())
            .build()
            .unwrap(),
    );
    let res = client.get(srv.url("/a")).send().await.unwrap();
    assert_eq!(res.extensions().get::<Redirects>().unwrap().chain.len(), 2);
    assert_eq!(res.text().await.unwrap(), "c");
    assert_eq!(srv.hits(), 5);
}

#[tokio::test]
async fn a_plain_client_stops_at_its_limit_and_asks_a_custom_policy() {
    use courier::redirect::Policy;
    let looping = scripted(|_| async { with_header(reply(302, ""), "location", "/again") }).await;
    let err = Client::new()
        .get(looping.url("/again"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyRedirects);
    assert_eq!(looping.hits(), 11, "the original request and 10 redirects");

    let srv = server().await;
    let limited = Client::builder()
        .redirect(Policy::limited(2))
        .build()
        .unwrap();
    let err = limited
        .get(srv.url("/redirect/3"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyRedirects);
    assert!(limited.get(srv.url("/redirect/2")).send().await.is_ok());

    // A custom policy sees each hop: stop at the second, fail on a path.
    let stop = Client::builder()
        .redirect(Policy::custom(|attempt| {
            assert_eq!(attempt.status(), 302);
            if attempt.previous().len() >= 2 {
                attempt.stop()
            } else {
                attempt.follow()
            }
        }))
        .build()
        .unwrap();
    let res = stop.get(srv.url("/redirect/5")).send().await.unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.url().path(), "/redirect/4");
    let refuse = Client::builder()
        .redirect(Policy::custom(|attempt| {
            if attempt.url().path() == "/redirect/1" {
                attempt.error("not there")
            } else {
                attempt.follow()
            }
        }))
        .build()
        .unwrap();
    let err = refuse.get(srv.url("/redirect/3")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Redirect);
    assert!(format!("{err:#}").contains("not there"), "{err:#}");
}

/// Issue 28: Locations the WHATWG rules read (a space, non-ASCII text, a
/// tab inside) are followed to the well-formed target they mean; the
/// bytes on the wire are that target, percent-encoded.
#[tokio::test]
async fn whatwg_locations_are_followed_percent_encoded() {
    let srv = scripted(|req| async move {
        match req.uri.path() {
            "/space" => with_header(reply(302, ""), "location", "/a b?q=c d"),
            "/tab" => with_header(reply(302, ""), "location", "/go\tod"),
            "/utf8" => {
                let mut res = reply(302, "");
                res.headers_mut().insert(
                    "location",
                    http::HeaderValue::from_bytes("/g\u{f6}d".as_bytes()).unwrap(),
                );
                res
            }
            other => reply(200, other.to_owned()),
        }
    })
    .await;
    let client = Client::new();
    for (from, path, target) in [
        ("/space", "/a%20b", "/a%20b?q=c%20d"),
        ("/tab", "/good", "/good"),
        ("/utf8", "/g%C3%B6d", "/g%C3%B6d"),
    ] {
        let res = client.get(srv.url(from)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{from}");
        assert_eq!(res.url().path(), path, "{from}");
        assert_eq!(res.text().await.unwrap(), path, "{from}");
        let seen = srv.seen().last().unwrap().clone();
        assert_eq!(seen.uri.to_string(), target, "{from}");
    }
}
