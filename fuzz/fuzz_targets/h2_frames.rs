//! The HTTP/2 frame watcher reads every byte a server sends: it must never
//! panic, and where the reads happen to split the stream must not matter.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Vec<u8>, Vec<u16>)| {
    let (data, cuts) = input;
    let mut cuts: Vec<usize> = cuts.into_iter().map(usize::from).collect();
    cuts.sort_unstable();
    let whole = courier::fuzzing::watch_frames(&data, &[]);
    let pieces = courier::fuzzing::watch_frames(&data, &cuts);
    assert_eq!(whole, pieces, "chunking changed the outcome");
});
