//! Arbitrary bytes as a server's HPACK header blocks, one after another on
//! one connection (the dynamic table carries over): decoding must end in a
//! response head or a typed error, never a panic, whatever came before.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|blocks: Vec<Vec<u8>>| {
    let blocks: Vec<&[u8]> = blocks.iter().map(Vec::as_slice).collect();
    courier::fuzzing::hpack_blocks(&blocks);
});
