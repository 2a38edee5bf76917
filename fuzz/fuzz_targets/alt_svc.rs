//! Arbitrary bytes as an `Alt-Svc` value: no panic, and every bound on
//! what is kept holds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|value: &[u8]| {
    courier::fuzzing::alt_svc(value);
});
