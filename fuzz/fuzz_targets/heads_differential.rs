//! Response heads as HTTP/2 (HPACK) and as HTTP/3 (QPACK) over one
//! connection each: both readings must agree, head after head.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|heads: Vec<Vec<(Vec<u8>, Vec<u8>)>>| {
    courier::fuzzing::heads_differential(&heads);
});
