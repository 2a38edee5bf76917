#!/usr/bin/env bash
# courier-http's public API against its snapshot, crates/courier/api.txt, so
# every API change is deliberate and shows in review.
#   .ci/public-api.sh           fails, with the diff, when the API changed
#   .ci/public-api.sh --bless   writes the snapshot after a deliberate change
# The rustdoc JSON comes from the stable toolchain (.ci/rustdoc-unstable: CI has
# no nightly); .ci/public-api/ reads it (see its Cargo.toml for the format pin).
# All features: feature-gated items are API too (the internal hooks are
# doc(hidden), so rustdoc leaves them out).
set -euo pipefail
cd "$(dirname "$0")/.."

target="$(cargo metadata --format-version 1 --no-deps --locked \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
RUSTDOC="$PWD/.ci/rustdoc-unstable" cargo rustdoc -q -p courier-http --lib --all-features --locked \
    -- -Z unstable-options --output-format json
cargo run -q --locked --manifest-path .ci/public-api/Cargo.toml --target-dir "$target/ci-tools" \
    -- "$target/doc/courier.json" >"$target/api.txt"

if [ "${1:-}" = "--bless" ]; then
    cp "$target/api.txt" crates/courier/api.txt
    echo "public-api: wrote crates/courier/api.txt ($(wc -l <crates/courier/api.txt) items)"
elif diff -u crates/courier/api.txt "$target/api.txt"; then
    echo "public-api: unchanged ($(wc -l <crates/courier/api.txt) items)"
else
    echo "public-api: courier-http's public API differs from crates/courier/api.txt (diff above)."
    echo "If the change is deliberate, regenerate the snapshot and commit it: .ci/public-api.sh --bless"
    exit 1
fi
