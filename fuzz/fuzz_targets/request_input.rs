//! URLs and header values come from users (and often from configuration or
//! other services): parsing them must give a clear yes or no, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, &str, &[u8])| {
    let (url, name, value) = input;
    courier::fuzzing::origin_of(url);
    let accepted = courier::fuzzing::build_request(url, name, value);
    if accepted {
        // Whatever was accepted must be free of the bytes that split headers.
        assert!(!value.contains(&b'\r') && !value.contains(&b'\n'));
    }
});
