use super::*;

#[test]
fn timeouts_are_timeouts() {
    assert!(Error::msg(ErrorKind::Timeout, "x").is_timeout());
    assert!(Error::msg(ErrorKind::PoolQueueTimeout, "x").is_timeout());
    assert!(Error::msg(ErrorKind::ConnectTimeout, "x").is_timeout());
    assert!(!Error::msg(ErrorKind::Connect, "x").is_timeout());
}

#[test]
fn source_is_chained_not_displayed() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let e = Error::new(ErrorKind::Connect, io);
    assert!(e.source().unwrap().is::<std::io::Error>());
    assert_eq!(e.to_string(), "connection failed");
    assert_eq!(format!("{e:#}"), "connection failed: refused");
    assert!(e.is_connect());
}

/// What anyhow's and eyre's reports do: the error's `Display`, then each
/// source's. Each part of the chain must appear once.
fn report(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn a_reporter_prints_each_cause_once() {
    let url: http::Uri = "http://h.example/x".parse().unwrap();
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let inner = Error::new(ErrorKind::Connect, io).or_url(|| url.clone());
    let outer = Error::new(ErrorKind::Body, inner);
    let want = "error reading response body: connection failed (http://h.example/x): refused";
    assert_eq!(report(&outer), want);
    assert_eq!(report(&outer).matches("refused").count(), 1);
    // The alternate form prints the same chain without a reporter.
    assert_eq!(format!("{outer:#}"), want);
    assert_eq!(outer.to_string(), "error reading response body");
    // A message is the error's own words: printed in both forms.
    let e = Error::msg(ErrorKind::Protocol, "bad status line");
    assert_eq!(e.to_string(), "HTTP protocol error: bad status line");
    assert_eq!(format!("{e:#}"), "HTTP protocol error: bad status line");
    // One that repeats the kind's words is said once.
    let e = Error::msg(
        ErrorKind::ConnectionClosed,
        "connection closed before the response",
    );
    assert_eq!(e.to_string(), "connection closed before the response");
}

#[test]
fn a_config_error_says_what_is_wrong_in_its_display() {
    let e = config_error("clients.a.base_url: no scheme".to_owned());
    assert_eq!(
        e.to_string(),
        "invalid configuration: clients.a.base_url: no scheme"
    );
    assert!(e.source().is_none());
    assert!(e.is_builder());
}

#[test]
fn a_status_error_names_status_and_url() {
    let url: http::Uri = "http://h.example/x?y=1".parse().unwrap();
    let e = Error::from_status(http::StatusCode::SERVICE_UNAVAILABLE, &url);
    assert_eq!(e.kind(), ErrorKind::Status);
    assert!(e.is_status());
    assert_eq!(e.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(
        e.to_string(),
        "HTTP status 503 Service Unavailable (http://h.example/x)"
    );
    assert_eq!(e.url(), Some(&url));
    let e = Error::msg(ErrorKind::Connect, "refused").or_url(|| url.clone());
    assert_eq!(e.url(), Some(&url));
    assert!(e.to_string().ends_with("(http://h.example/x)"), "{e}");
    // `or_url` keeps a URL already there.
    let e = e.or_url(|| "http://other/".parse().unwrap());
    assert_eq!(e.url(), Some(&url));
}

#[test]
fn a_resent_request_says_how_often_it_went_out() {
    let url: http::Uri = "http://h.example/x".parse().unwrap();
    let lost = || {
        Error::msg(
            ErrorKind::ConnectionClosed,
            "the server closed the connection",
        )
        .or_url(|| url.clone())
    };
    assert_eq!(
        lost().sent(3).to_string(),
        "connection closed before the response: the server closed the connection; sent 3 times \
         (http://h.example/x)"
    );
    // Once is what every request does: nothing to say.
    assert_eq!(lost().sent(1).to_string(), lost().to_string());
    assert!(!lost().to_string().contains("sent"));
}

#[test]
fn printed_urls_leave_out_user_info_and_query() {
    let cases = [
        (
            "http://user:s3cret@h.example:8080/p/q?key=s3cret",
            "http://h.example:8080/p/q",
        ),
        ("https://s3cret@h.example/?s3cret", "https://h.example/"),
        ("http://[::1]:1/x?token=s3cret", "http://[::1]:1/x"),
        ("http://h.example:81/a", "http://h.example:81/a"),
        ("http://h.example", "http://h.example/"),
        ("/relative?s3cret=1", "/relative"),
    ];
    for (url, shown) in cases {
        let url: http::Uri = url.parse().unwrap();
        let io = std::io::Error::other("s3cret-free cause");
        let e = Error::new(ErrorKind::Connect, io).or_url(|| url.clone());
        for text in [e.to_string(), format!("{e:#}"), format!("{e:?}")] {
            assert!(!text.contains("s3cret@"), "{text}");
            assert!(!text.contains("=s3cret"), "{text}");
            assert!(!text.contains("?s3cret"), "{text}");
            assert!(text.contains(shown), "{text} lacks {shown}");
        }
        assert_eq!(e.url(), Some(&url), "url() keeps it whole");
    }
}

#[test]
fn the_url_can_be_replaced_changed_and_dropped() {
    let e = Error::msg(ErrorKind::Connect, "refused");
    assert!(e.url().is_none());
    let mut e = e.with_url("http://a.example/x".parse().unwrap());
    assert_eq!(e.url().unwrap(), "http://a.example/x");
    let e2 = e.with_url("http://b.example/y".parse().unwrap());
    assert_eq!(e2.url().unwrap(), "http://b.example/y", "with_url replaces");
    e = e2;
    *e.url_mut().unwrap() = "http://c.example/z".parse().unwrap();
    assert!(e.to_string().ends_with("(http://c.example/z)"), "{e}");
    let e = e.without_url();
    assert!(e.url().is_none());
    assert_eq!(e.to_string(), "connection failed: refused");
    assert!(!format!("{e:?}").contains("c.example"));
    let mut e = e;
    assert!(e.url_mut().is_none());
}

#[test]
fn predicates_follow_the_kind() {
    use ErrorKind::*;
    // (kind, timeout, connect, status, body, decode, redirect, request, builder)
    #[rustfmt::skip]
    let table = [
        (InvalidUrl,       [0, 0, 0, 0, 0, 0, 0, 1]),
        (InvalidRequest,   [0, 0, 0, 0, 0, 0, 0, 1]),
        (Dns,              [0, 1, 0, 0, 0, 0, 1, 0]),
        (Connect,          [0, 1, 0, 0, 0, 0, 1, 0]),
        (ConnectTimeout,   [1, 1, 0, 0, 0, 0, 1, 0]),
        (Tls,              [0, 1, 0, 0, 0, 0, 1, 0]),
        (Timeout,          [1, 0, 0, 0, 0, 0, 0, 0]),
        (PoolQueueTimeout, [1, 0, 0, 0, 0, 0, 1, 0]),
        (ConnectionClosed, [0, 0, 0, 0, 0, 0, 1, 0]),
        (Protocol,         [0, 0, 0, 0, 0, 0, 1, 0]),
        (Refused,          [0, 0, 0, 0, 0, 0, 1, 0]),
        (HeadersTooLarge,  [0, 0, 0, 0, 0, 0, 1, 0]),
        (Body,             [0, 0, 0, 1, 0, 0, 0, 0]),
        (BodyTooLarge,     [0, 0, 0, 1, 0, 0, 0, 0]),
        (Decode,           [0, 0, 0, 0, 1, 0, 0, 0]),
        (Canceled,         [0, 0, 0, 0, 0, 0, 1, 0]),
        (TooManyRedirects, [0, 0, 0, 0, 0, 1, 0, 0]),
        (Redirect,         [0, 0, 0, 0, 0, 1, 0, 0]),
        (CircuitOpen,      [0, 0, 0, 0, 0, 0, 1, 0]),
        (Decompression,    [0, 0, 0, 0, 1, 0, 0, 0]),
        (Config,           [0, 0, 0, 0, 0, 0, 0, 1]),
        (Status,           [0, 0, 1, 0, 0, 0, 0, 0]),
        (Middleware,       [0, 0, 0, 0, 0, 0, 0, 0]),
        (Upgrade,          [0, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (kind, want) in table {
        // A new kind fails to compile here until it is placed in the table.
        match kind {
            InvalidUrl | InvalidRequest | Dns | Connect | ConnectTimeout | Tls | Timeout
            | PoolQueueTimeout | ConnectionClosed | Protocol | Refused | HeadersTooLarge | Body
            | BodyTooLarge | Decode | Canceled | TooManyRedirects | Redirect | CircuitOpen
            | Decompression | Config | Status | Middleware | Upgrade => {}
        }
        let e = Error::msg(kind, "x");
        let got = [
            e.is_timeout(),
            e.is_connect(),
            e.is_status(),
            e.is_body(),
            e.is_decode(),
            e.is_redirect(),
            e.is_request(),
            e.is_builder(),
        ];
        assert_eq!(got, want.map(|b| b == 1), "{kind}");
    }
    assert_eq!(table.len(), 24);
}

#[test]
fn errors_out_of_tower_layers_keep_or_find_their_kind() {
    // Ours, boxed by a layer: the same error back, URL and all.
    let url: http::Uri = "http://h.example/x".parse().unwrap();
    let ours = Error::msg(ErrorKind::Refused, "x").or_url(|| url.clone());
    let back = Error::from(BoxError::from(ours));
    assert_eq!(back.kind(), ErrorKind::Refused);
    assert_eq!(back.url(), Some(&url));
    assert!(back.source().is_none(), "not wrapped in itself");
    // tower's and tokio's timeouts are timeouts.
    let tower: BoxError = Box::new(tower::timeout::error::Elapsed::new());
    let e = Error::from(tower);
    assert!(e.is_timeout());
    assert!(e.source().unwrap().is::<tower::timeout::error::Elapsed>());
    let tokio_elapsed = futures_elapsed();
    assert_eq!(Error::from(tokio_elapsed).kind(), ErrorKind::Timeout);
    // Anything else is the layer's own, kept as the source.
    let io: BoxError = Box::new(std::io::Error::other("quota"));
    let e = Error::from(io);
    assert_eq!(e.kind(), ErrorKind::Middleware);
    assert_eq!(format!("{e:#}"), "middleware error: quota");
    assert!(!e.is_timeout() && !e.is_request() && !e.is_builder());
}

/// A real `tokio::time::error::Elapsed` (it has no public constructor).
fn futures_elapsed() -> BoxError {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let never = std::future::pending::<()>();
    let err = rt
        .block_on(async { tokio::time::timeout(std::time::Duration::from_millis(1), never).await })
        .unwrap_err();
    Box::new(err)
}

#[test]
fn error_is_small() {
    assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
}
