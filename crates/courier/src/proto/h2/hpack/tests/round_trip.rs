//! Our encoder's blocks decode to the same fields with our decoder, and the
//! two tables stay identical, across many blocks and table size changes.

use bytes::BytesMut;

use super::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A request's fields, with whether each is sensitive: fixed, repeated and
/// varying fields, large and binary values.
fn request(rng: &mut Rng) -> Vec<(Vec<u8>, Vec<u8>, bool)> {
    let mut list: Vec<(String, Vec<u8>, bool)> = Vec::new();
    let mut add = |name: &str, value: Vec<u8>, sensitive: bool| {
        list.push((name.to_string(), value, sensitive));
    };
    add(
        ":method",
        rng.pick(&["GET", "GET", "POST", "PUT"]).into(),
        false,
    );
    add(":scheme", rng.pick(&["https", "http"]).into(), false);
    let path = match rng.below(3) {
        0 => "/".to_string(),
        _ => format!("/items/{}", rng.below(1000)),
    };
    add(":path", path.into(), false);
    add(
        ":authority",
        rng.pick(&["a.example", "b.example:8443", "c.example"])
            .into(),
        false,
    );
    add("user-agent", b"courier/0.1".to_vec(), false);
    if rng.below(2) == 0 {
        add(
            "accept",
            rng.pick(&["*/*", "application/json"]).into(),
            false,
        );
    }
    for _ in 0..rng.below(4) {
        let name = rng.pick(&["x-tenant", "x-region", "x-trace", "accept-encoding"]);
        let value = rng.pick(&["one", "two", "three", "gzip, deflate", ""]);
        add(name, value.into(), false);
    }
    add("x-request-id", format!("{:016x}", rng.next()).into(), false);
    match rng.below(6) {
        0 => add("authorization", b"Bearer secret".to_vec(), false),
        1 => add("cookie", format!("session={}", rng.below(5)).into(), false),
        2 => add("x-api-key", b"key".to_vec(), true),
        3 => add(
            "content-length",
            rng.below(100_000).to_string().into(),
            false,
        ),
        4 => add("x-big", vec![b'x'; 200 + rng.below(3000)], false),
        _ => {
            let len = rng.below(40);
            add(
                "x-binary",
                (0..len).map(|_| rng.next() as u8).collect(),
                false,
            );
        }
    }
    list.into_iter()
        .map(|(n, v, s)| (n.into_bytes(), v, s))
        .collect()
}

#[test]
fn encoder_and_decoder_stay_in_sync() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(DEFAULT_TABLE_SIZE);
    let sizes = [0, 1, 40, 64, 100, 256, 1000, 4096, 65536];
    let mut dst = BytesMut::new();
    // What the run went through, to be sure it covered the interesting cases.
    let (mut updates, mut double_updates, mut most_entries) = (0, 0, 0);
    for block_number in 0..3000 {
        if rng.below(8) == 0 {
            // Sometimes several changes before the next block.
            for _ in 0..1 + rng.below(3) {
                encoder.set_max_table_size(sizes[rng.below(sizes.len())]);
            }
        }
        let fields = request(&mut rng);
        dst.clear();
        encoder.begin(&mut dst);
        for (name, value, sensitive) in &fields {
            encoder.field(name, value, *sensitive, &mut dst);
        }
        let expected: Fields = fields.into_iter().map(|(n, v, _)| (n, v)).collect();
        assert_eq!(
            decode(&mut decoder, &dst),
            Ok(expected),
            "block {block_number}"
        );
        assert_eq!(encoder.table().max_size(), decoder.table().max_size());
        assert_eq!(encoder.table().fields(), decoder.table().fields());
        assert_eq!(encoder.table().size(), decoder.table().size());
        let mut pos = 0;
        let mut in_block = 0;
        while dst.get(pos).is_some_and(|b| b & 0xe0 == 0x20) {
            integer::decode(&dst, &mut pos, 5).unwrap();
            in_block += 1;
        }
        updates += usize::from(in_block > 0);
        double_updates += usize::from(in_block > 1);
        most_entries = most_entries.max(decoder.table().len());
    }
    assert!(
        updates > 100 && double_updates > 10,
        "{updates} {double_updates}"
    );
    assert!(most_entries > 20, "{most_entries}");
}

#[test]
fn repeated_requests_compress_to_a_byte_per_field() {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new(DEFAULT_TABLE_SIZE);
    let fields = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/"),
        (":authority", "api.example.com"),
        ("user-agent", "courier/0.1"),
        ("accept", "application/json"),
        ("x-tenant", "blue"),
    ];
    let mut sizes = Vec::new();
    for _ in 0..3 {
        let mut dst = BytesMut::new();
        encoder.begin(&mut dst);
        for (name, value) in fields {
            encoder.field(name.as_bytes(), value.as_bytes(), false, &mut dst);
        }
        assert_eq!(decode(&mut decoder, &dst), Ok(super::fields(&fields)));
        sizes.push(dst.len());
    }
    assert_eq!(sizes[1], fields.len());
    assert_eq!(sizes[2], fields.len());
}
