//! RFC 7541 Appendix C: each block's fields, then the dynamic table
//! (newest first) and its size.

use super::*;

struct Step<'a> {
    block: &'a str,
    fields: &'a [(&'a str, &'a str)],
    table: &'a [(&'a str, &'a str)],
    size: usize,
}

fn run(table_size: usize, steps: &[Step<'_>]) {
    let mut decoder = Decoder::new(table_size);
    for (i, step) in steps.iter().enumerate() {
        let got = decode(&mut decoder, &hex(step.block));
        assert_eq!(got, Ok(fields(step.fields)), "block {i}");
        assert_eq!(
            decoder.table().fields(),
            fields(step.table),
            "table after {i}"
        );
        assert_eq!(decoder.table().size(), step.size, "size after {i}");
    }
}

#[test]
fn c2_1_literal_with_indexing() {
    run(
        4096,
        &[Step {
            block: "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            fields: &[("custom-key", "custom-header")],
            table: &[("custom-key", "custom-header")],
            size: 55,
        }],
    );
}

#[test]
fn c2_2_literal_without_indexing() {
    run(
        4096,
        &[Step {
            block: "040c 2f73 616d 706c 652f 7061 7468",
            fields: &[(":path", "/sample/path")],
            table: &[],
            size: 0,
        }],
    );
}

#[test]
fn c2_3_literal_never_indexed() {
    run(
        4096,
        &[Step {
            block: "1008 7061 7373 776f 7264 0673 6563 7265 74",
            fields: &[("password", "secret")],
            table: &[],
            size: 0,
        }],
    );
}

#[test]
fn c2_4_indexed() {
    run(
        4096,
        &[Step {
            block: "82",
            fields: &[(":method", "GET")],
            table: &[],
            size: 0,
        }],
    );
}

const REQUEST_1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQUEST_2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQUEST_3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQUEST_TABLE_1: &[(&str, &str)] = &[(":authority", "www.example.com")];
const REQUEST_TABLE_2: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
const REQUEST_TABLE_3: &[(&str, &str)] = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

fn requests(blocks: [&str; 3]) {
    run(
        4096,
        &[
            Step {
                block: blocks[0],
                fields: REQUEST_1,
                table: REQUEST_TABLE_1,
                size: 57,
            },
            Step {
                block: blocks[1],
                fields: REQUEST_2,
                table: REQUEST_TABLE_2,
                size: 110,
            },
            Step {
                block: blocks[2],
                fields: REQUEST_3,
                table: REQUEST_TABLE_3,
                size: 164,
            },
        ],
    );
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

const DATE_1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE_2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

/// C.5 and C.6: a 256-byte table, so the later responses evict.
fn responses(blocks: [&str; 3]) {
    run(
        256,
        &[
            Step {
                block: blocks[0],
                fields: &[
                    (":status", "302"),
                    ("cache-control", "private"),
                    ("date", DATE_1),
                    ("location", LOCATION),
                ],
                table: &[
                    ("location", LOCATION),
                    ("date", DATE_1),
                    ("cache-control", "private"),
                    (":status", "302"),
                ],
                size: 222,
            },
            Step {
                block: blocks[1],
                fields: &[
                    (":status", "307"),
                    ("cache-control", "private"),
                    ("date", DATE_1),
                    ("location", LOCATION),
                ],
                table: &[
                    (":status", "307"),
                    ("location", LOCATION),
                    ("date", DATE_1),
                    ("cache-control", "private"),
                ],
                size: 222,
            },
            Step {
                block: blocks[2],
                fields: &[
                    (":status", "200"),
                    ("cache-control", "private"),
                    ("date", DATE_2),
                    ("location", LOCATION),
                    ("content-encoding", "gzip"),
                    ("set-cookie", COOKIE),
                ],
                table: &[
                    ("set-cookie", COOKIE),
                    ("content-encoding", "gzip"),
                    ("date", DATE_2),
                ],
                size: 215,
            },
        ],
    );
}

#[test]
fn c5_responses_without_huffman() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d
         4d6f 6e2c 2032 3120 4f63 7420 3230 3133
         2032 303a 3133 3a32 3120 474d 546e 1768
         7474 7073 3a2f 2f77 7777 2e65 7861 6d70
         6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420
         3230 3133 2032 303a 3133 3a32 3220 474d
         54c0 5a04 677a 6970 7738 666f 6f3d 4153
         444a 4b48 514b 425a 584f 5157 454f 5049
         5541 5851 5745 4f49 553b 206d 6178 2d61
         6765 3d33 3630 303b 2076 6572 7369 6f6e
         3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe
         9410 54d4 44a8 2005 9504 0b81 66e0 82a6
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8
         e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595
         040b 8166 e084 a62d 1bff c05a 839b d9ab
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b
         3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
         9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ]);
}
