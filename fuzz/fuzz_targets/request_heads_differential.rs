//! Request heads (the caller's fields, the client's defaults, withheld
//! defaults, a body's length) encoded as HTTP/2 and as HTTP/3: the server
//! must read the same regular fields from both.
#![no_main]

use libfuzzer_sys::fuzz_target;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fuzz_target!(|input: (Fields, Fields, Vec<Vec<u8>>, Option<u64>)| {
    let (headers, defaults, withheld, length) = input;
    courier::fuzzing::request_heads_differential(&headers, &defaults, &withheld, length);
});
