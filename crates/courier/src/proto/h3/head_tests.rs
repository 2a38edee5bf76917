use super::*;
use crate::proto::h3::frame::{Frame, FrameReader};

fn block_of(frame: &Bytes) -> Vec<u8> {
    let mut reader = FrameReader::new(1 << 20);
    let mut bytes = frame.clone();
    match reader.next(&mut bytes) {
        Ok(Some(Frame::Headers(block))) => block.to_vec(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_request_head_has_its_pseudo_fields_first_and_no_connection_fields() {
    let req = Request::post("https://example.com:8443/a?b=c")
        .header("connection", "keep-alive")
        .header("host", "virtual.example")
        .header("te", "gzip")
        .header("x-one", "1")
        .body(())
        .unwrap();
    let head = request(&req, Some(5), &HeaderMap::new(), &[]).expect("encodes");
    let fields = fields_of(&head);
    // The caller's Host is the virtual host: `:authority`, not a field.
    let want: Vec<(String, String)> = [
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "virtual.example"),
        (":path", "/a?b=c"),
        ("x-one", "1"),
        ("content-length", "5"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    assert_eq!(fields, want);
    let size: u64 = want
        .iter()
        .map(|(n, v)| (n.len() + v.len()) as u64 + 32)
        .sum();
    assert_eq!(head.size, size);
    let relative = Request::get("/relative").body(()).unwrap();
    assert!(request(&relative, None, &HeaderMap::new(), &[]).is_err());
}

fn fields_of(head: &EncodedHead) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    qpack::decode(&block_of(&head.frame), 1 << 20, |n, v| {
        fields.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ));
        Ok(())
    })
    .expect("decodes");
    fields
}

/// The client's defaults follow the request's own fields, each name
/// the request sets or withholds left out (all of a name's values
/// otherwise), as when they were added to the request; a default
/// content-length stands for the one the body's size would add.
#[test]
fn defaults_follow_the_request_fields_unless_set_or_withheld() {
    let mut defaults = HeaderMap::new();
    defaults.append("user-agent", HeaderValue::from_static("courier"));
    defaults.append("accept", HeaderValue::from_static("a/b"));
    defaults.append("accept", HeaderValue::from_static("c/d"));
    defaults.append("x-key", HeaderValue::from_static("secret"));
    defaults.append("connection", HeaderValue::from_static("close"));
    let req = Request::get("https://example.com/")
        .header("user-agent", "mine")
        .header("x-one", "1")
        .body(())
        .unwrap();
    let withheld = [HeaderName::from_static("x-key")];
    let head = request(&req, None, &defaults, &withheld).expect("encodes");
    let regular: Vec<(String, String)> = fields_of(&head)
        .into_iter()
        .filter(|(n, _)| !n.starts_with(':'))
        .collect();
    let want: Vec<(String, String)> = [
        ("user-agent", "mine"),
        ("x-one", "1"),
        ("accept", "a/b"),
        ("accept", "c/d"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    assert_eq!(regular, want);

    let mut sized = HeaderMap::new();
    sized.append("content-length", HeaderValue::from_static("7"));
    let head = request(&req, Some(5), &sized, &[]).expect("encodes");
    let lengths: Vec<_> = fields_of(&head)
        .into_iter()
        .filter(|(n, _)| n == "content-length")
        .collect();
    assert_eq!(lengths, [("content-length".to_string(), "7".to_string())]);
}

fn section(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut block = BytesMut::new();
    encode::prefix(&mut block);
    for (n, v) in fields {
        encode::field(&mut block, n, v, false);
    }
    block.to_vec()
}

#[test]
fn a_repeated_head_is_replayed_and_a_new_one_decoded() {
    let replay = Replay::default();
    let a = section(&[(b":status", b"200"), (b"x-a", b"1")]);
    let b = section(&[(b":status", b"404"), (b"x-a", b"2")]);
    let interim = section(&[(b":status", b"103"), (b"link", b"</a>")]);
    for (block, status, x) in [
        (&a, 200, "1"),
        (&a, 200, "1"),
        (&b, 404, "2"),
        (&a, 200, "1"),
    ] {
        let head = replay.response(block, 1024).expect("decodes");
        assert_eq!(head.parts.status.as_u16(), status);
        assert_eq!(head.headers()["x-a"], x);
        assert_eq!(head.parts.version, Version::HTTP_3);
    }
    // A replayed head shares the kept headers (no copy), with the
    // content-length read when it was decoded.
    let sized = section(&[(b":status", b"200"), (b"content-length", b"128")]);
    let first = replay.response(&sized, 1024).expect("decodes");
    let again = replay.response(&sized, 1024).expect("replayed");
    let (first_map, again_map) = (first.shared.unwrap(), again.shared.unwrap());
    assert!(Arc::ptr_eq(&first_map, &again_map));
    assert!(again.parts.headers.is_empty());
    assert_eq!((first.length, again.length), (Some(128), Some(128)));
    // A 1xx is not kept (its headers its own); a refused head is
    // refused each time.
    let early_hints = replay.response(&interim, 1024).expect("interim");
    assert!(early_hints.shared.is_none());
    assert_eq!(early_hints.parts.headers["link"], "</a>");
    assert_eq!(replay.0.lock().unwrap().as_ref().unwrap().status, 200);
    let bad = section(&[(b"x-a", b"no status")]);
    for _ in 0..2 {
        assert!(matches!(
            replay.response(&bad, 1024),
            Err(HeadError::Malformed(_))
        ));
    }
}

#[test]
fn response_heads_are_checked() {
    let ok = response(&section(&[(b":status", b"204"), (b"x-a", b"b")]), 1024).expect("ok");
    assert_eq!(ok.status, 204);
    assert_eq!(ok.headers["x-a"], "b");
    assert_eq!(ok.version, Version::HTTP_3);
    let bad: &[&[(&[u8], &[u8])]] = &[
        &[(b"x-a", b"b")],
        &[(b":status", b"200"), (b":status", b"200")],
        &[(b":status", b"20")],
        &[(b":status", b"abc")],
        &[(b":path", b"/")],
        &[(b"x-a", b"b"), (b":status", b"200")],
        &[(b":status", b"200"), (b"X-Upper", b"b")],
        &[(b":status", b"200"), (b"x-a", b"b\r\nc")],
    ];
    for fields in bad {
        assert!(
            matches!(
                response(&section(fields), 1024),
                Err(HeadError::Malformed(_))
            ),
            "{fields:?}"
        );
    }
    assert!(matches!(
        response(
            &section(&[(b":status", b"200"), (b"x-a", &[b'v'; 100])]),
            100
        ),
        Err(HeadError::TooLarge(100))
    ));
    assert!(matches!(
        response(&[0x02, 0x00], 100),
        Err(HeadError::Qpack(_))
    ));
    assert!(matches!(
        trailer_fields(&section(&[(b":status", b"200")]), 100),
        Err(HeadError::Malformed(_))
    ));
    let t = trailer_fields(&section(&[(b"grpc-status", b"0")]), 100).expect("trailers");
    assert_eq!(t["grpc-status"], "0");
}

/// What HTTP/2's heads are held to (`proto::fields`), HTTP/3's are too
/// (RFC 9114 §4.2, §4.1.2, §4.5): a connection-specific field, a
/// content-length that is not `1*DIGIT` or whose copies disagree, and a
/// 101 make a response malformed, never a head handed on.
#[test]
fn response_heads_are_held_to_http2s_rules() {
    let bad: &[&[(&[u8], &[u8])]] = &[
        &[(b":status", b"200"), (b"transfer-encoding", b"chunked")],
        &[(b":status", b"200"), (b"connection", b"close")],
        &[(b":status", b"200"), (b"keep-alive", b"timeout=5")],
        &[(b":status", b"200"), (b"proxy-connection", b"close")],
        &[(b":status", b"200"), (b"upgrade", b"websocket")],
        &[(b":status", b"200"), (b"te", b"gzip")],
        &[(b":status", b"200"), (b"content-length", b"+5")],
        &[(b":status", b"200"), (b"content-length", b"5, 5")],
        &[(b":status", b"200"), (b"content-length", b"")],
        &[
            (b":status", b"200"),
            (b"content-length", b"5"),
            (b"content-length", b"6"),
        ],
        &[(b":status", b"101"), (b"upgrade", b"h2c")],
        &[(b":status", b"101")],
    ];
    for fields in bad {
        let block = section(fields);
        assert!(
            matches!(response(&block, 1024), Err(HeadError::Malformed(_))),
            "{fields:?}"
        );
        assert!(
            matches!(
                Replay::default().response(&block, 1024),
                Err(HeadError::Malformed(_))
            ),
            "{fields:?}"
        );
    }
    // Trailers carry no connection-specific field either.
    assert!(matches!(
        trailer_fields(&section(&[(b"transfer-encoding", b"chunked")]), 100),
        Err(HeadError::Malformed(_))
    ));
    // Copies that agree are one length; `te: trailers` is allowed.
    let head = Replay::default()
        .response(
            &section(&[
                (b":status", b"200"),
                (b"content-length", b"007"),
                (b"content-length", b"7"),
                (b"te", b"trailers"),
            ]),
            1024,
        )
        .expect("ok");
    assert_eq!(head.length, Some(7));
}

/// Fields that cannot be trailers are dropped, as over HTTP/1.1 and HTTP/2.
#[test]
fn fields_that_cannot_be_trailers_are_dropped() {
    let t = trailer_fields(
        &section(&[
            (b"set-cookie", b"a=b"),
            (b"content-length", b"9"),
            (b"authorization", b"x"),
            (b"grpc-status", b"0"),
        ]),
        1024,
    )
    .expect("trailers");
    let names: Vec<&str> = t.keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["grpc-status"]);
}
