//! Arbitrary bytes as an HTTP/1.1 server's answer: the client must return a
//! response or a typed error — no panic, no hang — and leave its pool clean.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(courier::fuzzing::respond_with(data));
});
