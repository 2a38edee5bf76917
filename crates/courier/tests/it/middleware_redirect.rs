//! Redirects: limits, loops, method rewriting, credentials across origins, downgrade.

use crate::support::middleware::{reply, scripted, with_header};
use crate::support::server;
use courier::middleware::{RedirectConfig, Redirects, Stack};
use courier::{Client, ErrorKind};
use courier_server::{ServerConfig, TestPki};

fn following() -> courier::ServiceClient {
    Stack::new()
        .redirect(RedirectConfig::default())
        .client(Client::new())
}

#[tokio::test]
async fn a_chain_is_followed_and_recorded() {
    let srv = server().await;
    let client = following();
    let res = client.get(srv.url("/redirect/3")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let chain = res.extensions().get::<Redirects>().unwrap().clone();
    assert_eq!(chain.chain.len(), 3);
    assert_eq!(
        chain.final_uri().unwrap().to_string(),
        srv.url("/redirect/0")
    );
    assert_eq!(res.text().await.unwrap(), "ok");
    // The three redirect bodies were drained: one connection did it all.
    assert_eq!(client.metrics().connections_established, 1);
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
    let client = following();
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
    let client = following();
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

#[tokio::test]
async fn https_to_http_is_refused_unless_allowed() {
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
async fn without_the_layer_redirects_are_returned() {
    let srv = server().await;
    let res = Client::new()
        .get(srv.url("/redirect/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/redirect/0");
}

/// Issue 27: the client's default headers are added when the request is
/// written, below the redirect layer; a default `Authorization` (or any
/// header the policy calls sensitive) must still stay with the origin it
/// was sent to, over HTTP/1.1 and HTTP/2, from a plain `Client` and from a
/// factory's cluster pool alike (both write defaults at the bottom).
#[tokio::test]
async fn default_credentials_are_dropped_across_origins() {
    use crate::support::middleware::headers_json;
    use courier::http::{HeaderMap, HeaderName, HeaderValue};

    let first = server().await;
    let other = server().await;
    let mut defaults = HeaderMap::new();
    defaults.insert(
        "authorization",
        HeaderValue::from_static("Bearer svc-token"),
    );
    defaults.insert("cookie", HeaderValue::from_static("session=default"));
    defaults.insert("x-api-key", HeaderValue::from_static("key-1"));
    defaults.insert("user-agent", HeaderValue::from_static("billing/1.4"));
    let policy = RedirectConfig::default();
    let mut names = policy.sensitive_headers.clone();
    names.push(HeaderName::from_static("x-api-key"));
    let policy = policy.sensitive_headers(names);
    for http2 in [false, true] {
        let protocol = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        let mut builder = Client::builder().default_headers(defaults.clone());
        if http2 {
            builder = builder.http2_prior_knowledge();
        }
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
