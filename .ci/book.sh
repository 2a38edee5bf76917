#!/usr/bin/env bash
# The book (docs/): installs mdBook if missing, builds the book, and checks
# its links and the README's (.ci/book-links.py: relative links and #anchors
# must resolve; external links are not fetched). The book's and the README's
# Rust blocks are doc-tests (crates/courier/src/book.rs), run by `cargo test`.
#
#   .ci/book.sh install   # only install mdBook (CI starts this in the background)
#   .ci/book.sh           # install if need be, build, check
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned, without the default features (the `serve` and `watch` commands'
# web server and file watcher): CI only builds.
MDBOOK_VERSION=0.5.4

install() {
    if command -v mdbook >/dev/null 2>&1 && mdbook --version | grep -q "v$MDBOOK_VERSION"; then
        return 0
    fi
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --quiet
}

if [ "${1:-}" = install ]; then
    install
    exit
fi
install
rm -rf docs/book
mdbook build docs
python3 .ci/book-links.py docs/book README.md
