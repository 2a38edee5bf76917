use super::*;

fn h3(host: Option<&str>, port: u16, secs: u64) -> Alternative {
    Alternative {
        protocol: "h3".into(),
        host: host.map(str::to_owned),
        port,
        max_age: Duration::from_secs(secs),
        persist: false,
    }
}

fn services(value: &str) -> Vec<Alternative> {
    match parse(value.as_bytes()) {
        Ok(AltSvc::Services(s)) => s,
        other => panic!("{value}: {other:?}"),
    }
}

#[test]
fn reads_the_common_forms() {
    assert_eq!(services(r#"h3=":443"; ma=3600"#), vec![h3(None, 443, 3600)]);
    assert_eq!(services(r#"h3=":8443""#), vec![h3(None, 8443, 86400)]);
    assert_eq!(
        services(r#"h3="alt.example.com:443";ma=60;persist=1, h2=":443""#),
        vec![
            Alternative {
                persist: true,
                ..h3(Some("alt.example.com"), 443, 60)
            },
            Alternative {
                protocol: "h2".into(),
                ..h3(None, 443, 86400)
            }
        ]
    );
    assert_eq!(
        services(r#"h3="[::1]:4433"; ma=10"#),
        vec![h3(Some("[::1]"), 4433, 10)]
    );
    assert_eq!(parse(b"clear"), Ok(AltSvc::Clear));
    assert_eq!(parse(b"  clear "), Ok(AltSvc::Clear));
    // Percent-encoded protocol id, quoted parameter, escaped quote in a
    // parameter that is not ours.
    assert_eq!(
        services(r#"w%3Dx%3Ay=":1"; foo="a\"b,c"; ma="5", h3=":2""#),
        vec![
            Alternative {
                protocol: "w=x:y".into(),
                ..h3(None, 1, 5)
            },
            h3(None, 2, 86400)
        ]
    );
}

#[test]
fn skips_what_it_cannot_read() {
    // A bad entry does not spoil the good ones after it.
    assert_eq!(
        services(r#"h3=:443, h3=":0", h3="bad host:1", h3=":444"; ma=x, h3=":445""#),
        vec![h3(None, 445, 86400)]
    );
    assert_eq!(parse(b"nonsense"), Err(ParseError::Malformed));
    assert_eq!(parse(b""), Err(ParseError::Malformed));
    assert_eq!(
        parse("h3=\":443\"\u{1}".as_bytes()),
        Err(ParseError::Malformed)
    );
    assert_eq!(parse(b"h3=\":443"), Err(ParseError::Malformed));
    // `ma` beyond a week is a week; beyond u64 too.
    assert_eq!(
        services(r#"h3=":1"; ma=99999999999999999999999"#)[0].max_age,
        MAX_MAX_AGE
    );
}

#[test]
fn ma_is_digits_only() {
    // delta-seconds is 1*DIGIT (RFC 7838 §3.1, RFC 9111 §1.2.2): Rust's
    // integer parser also takes a leading `+`, which no server means.
    for bad in ["+5", "-5", "", "5s", " 5"] {
        let value = format!(r#"h3=":1"; ma="{bad}", h3=":2""#);
        assert_eq!(services(&value), vec![h3(None, 2, 86400)], "ma={bad:?}");
    }
    assert_eq!(services(r#"h3=":1"; ma=007"#), vec![h3(None, 1, 7)]);
}

#[test]
fn a_percent_escape_is_two_hex_digits() {
    // Rust's radix parser takes `%+3` as 3: the entry was read with a
    // control character in its protocol id instead of refused.
    for bad in ["h%+3", "h%3", "h%", "h%zz", "%ff"] {
        assert_eq!(percent_decode(bad), None, "{bad}");
    }
    assert_eq!(percent_decode("%68%33").as_deref(), Some("h3"));
    assert_eq!(percent_decode("w%3dx").as_deref(), Some("w=x"));
}

#[test]
fn peer_controlled_sizes_are_bounded() {
    let long = format!(r#"h3=":443"; ma={}"#, "1".repeat(MAX_VALUE_LEN));
    assert_eq!(parse(long.as_bytes()), Err(ParseError::TooLong));
    let many: Vec<String> = (1..=50).map(|p| format!(r#"h3=":{p}""#)).collect();
    let kept = services(&many.join(", "));
    assert_eq!(kept.len(), MAX_ENTRIES);
    assert_eq!(kept[0].port, 1, "the server's order kept");
    let host = "a".repeat(MAX_HOST_LEN + 1);
    assert!(services(&format!(r#"h3="{host}:1", h3=":2""#)) == vec![h3(None, 2, 86400)]);
    // Parameters past the bound end the entry's reading, not the value's.
    let params: String = (0..40).map(|i| format!("; p{i}=1")).collect();
    assert_eq!(services(&format!(r#"h3=":1"{params}, h3=":2""#)).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn cache_expires_by_ma_and_clears() {
    let mut cache = AltSvcCache::new(16);
    let origin = "https://a.example:443";
    cache.learn(&origin, br#"h2=":443", h3=":8443"; ma=60"#, Instant::now());
    assert_eq!(
        cache.get(&origin, Instant::now()).map(|a| a.port),
        Some(8443)
    );
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(cache.get(&origin, Instant::now()).is_some());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(cache.get(&origin, Instant::now()), None, "expired at ma");
    assert_eq!(cache.len(), 0);

    cache.learn(&origin, br#"h3=":8443""#, Instant::now());
    assert!(cache.get(&origin, Instant::now()).is_some());
    cache.learn(&origin, b"garbage", Instant::now());
    assert!(
        cache.get(&origin, Instant::now()).is_some(),
        "bad value ignored"
    );
    cache.learn(&origin, b"clear", Instant::now());
    assert_eq!(cache.get(&origin, Instant::now()), None, "clear forgets");
    cache.learn(&origin, br#"h3=":8443""#, Instant::now());
    cache.learn(&origin, br#"h3=":1"; ma=0"#, Instant::now());
    assert_eq!(
        cache.get(&origin, Instant::now()),
        None,
        "ma=0 replaces with nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn cache_holds_a_bounded_number_of_origins() {
    let mut cache = AltSvcCache::new(4);
    for i in 0..4u64 {
        // Origin i expires after 100 + i seconds.
        let value = format!(r#"h3=":443"; ma={}"#, 100 + i);
        cache.learn(&i, value.as_bytes(), Instant::now());
    }
    cache.learn(&99, br#"h3=":443""#, Instant::now());
    assert_eq!(cache.len(), 4);
    assert!(
        cache.get(&0, Instant::now()).is_none(),
        "the first to expire went"
    );
    assert!(cache.get(&1, Instant::now()).is_some());
    assert!(cache.get(&99, Instant::now()).is_some());
}

#[tokio::test(start_paused = true)]
async fn broken_backs_off_exponentially_and_forgets_on_success() {
    let mut broken = BrokenAlternatives::new(16);
    let key = ("a.example", 443u16);
    assert!(!broken.is_broken(&key, Instant::now()));
    let mut expected = BROKEN_BASE;
    for _ in 0..12 {
        let start = Instant::now();
        let until = broken.mark_broken(&key, start);
        assert_eq!(until - start, expected);
        tokio::time::advance(expected - Duration::from_secs(1)).await;
        assert!(broken.is_broken(&key, Instant::now()));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            !broken.is_broken(&key, Instant::now()),
            "tried again after the delay"
        );
        expected = (expected * 2).min(BROKEN_CAP);
    }
    assert_eq!(expected, BROKEN_CAP, "capped");
    broken.confirm(&key);
    let start = Instant::now();
    assert_eq!(
        broken.mark_broken(&key, start) - start,
        BROKEN_BASE,
        "success reset it"
    );
}

#[tokio::test(start_paused = true)]
async fn broken_is_bounded() {
    let mut broken = BrokenAlternatives::new(3);
    for i in 0..3u32 {
        broken.mark_broken(&i, Instant::now());
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    broken.mark_broken(&7, Instant::now());
    assert!(!broken.is_broken(&0, Instant::now()), "oldest forgotten");
    assert!(broken.is_broken(&1, Instant::now()));
    assert!(broken.is_broken(&7, Instant::now()));
}

/// The client keeps only its origin's own host (`client/transport/alt.rs`):
/// an alternative on another host is dropped before it is stored, so a
/// value naming only such alternatives forgets the origin, and one naming
/// both keeps the usable one even when it comes second.
#[tokio::test(start_paused = true)]
async fn learn_where_keeps_only_what_the_client_may_use() {
    let mut cache = AltSvcCache::new(16);
    let origin = "https://a.example:443";
    let own_host = |alt: &Alternative| alt.host.is_none();
    let now = Instant::now();
    cache.learn_where(
        &origin,
        br#"h3="evil.example:443", h3=":8443""#,
        now,
        own_host,
    );
    assert_eq!(cache.get(&origin, now).map(|a| a.port), Some(8443));
    cache.learn_where(&origin, br#"h3="evil.example:443""#, now, own_host);
    assert_eq!(
        cache.get(&origin, now),
        None,
        "only another host: forgotten"
    );
    // A negative `ma` is no delta-seconds: the entry is left out.
    cache.learn(&origin, br#"h3=":8443"; ma=-1"#, now);
    assert_eq!(cache.get(&origin, now), None);
}

/// Concurrent attempts of one wave (several dials raced at once, all
/// failing on the same UDP-dropping network) are one failure: a mark while
/// still broken neither counts nor extends, so eight simultaneous failures
/// back off 5 minutes, not 5 minutes × 2⁷.
#[tokio::test(start_paused = true)]
async fn failures_while_broken_are_one_failure() {
    let mut broken = BrokenAlternatives::new(16);
    let key = ("a.example", 443u16);
    let start = Instant::now();
    for _ in 0..8 {
        assert_eq!(broken.mark_broken(&key, start) - start, BROKEN_BASE);
    }
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(
        broken.mark_broken(&key, Instant::now()) - start,
        BROKEN_BASE,
        "a late failure of the same wave does not extend it"
    );
    tokio::time::advance(BROKEN_BASE).await;
    let again = Instant::now();
    assert_eq!(
        broken.mark_broken(&key, again) - again,
        BROKEN_BASE * 2,
        "the next wave's failure doubles"
    );
}
