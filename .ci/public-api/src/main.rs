//! `courier-public-api JSON`: the public API in a rustdoc JSON file, one item
//! a line, sorted, for a snapshot that CI diffs so API changes are deliberate.

use std::error::Error;

/// Auto-trait lines that describe the compiler rather than the API: rustc's
/// internal markers, which come and go with the toolchain.
const TOOLCHAIN_MARKERS: [&str; 2] = ["core::marker::Freeze", "core::marker::UnsafeUnpin"];

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: courier-public-api RUSTDOC_JSON")?;
    // Blanket impls (`impl<T> From<T> for T`, and every dependency's
    // extension traits) are left out: they follow the dependency tree, not
    // our API. Auto traits stay: losing `Send` or `Sync` breaks callers.
    let api = public_api::Builder::from_rustdoc_json(path)
        .omit_blanket_impls(true)
        .build()?;
    for item in api.items() {
        let line = item.to_string();
        if TOOLCHAIN_MARKERS.iter().any(|m| line.contains(m)) {
            continue;
        }
        println!("{line}");
    }
    Ok(())
}
