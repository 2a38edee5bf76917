//! Arbitrary bytes as an HTTP/2 server's answer, cut into arbitrary reads:
//! the client's frame decoder, HPACK and stream state must return a response
//! or a typed error — no panic, no hang — wherever the reads split the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Vec<u8>, Vec<u16>)| {
    let (data, cuts) = input;
    let mut cuts: Vec<usize> = cuts.into_iter().map(usize::from).collect();
    cuts.sort_unstable();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(courier::fuzzing::http2_respond_with(&data, &cuts));
});
