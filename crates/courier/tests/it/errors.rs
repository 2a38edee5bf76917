//! courier's `Error` as reqwest users and error reporters (anyhow, eyre)
//! expect it, on real failures: `Display` says what went wrong and not its
//! cause (the `source()` chain has it, and a reporter prints both), `{:#}`
//! prints the whole chain, printed URLs carry no credentials, and the
//! predicates classify each failure.

use std::error::Error as _;
use std::time::Duration;

use courier::middleware::{RedirectConfig, Stack};
use courier::{Client, ErrorKind};

use crate::support::server;

/// What anyhow's `{:#}` and eyre's reports print: the error, then each source.
fn reported(e: &courier::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A port nothing listens on (bound, then closed).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_reporter_prints_a_refused_connections_cause_once() {
    let port = dead_port();
    let err = Client::new()
        .get(format!("http://127.0.0.1:{port}/x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect);
    let io = err
        .source()
        .expect("the OS's error is the source")
        .to_string();
    assert!(
        !err.to_string().contains(&io),
        "Display has no cause: {err}"
    );
    let report = reported(&err);
    assert_eq!(report.matches(&io).count(), 1, "{report}");
    // `{:#}` is the same chain, for code without a reporter.
    assert_eq!(format!("{err:#}"), report);
    assert!(err.is_connect() && err.is_request() && !err.is_timeout());
}

#[tokio::test]
async fn printed_errors_carry_no_credentials_but_url_has_them() {
    let port = dead_port();
    let url = format!("http://user:pa55word@127.0.0.1:{port}/p?api_key=t0ken");
    let err = Client::new().get(&url).send().await.unwrap_err();
    for text in [err.to_string(), format!("{err:#}"), format!("{err:?}")] {
        assert!(!text.contains("pa55word"), "{text}");
        assert!(!text.contains("t0ken"), "{text}");
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    }
    assert!(err.url().is_some());
    let err = err.without_url();
    assert!(err.url().is_none());
    assert!(!format!("{err:#}").contains("127.0.0.1"), "{err:#}");
}

#[tokio::test]
async fn a_status_error_has_its_status_and_no_query_in_its_text() {
    let srv = server().await;
    let url = srv.url("/status/404?token=t0ken");
    let res = Client::new().get(&url).send().await.unwrap();
    let err = res.error_for_status_ref().unwrap_err();
    assert!(err.is_status() && !err.is_request() && !err.is_body());
    assert_eq!(err.status(), Some(http::StatusCode::NOT_FOUND));
    assert_eq!(err.url().unwrap().query(), Some("token=t0ken"));
    assert!(!format!("{err:#}").contains("t0ken"), "{err:#}");
    assert!(err.to_string().contains("404"), "{err}");
    // A 2xx is no error; a 5xx is.
    let ok = Client::new()
        .get(srv.url("/status/204"))
        .send()
        .await
        .unwrap();
    assert!(ok.error_for_status().is_ok());
    let res = Client::new()
        .get(srv.url("/status/502"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.error_for_status().unwrap_err().status(),
        Some(http::StatusCode::BAD_GATEWAY)
    );
}

#[tokio::test]
async fn body_decode_timeout_redirect_and_builder_errors_say_so() {
    let srv = server().await;
    let client = Client::new();

    // The server closes the connection mid-body.
    let res = client.get(srv.url("/fault/close-mid-body")).send().await;
    let err = match res {
        Ok(res) => res.bytes().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(err.is_body(), "{err:#}");

    // A body that is not JSON.
    let res = client.get(srv.url("/bytes/8")).send().await.unwrap();
    let err = res.json::<serde_json::Value>().await.unwrap_err();
    assert!(err.is_decode() && !err.is_body(), "{err:#}");
    assert!(err.source().is_some(), "serde_json's error is the cause");

    // No answer within the request's timeout.
    let err = client
        .get(srv.url("/delay/5000"))
        .timeout(Duration::from_millis(50))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:#}");

    // A redirect chain past the limit.
    let redirecting = Stack::new()
        .redirect(RedirectConfig::default().max_redirects(1))
        .client(client.clone());
    let err = redirecting
        .get(srv.url("/redirect/3"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_redirect() && !err.is_request(), "{err:#}");

    // A header that cannot be sent: nothing went out.
    let err = client
        .get(srv.url("/bytes/1"))
        .header("x-bad", "a\nb")
        .send()
        .await
        .unwrap_err();
    assert!(err.is_builder() && !err.is_request(), "{err:#}");
    let err = client.get("not a url").send().await.unwrap_err();
    assert!(err.is_builder(), "{err:#}");
}
