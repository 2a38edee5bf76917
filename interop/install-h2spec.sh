#!/usr/bin/env bash
# Installs h2specd, summerwind/h2spec v2.2.1's HTTP/2 client conformance
# suite, which crates/courier/tests/h2spec.rs runs against courier.
#
# Idempotent: an h2specd already built from that version is kept. Prints the
# binary's path as the only line on stdout (progress goes to stderr), so
#     export H2SPECD="$(interop/install-h2spec.sh)"
# points the test at it. Installs into $H2SPEC_BIN_DIR, else /usr/local/bin
# when writable, else ~/.local/bin. Needs Go (>= 1.19; Debian's golang-go is
# installed when run as root and no go is found). Exits non-zero on failure.
set -euo pipefail

MODULE=github.com/summerwind/h2spec
VERSION=v2.2.1+incompatible

log() { echo "install-h2spec: $*" >&2; }

if [ -n "${H2SPEC_BIN_DIR:-}" ]; then
    dest="$H2SPEC_BIN_DIR"
elif [ -w /usr/local/bin ]; then
    dest=/usr/local/bin
else
    dest="$HOME/.local/bin"
fi
mkdir -p "$dest"
bin="$dest/h2specd"

find_go() {
    if command -v go >/dev/null 2>&1; then
        command -v go
    elif [ -x /usr/local/go/bin/go ]; then
        echo /usr/local/go/bin/go
    else
        return 1
    fi
}

go_bin="$(find_go || true)"
if [ -z "$go_bin" ] && [ ! -x "$bin" ]; then
    if [ "$(id -u)" = 0 ]; then
        log "no go found: installing Debian's golang-go"
        (apt-get install -y golang-go >/dev/null 2>&1 \
            || { apt-get update >/dev/null && apt-get install -y golang-go >/dev/null; }) \
            || { log "could not install golang-go"; exit 1; }
        go_bin="$(find_go)"
    else
        log "no go found and not root: install Go, or set H2SPECD to an h2specd binary"
        exit 1
    fi
fi

# Already installed from this version: nothing to do.
if [ -x "$bin" ]; then
    if [ -z "$go_bin" ] || "$go_bin" version -m "$bin" 2>/dev/null | grep -q "$MODULE[[:space:]]*$VERSION"; then
        log "h2specd $VERSION already at $bin"
        echo "$bin"
        exit 0
    fi
fi

# The module predates Go modules (no go.mod): its dependencies are pinned
# here, to versions that build with Go 1.19 and later, so the build does not
# follow whatever is latest.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/go.mod" <<GOMOD
module courier.invalid/h2specd

go 1.19

require (
	$MODULE $VERSION
	github.com/fatih/color v1.16.0
	github.com/spf13/cobra v1.8.0
	golang.org/x/net v0.17.0
)
GOMOD
log "building h2specd $VERSION with $("$go_bin" version)"
(
    cd "$work"
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local
    "$go_bin" build -o "$work/h2specd" "$MODULE/cmd/h2specd" >&2
) || { log "build failed"; exit 1; }
install -m 0755 "$work/h2specd" "$bin"
"$bin" --version >/dev/null || { log "the built h2specd does not run"; exit 1; }
log "installed $bin"
echo "$bin"
