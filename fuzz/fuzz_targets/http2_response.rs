//! Arbitrary bytes as an HTTP/2 server's answer (after its SETTINGS), read
//! through the public API (`send`, then `bytes()`) over a connection the
//! pool adopted: a response or a typed error — no panic, no hang — and the
//! pool clean after. Run with the resource limits of issue 14, e.g.
//! `cargo fuzz run http2_response -- -rss_limit_mb=256 -malloc_limit_mb=64`,
//! so an allocation sized by the peer is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _ = rt.block_on(courier::fuzzing::respond_with_http2(data));
});
