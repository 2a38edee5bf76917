//! Tests of the response head parser (`decode.rs`).

use super::*;

fn head(raw: &str) -> Result<Parsed, Error> {
    parse(
        &mut BytesMut::from(raw),
        Asked::Plain,
        &mut BytesMut::new(),
        &mut Names::default(),
    )
}

fn final_head(raw: &str) -> Head {
    match head(raw).unwrap() {
        Parsed::Final(h) => h,
        other => panic!("expected a final head, got {other:?}"),
    }
}

/// Names remembered by position must never stand in for other bytes: the
/// same connection's next head with other names (or the same names in
/// another order or case) is read as if nothing were remembered.
#[test]
fn remembered_header_names_follow_the_bytes() {
    let mut names = Names::default();
    let mut next = |raw: &str| {
        let parsed = parse(
            &mut BytesMut::from(raw),
            Asked::Plain,
            &mut BytesMut::new(),
            &mut names,
        );
        match parsed.unwrap() {
            Parsed::Final(h) => h,
            other => panic!("expected a final head, got {other:?}"),
        }
    };
    let h = next("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Length(3), true));
    let h = next("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: 1\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(4));
    assert_eq!(h.headers()["x-a"], "1");
    let h = next("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
    assert!(!h.headers().contains_key(CONTENT_LENGTH));
    let h = next("HTTP/1.1 200 OK\r\nX-A: 2\r\ncontent-length: 5\r\nX-B: 3\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Length(5), true));
    let names: Vec<&str> = h.headers().keys().map(HeaderName::as_str).collect();
    assert_eq!(names, ["x-a", "content-length", "x-b"]);
    let h = next("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Length(1), false));
}

/// A head with the last head's names in the same order is filled into a
/// copy of the last map: the result must be the map a fresh parse makes, and
/// the framing headers read as they go by must say what a lookup would, for
/// every head of one connection, whatever came before it.
#[test]
fn a_remembered_head_reads_as_a_fresh_one() {
    let heads = [
        "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n",
        // Same names, other values: the template path.
        "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 12\r\nX-A: 2, 3\r\n\r\n",
        "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5, 5\r\nX-A: \r\n\r\n",
        "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5, 6\r\nX-A: 1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: x\r\nX-A: 1\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nServer: t\r\nContent-Length: x\r\nX-A: 1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 1\r\nX-A: \x01\r\n\r\n",
        // Another order, another case, one more, one less, a repeated name.
        "HTTP/1.1 200 OK\r\nX-A: 1\r\nServer: s\r\nContent-Length: 3\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx-a: 1\r\nServer: s\r\ncontent-length: 4\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx-a: 1\r\nServer: s\r\ncontent-length: 4\r\nConnection: close\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx-a: 2\r\nServer: s\r\ncontent-length: 4\r\nConnection: x, Close\r\n\r\n",
        "HTTP/1.0 200 OK\r\nx-a: 2\r\nServer: s\r\ncontent-length: 4\r\nConnection: keep-alive\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx-a: 1\r\nServer: s\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\nX-A: 2\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 3\r\nX-A: 4\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 4\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 5\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n",
    ];
    let fresh = |raw: &str| {
        head(raw)
            .map(|p| format!("{p:?}"))
            .map_err(|e| format!("{e:#}"))
    };
    let mut names = Names::default();
    let mut arena = BytesMut::new();
    // Rounds enough for the template's values to be renewed on the way.
    for _ in 0..8 {
        for raw in heads {
            let remembered = parse(
                &mut BytesMut::from(raw),
                Asked::Plain,
                &mut arena,
                &mut names,
            )
            .map(|p| format!("{p:?}"))
            .map_err(|e| format!("{e:#}"));
            assert_eq!(remembered, fresh(raw), "{raw:?}");
        }
    }
    // The template was used: same names, same order, no repeats.
    let mut names = Names::default();
    final_head_with(&mut names, heads[0]);
    assert!(names.template(3).is_some());
    let h = final_head_with(&mut names, heads[1]);
    let all: Vec<_> = h
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    assert_eq!(
        all,
        [("server", "t"), ("content-length", "12"), ("x-a", "2, 3")]
    );
    assert_eq!(h.framing, Framing::Length(12));
    // Repeated names keep no template.
    final_head_with(&mut names, heads[13]);
    assert!(names.template(3).is_none());
}

fn final_head_with(names: &mut Names, raw: &str) -> Head {
    final_head_in(names, &mut BytesMut::new(), raw)
}

/// A final head read as a connection reads its heads: `names` and `arena`
/// kept from one head to the next.
fn final_head_in(names: &mut Names, arena: &mut BytesMut, raw: &str) -> Head {
    match parse(&mut BytesMut::from(raw), Asked::Plain, arena, names) {
        Ok(Parsed::Final(h)) => h,
        other => panic!("expected a final head, got {other:?}"),
    }
}

#[test]
fn framing_follows_rfc_9112() {
    let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Length(12), true));
    let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, true));
    let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
    let h =
        final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
    let h = final_head("HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
    let h = final_head("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n");
    assert_eq!((h.framing, h.keep_alive), (Framing::Empty, true));
    let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(h.framing, Framing::Empty);
    let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(3));
    let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 000000000000000000003\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(3));
}

#[test]
fn a_head_request_has_no_body_whatever_the_headers_say() {
    let mut buf = BytesMut::from("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n");
    let Parsed::Final(h) = parse(
        &mut buf,
        Asked::Head,
        &mut BytesMut::new(),
        &mut Names::default(),
    )
    .unwrap() else {
        panic!("final head expected")
    };
    assert_eq!(h.framing, Framing::Empty);
}

#[test]
fn persistence_depends_on_version_and_connection() {
    assert!(
        !final_head("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n").keep_alive
    );
    assert!(!final_head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keep_alive);
    let h = final_head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
    assert!(h.keep_alive);
    assert_eq!(h.version, Version::HTTP_10);
    let h = final_head(
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
}

#[test]
fn the_head_is_consumed_and_the_body_left() {
    let mut buf = BytesMut::from("HTTP/1.1 200 OK\r\nX-Custom: a b\r\nContent-Length: 2\r\n\r\nhi");
    let Parsed::Final(h) = parse(
        &mut buf,
        Asked::Plain,
        &mut BytesMut::new(),
        &mut Names::default(),
    )
    .unwrap() else {
        panic!("final head expected")
    };
    assert_eq!(&buf[..], b"hi");
    assert_eq!(h.headers()["x-custom"], "a b");
    assert_eq!(h.status, StatusCode::OK);
}

#[test]
fn partial_informational_and_malformed_heads() {
    assert!(matches!(
        head("HTTP/1.1 200 OK\r\nContent-Le"),
        Ok(Parsed::Partial)
    ));
    let mut buf = BytesMut::from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n");
    assert!(matches!(
        parse(
            &mut buf,
            Asked::Plain,
            &mut BytesMut::new(),
            &mut Names::default()
        ),
        Ok(Parsed::Informational(25, StatusCode::CONTINUE))
    ));
    assert_eq!(&buf[..], b"HTTP/1.1 200 OK\r\n");
    for bad in [
        "HTTP/1.1 200 OK\r\nnot a header\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: x y, chunked\r\n\r\n",
        "HTTP/1.1 099 Too Low\r\n\r\n",
        "SSH-2.0-OpenSSH\r\n\r\n",
    ] {
        let kind = head(bad).unwrap_err().kind();
        assert_eq!(kind, ErrorKind::Protocol, "{bad:?}");
    }
    let many: String = (0..101).map(|i| format!("x-{i}: v\r\n")).collect();
    let err = head(&format!("HTTP/1.1 200 OK\r\n{many}\r\n")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::HeadersTooLarge);
}

#[test]
fn a_switch_is_final_only_when_the_request_asked_for_it() {
    let parse_as = |raw: &str, asked| {
        parse(
            &mut BytesMut::from(raw),
            asked,
            &mut BytesMut::new(),
            &mut Names::default(),
        )
    };
    let switch = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: ws\r\n\r\nframe";
    let mut buf = BytesMut::from(switch);
    let Ok(Parsed::Final(h)) = parse(
        &mut buf,
        Asked::Upgrade,
        &mut BytesMut::new(),
        &mut Names::default(),
    ) else {
        panic!("a 101 to an Upgrade request is final");
    };
    assert!(h.switched && !h.keep_alive);
    assert_eq!(&buf[..], b"frame", "the new protocol's bytes stay");
    for asked in [Asked::Plain, Asked::Head, Asked::Connect] {
        let err = parse_as(switch, asked).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol, "{asked:?}");
    }
    // A CONNECT's 2xx is a tunnel whatever it says of a body; its
    // other answers are ordinary responses.
    let ok = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let Ok(Parsed::Final(h)) = parse_as(ok, Asked::Connect) else {
        panic!("final")
    };
    assert!(h.switched && h.framing == Framing::Empty);
    let refused = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 3\r\n\r\n";
    let Ok(Parsed::Final(h)) = parse_as(refused, Asked::Connect) else {
        panic!("final")
    };
    assert!(!h.switched && h.framing == Framing::Length(3));
    let Ok(Parsed::Final(h)) = parse_as(ok, Asked::Upgrade) else {
        panic!("final")
    };
    assert!(!h.switched, "an upgrade declined is an ordinary response");
    for framed in [
        "HTTP/1.1 101 Switching Protocols\r\nContent-Length: 4\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        let err = parse_as(framed, Asked::Upgrade).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol, "{framed:?}");
    }
    let zero = "HTTP/1.1 101 Switching Protocols\r\nContent-Length: 0\r\n\r\n";
    assert!(matches!(
        parse_as(zero, Asked::Upgrade),
        Ok(Parsed::Final(_))
    ));
}

#[test]
fn interim_heads_are_bounded_in_number_and_bytes() {
    let mut interim = Interim::default();
    for _ in 0..MAX_INTERIM {
        interim.count(25, 64 * 1024).unwrap();
    }
    let err = interim.count(25, 64 * 1024).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    let mut interim = Interim::default();
    interim.count(600, 1000).unwrap();
    let err = interim.count(600, 1000).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::HeadersTooLarge);
}

/// A remembered head's values that did not change are the template's (no
/// copy, no second check), and the template keeps no arena of a response's.
#[test]
fn unchanged_values_come_from_the_template_which_holds_no_arena() {
    let raw = "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n";
    let mut names = Names::default();
    let mut arena = BytesMut::new();
    let mut next = |raw: &str| final_head_in(&mut names, &mut arena, raw);
    let ptrs = |h: &Head| -> Vec<*const u8> {
        h.headers()
            .values()
            .map(|v| v.as_bytes().as_ptr())
            .collect()
    };
    // The first head makes the template (names only), the second fills it
    // from the arena and renews it into a copy of its own, which the third
    // and fourth are made of.
    let _first = next(raw);
    let second = next(raw);
    let third = next(raw);
    let fourth = next(raw);
    assert_eq!(ptrs(&third), ptrs(&fourth), "the template's values");
    assert_ne!(
        ptrs(&second),
        ptrs(&third),
        "renewed into a copy of its own"
    );
    // One value changes: the others stay the template's, and it reads as sent.
    let fifth = next("HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 3\r\nX-A: 2\r\n\r\n");
    assert_eq!(fifth.headers()["x-a"], "2");
    assert_eq!(ptrs(&fifth)[..2], ptrs(&third)[..2]);
    assert_ne!(ptrs(&fifth)[2], ptrs(&third)[2]);
}

/// A framing header of one element is read without splitting a list: it
/// must say what the same element twice in a list says.
#[test]
fn a_single_framing_value_reads_as_a_list_of_it() {
    let values = [
        "128",
        " 128 ",
        "0",
        "007",
        "",
        " ",
        "x",
        "1 2",
        "-1",
        "+1",
        "99999999999999999999",
        "close",
        " Close ",
        "keep-alive",
        "KEEP-ALIVE",
        "closed",
        "upgrade",
    ];
    for role in [Role::Connection, Role::ContentLength] {
        for v in values {
            let mut single = Seen::default();
            single.note(role, v.as_bytes());
            let mut list = Seen::default();
            list.note(role, format!("{v},{v}").as_bytes());
            // The first value as the response reads it is another matter
            // (`the_declared_length_is_what_the_response_would_read`).
            single.first_length = FirstLength::Absent;
            list.first_length = FirstLength::Absent;
            assert_eq!(format!("{single:?}"), format!("{list:?}"), "{role:?} {v:?}");
        }
    }
}

/// The Content-Length handed to the response with the head, when the head
/// has one at hand, is what the response would read from its headers (the
/// first value, `u64::from_str`): the response reads the header itself
/// when the head has none at hand.
#[test]
fn the_declared_length_is_what_the_response_would_read() {
    let values = [
        "128",
        " 128 ",
        "0",
        "007",
        "",
        " ",
        "x",
        "1 2",
        "-1",
        "+1",
        "1,1",
        "1, 2",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999",
        "00000000000000000000000001",
    ];
    assert_eq!(Seen::default().declared(), Some(None));
    for v in values {
        for second in [None, Some("5"), Some("x")] {
            let mut seen = Seen::default();
            seen.note(Role::ContentLength, v.as_bytes());
            if let Some(second) = second {
                seen.note(Role::ContentLength, second.as_bytes());
            }
            if let Some(declared) = seen.declared() {
                assert_eq!(declared, v.parse::<u64>().ok(), "{v:?} then {second:?}");
            }
        }
    }
    // In a whole head, and with the header absent.
    let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 12\r\n\r\n");
    assert_eq!(h.declared_length, Some(Some(12)));
    let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.declared_length, Some(None));
}

/// A value that changes and then stays (`Date`, once a second) is renewed
/// into the template on the second head that has it, not 64 heads later: a
/// connection with a few requests a second copied and checked it on most
/// heads. A value new on every head (a request id) still renews the
/// template at most once per 64 heads.
#[test]
fn a_changed_value_seen_twice_is_renewed_and_one_new_every_time_is_not() {
    let head = |date: &str, id: usize| {
        format!("HTTP/1.1 200 OK\r\nServer: s\r\nDate: {date}\r\nX-Id: {id}\r\nContent-Length: 0\r\n\r\n")
    };
    let mut names = Names::default();
    let mut arena = BytesMut::new();
    let mut next = |raw: &str| final_head_in(&mut names, &mut arena, raw);
    let ptr = |h: &Head, name: &str| h.headers()[name].as_bytes().as_ptr();
    for _ in 0..4 {
        next(&head("a", 0));
    }
    let before = next(&head("a", 0));
    // The date moves on: the first head with it reads it from its own copy,
    // the second renews the template, and the third is the template's.
    let first = next(&head("b", 0));
    let second = next(&head("b", 0));
    let third = next(&head("b", 0));
    let fourth = next(&head("b", 0));
    assert_eq!(first.headers()["date"], "b");
    assert_eq!(ptr(&first, "server"), ptr(&before, "server"));
    assert_ne!(ptr(&third, "server"), ptr(&before, "server"), "renewed");
    assert_eq!(ptr(&third, "date"), ptr(&fourth, "date"), "the template's");
    assert_ne!(ptr(&third, "date"), ptr(&second, "date"));
    // A new id on every head: the template is renewed twice at most in 100
    // heads (once per 64), and every id reads as sent.
    let mut renewals = 0;
    let mut server = ptr(&fourth, "server");
    for id in 1..=100 {
        let h = next(&head("b", id));
        assert_eq!(h.headers()["x-id"], id.to_string().as_str());
        if ptr(&h, "server") != server {
            renewals += 1;
            server = ptr(&h, "server");
        }
    }
    assert!((1..=2).contains(&renewals), "{renewals} renewals");
}

/// A head laid out as the last one (the same bytes outside its values) is
/// read without httparse: what it reads must be what httparse reads, for
/// values that change within their length in every way a byte can (a space
/// or tab at an end, which httparse trims; a line end or colon, which
/// change the head's shape; control bytes and obs-text), and for changes
/// outside the values (status, names, separators); and the last head's
/// bytes again, read from what was read of them, must read the same.
#[test]
fn a_head_laid_out_as_the_last_reads_as_httparse_reads_it() {
    let base: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sun, 29 Nov 2026 16:56:00 GMT\r\nContent-Length: 128\r\nConnection: keep-alive\r\nX-A: a b\r\n\r\n";
    // What was read, and what is left of the buffer after it.
    let fresh = |raw: &[u8]| {
        let mut buf = BytesMut::from(raw);
        buf.extend_from_slice(b"body");
        let parsed = parse(
            &mut buf,
            Asked::Plain,
            &mut BytesMut::new(),
            &mut Names::default(),
        );
        let parsed = parsed
            .map(|p| format!("{p:?}"))
            .map_err(|e| format!("{e:#}"));
        (parsed, buf)
    };
    let mut names = Names::default();
    let mut arena = BytesMut::new();
    let mut remembered = |raw: &[u8], names: &mut Names| {
        let mut buf = BytesMut::from(raw);
        buf.extend_from_slice(b"body");
        let parsed = parse(&mut buf, Asked::Plain, &mut arena, names)
            .map(|p| format!("{p:?}"))
            .map_err(|e| format!("{e:#}"));
        (parsed, buf)
    };
    // The layout is kept after a head httparse read twice (the template
    // comes with the first, the layout with the second).
    for _ in 0..2 {
        assert_eq!(remembered(base, &mut names), fresh(base));
    }
    assert!(names.layout.matches(base).is_some());
    // Read from the layout, its values the template's: the same bytes
    // again are read as they were, without a look at a value.
    assert_eq!(remembered(base, &mut names), fresh(base));
    assert!(names.layout.exact(base).is_some());
    let with = |from: &str, to: &str| -> Vec<u8> {
        let s = String::from_utf8(base.to_vec()).unwrap();
        assert!(s.contains(from) && from.len() == to.len(), "{from} {to}");
        s.replacen(from, to, 1).into_bytes()
    };
    let mut cases: Vec<Vec<u8>> = vec![
        with("16:56:00", "16:56:01"),
        with("128", "256"),
        with("128", "000"),
        with("128", "12a"),
        with("128", "1 8"),
        with("128", " 28"),
        with("128", "12 "),
        with("128", "+12"),
        with("128", "1,1"),
        with("keep-alive", "close     "),
        with("keep-alive", "keep-alivE"),
        with("a b", "a\tb"),
        with("a b", "\ta "),
        with("a b", "a\rb"),
        with("a b", "a\nb"),
        with("a b", "a:b"),
        with("a b", "a\x01b"),
        with("a b", "a\x7fb"),
        with("nginx", "ngin "),
        with("200 OK", "404 OK"),
        with("200 OK", "101 OK"),
        with("200 OK", "204 OK"),
        with("HTTP/1.1", "HTTP/1.0"),
        with("Server:", "server:"),
        with("Server: ", "Server:\t"),
        with("X-A", "X-B"),
        with("\r\n\r\n", "\r\n\n\n"),
    ];
    let mut obs = base.to_vec();
    let at = obs.windows(3).position(|w| w == b"a b").unwrap();
    obs[at + 1] = 0xff;
    cases.push(obs);
    // Cut short: not a whole head.
    cases.push(base[..base.len() - 1].to_vec());
    for case in &cases {
        assert_eq!(
            remembered(case, &mut names),
            fresh(case),
            "{:?}",
            String::from_utf8_lossy(case)
        );
        // And back, so the next case meets the base's layout.
        assert_eq!(remembered(base, &mut names), fresh(base));
        assert_eq!(remembered(base, &mut names), fresh(base));
    }
    // A head longer than a layout may be is parsed every time.
    let long = format!(
        "HTTP/1.1 200 OK\r\nX-A: {}\r\n\r\n",
        "a".repeat(super::super::repeated::MAX_LAYOUT)
    );
    for _ in 0..3 {
        assert_eq!(
            remembered(long.as_bytes(), &mut names),
            fresh(long.as_bytes())
        );
        assert!(names.layout.matches(long.as_bytes()).is_none());
    }
    // Random bytes in random places, each head the same length as the base.
    let mut rng = fastrand::Rng::with_seed(30);
    let alphabet = b"a0 \t\r\n:,\x01\x7f\xff";
    for _ in 0..2000 {
        let mut case = base.to_vec();
        for _ in 0..rng.usize(1..4) {
            let at = rng.usize(..case.len());
            case[at] = alphabet[rng.usize(..alphabet.len())];
        }
        assert_eq!(
            remembered(&case, &mut names),
            fresh(&case),
            "{:?}",
            String::from_utf8_lossy(&case)
        );
        assert_eq!(remembered(base, &mut names), fresh(base));
    }
}

/// The last head's bytes again share the connection's template map instead
/// of copying it; a head still held when the template's values are renewed
/// (or a caller's change to a response's headers, which copies the map
/// first: `Response::headers_mut`) keeps the values it was read with.
#[test]
fn the_same_head_again_shares_the_template_and_keeps_its_values() {
    let head = |date: &str| {
        format!("HTTP/1.1 200 OK\r\nServer: s\r\nDate: {date}\r\nContent-Length: 3\r\n\r\n")
    };
    let mut names = Names::default();
    let mut arena = BytesMut::new();
    let mut next = |raw: &str| final_head_in(&mut names, &mut arena, raw);
    for _ in 0..3 {
        next(&head("a"));
    }
    let held = next(&head("a"));
    let again = next(&head("a"));
    let (Some(one), Some(two)) = (&held.shared, &again.shared) else {
        panic!("the same bytes again share the template: {held:?}");
    };
    assert!(Arc::ptr_eq(one, two), "one map, shared");
    assert!(held.headers.is_empty());
    assert_eq!(
        (held.framing, held.declared_length),
        (Framing::Length(3), Some(Some(3)))
    );
    // The date moves on: the template is renewed (the second head with it)
    // and then shared with its new values; the held head keeps its own.
    let renewed: Vec<Head> = (0..4).map(|_| next(&head("b"))).collect();
    assert!(renewed[3].shared.is_some(), "{:?}", renewed[3]);
    assert_eq!(renewed[3].headers()["date"], "b");
    assert_eq!(held.headers()["date"], "a");
    assert_eq!(again.headers()["date"], "a");
    assert_eq!(held.headers()["server"], "s");
}
