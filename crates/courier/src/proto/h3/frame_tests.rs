use bytes::Bytes;

use super::*;

fn varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint::put(&mut out, v);
    out
}

fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_frame(&mut out, ty, payload);
    out
}

#[test]
fn frames_read_the_same_however_cut() {
    let grease = 0x1f * 40 + 0x21; // a 2-byte type
    let wire = [
        frame(0x21, b"ignored"),
        frame(kind::HEADERS, b"\x00\x00\xd9"),
        frame(grease, &[b'u'; 300]),
        frame(kind::DATA, &[b'd'; 100]),
        frame(kind::DATA, b""),
        frame(kind::SETTINGS, &[varint(6), varint(16_384)].concat()),
        frame(kind::GOAWAY, &varint(8)),
        frame(kind::HEADERS, b""),
        frame(kind::MAX_PUSH_ID, &varint(3)),
        frame(kind::CANCEL_PUSH, &varint(1)),
        frame(kind::PUSH_PROMISE, &[varint(7), vec![0, 0, 0xd9]].concat()),
    ]
    .concat();
    let want = vec![
        Frame::Headers(Bytes::from_static(b"\x00\x00\xd9")),
        Frame::Data(Bytes::from(vec![b'd'; 100])),
        Frame::Settings(vec![(6, 16_384)]),
        Frame::Goaway(8),
        Frame::Headers(Bytes::new()),
        Frame::MaxPushId(3),
        Frame::CancelPush(1),
        Frame::PushPromise(7),
    ];
    for a in 0..wire.len() {
        for b in [a, a + 1, a + 2, a + 150] {
            assert_eq!(
                read_all(1024, &wire, &[a, b]),
                Ok(want.clone()),
                "cut at {a}, {b}"
            );
        }
    }
    // One byte at a time.
    let cuts: Vec<usize> = (1..wire.len()).collect();
    assert_eq!(read_all(1024, &wire, &cuts), Ok(want));
}

#[test]
fn a_frame_over_the_bound_fails_at_its_header() {
    // HEADERS declaring 1 MiB, with none of it sent.
    let wire = [varint(kind::HEADERS), varint(1 << 20)].concat();
    let err = read_all(64 << 10, &wire, &[1]).expect_err("too large");
    assert!(err.is_headers_too_large());
    assert_eq!(err.code(), code::EXCESSIVE_LOAD);
    for ty in [kind::SETTINGS, kind::PUSH_PROMISE] {
        let wire = [varint(ty), varint(1025)].concat();
        assert!(matches!(
            read_all(1024, &wire, &[]),
            Err(FrameError::TooLarge { length: 1025, .. })
        ));
    }
    // DATA and unknown frames of any length are not bounded: the one is
    // handed on, the other skipped as it passes.
    let data_head = [varint(kind::DATA), varint(1 << 40)].concat();
    let mut reader = FrameReader::new(16);
    let mut chunk = Bytes::from([data_head, vec![b'd'; 64]].concat());
    assert_eq!(
        reader.next(&mut chunk),
        Ok(Some(Frame::Data(Bytes::from(vec![b'd'; 64]))))
    );
    let mut reader = FrameReader::new(16);
    let mut chunk = Bytes::from([varint(0x21), varint(1 << 40), vec![0; 4096]].concat());
    assert_eq!(reader.next(&mut chunk), Ok(None));
    assert!(
        chunk.is_empty() && reader.payload.capacity() == 0,
        "nothing kept"
    );
}

#[test]
fn data_is_handed_on_without_a_copy() {
    let mut reader = FrameReader::new(1024);
    let mut head = Bytes::from([varint(kind::DATA), varint(10_000)].concat());
    assert_eq!(reader.next(&mut head), Ok(None));
    let chunk = Bytes::from(vec![b'd'; 5000]);
    let ptr = chunk.as_ptr();
    let mut c = chunk.clone();
    match reader.next(&mut c) {
        Ok(Some(Frame::Data(d))) => assert_eq!(d.as_ptr(), ptr, "a slice of the same buffer"),
        other => panic!("{other:?}"),
    }
    // HEADERS whole in a chunk: no copy either.
    let wire = Bytes::from(frame(kind::HEADERS, &[7; 100]));
    let mut c = wire.clone();
    let mut reader = FrameReader::new(1024);
    match reader.next(&mut c) {
        Ok(Some(Frame::Headers(h))) => assert_eq!(h.as_ptr(), wire[3..].as_ptr()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_frames_are_typed_errors() {
    let cases: Vec<(Vec<u8>, u64)> = vec![
        // HTTP/2's PING, PRIORITY, WINDOW_UPDATE, CONTINUATION.
        (frame(0x06, &[0; 8]), code::FRAME_UNEXPECTED),
        (frame(0x02, &[0; 5]), code::FRAME_UNEXPECTED),
        (frame(0x08, &[0; 4]), code::FRAME_UNEXPECTED),
        (frame(0x09, b""), code::FRAME_UNEXPECTED),
        // GOAWAY: empty, trailing bytes, over 8 bytes.
        (frame(kind::GOAWAY, b""), code::FRAME_ERROR),
        (frame(kind::GOAWAY, &[4, 0]), code::FRAME_ERROR),
        (frame(kind::GOAWAY, &[0; 9]), code::FRAME_ERROR),
        (frame(kind::MAX_PUSH_ID, &[0x40]), code::FRAME_ERROR),
        // SETTINGS: a value missing, HTTP/2 identifiers, a duplicate.
        (frame(kind::SETTINGS, &[6]), code::FRAME_ERROR),
        (frame(kind::SETTINGS, &[2, 1]), code::SETTINGS_ERROR),
        (frame(kind::SETTINGS, &[0, 1]), code::SETTINGS_ERROR),
        (frame(kind::SETTINGS, &[6, 1, 6, 2]), code::SETTINGS_ERROR),
        // The stream ends inside a frame: its header, its payload.
        (vec![0x40], code::FRAME_ERROR),
        (
            frame(kind::HEADERS, &[0; 10])[..5].to_vec(),
            code::FRAME_ERROR,
        ),
        (frame(kind::DATA, &[0; 10])[..5].to_vec(), code::FRAME_ERROR),
        (frame(0x21, &[0; 10])[..5].to_vec(), code::FRAME_ERROR),
    ];
    for (wire, want) in cases {
        let err = read_all(1024, &wire, &[]).expect_err(&format!("{wire:x?}"));
        assert_eq!(err.code(), want, "{wire:x?}: {err}");
    }
    let many: Vec<u8> = (0..65u64)
        .flat_map(|i| [varint(0x21 + 0x1f * i), varint(0)].concat())
        .collect();
    assert_eq!(
        read_all(4096, &frame(kind::SETTINGS, &many), &[]),
        Err(FrameError::Settings("too many settings"))
    );
}

#[test]
fn writers_produce_what_the_reader_reads() {
    let mut out = Vec::new();
    put_settings(
        &mut out,
        &[(setting::QPACK_MAX_TABLE_CAPACITY, 0), (6, 65_536)],
    );
    put_goaway(&mut out, 1 << 40);
    put_head(&mut out, kind::DATA, 3);
    out.extend_from_slice(b"abc");
    assert_eq!(
        read_all(1024, &out, &[]),
        Ok(vec![
            Frame::Settings(vec![(1, 0), (6, 65_536)]),
            Frame::Goaway(1 << 40),
            Frame::Data(Bytes::from_static(b"abc")),
        ])
    );
}

#[test]
fn never_panics_on_arbitrary_input() {
    // A small deterministic generator (no dependency): every byte string
    // either reads or fails with a typed error.
    let mut next = crate::test_support::xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let state = next();
        let len = (state % 24) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|i| (state >> ((i % 8) * 8)) as u8 ^ i as u8)
            .collect();
        let _ = read_all(64, &bytes, &[len / 2]);
    }
}
