//! Arbitrary bytes as one HTTP/3 stream's frames, read whole and cut into
//! chunks: the same frames (or the same error) however they arrive, and no
//! frame but DATA over the bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u16, Vec<u16>, Vec<u8>)| {
    let (max, cuts, wire) = input;
    let cuts: Vec<usize> = cuts.into_iter().map(usize::from).collect();
    courier::fuzzing::h3_frames(&wire, &cuts, u64::from(max));
});
