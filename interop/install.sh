#!/usr/bin/env bash
# Installs what the programmable interop servers need; safe to run again.
#   - hypercorn (pinned in requirements.txt) for servers/hypercorn/serve.py,
#     aioquic for its HTTP/3, and websockets for the WebSocket tests
#     (crates/courier/tests/it/upgrade)
#   - builds servers/go/interop-server (net/http, and quic-go's http3 for its
#     HTTP/3 port: pinned in go.mod/go.sum, fetched from the Go module proxy)
#   - checks that Node (built-in http/http2, >= 18.11) is present
# Exits non-zero when any of them cannot be made ready.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore   # CI runs as root; the warning is noise
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
NODE="${NODE:-node}"

echo "== interop: python requirements"
# Debian 12's python3 is "externally managed" (PEP 668); this is a throwaway
# CI machine, so fall back to installing beside the system packages.
pip_log="$(mktemp)"
trap 'rm -f "$pip_log"' EXIT
if ! "$PYTHON" -m pip install --quiet --disable-pip-version-check -r requirements.txt 2>"$pip_log"; then
    if grep -q externally-managed "$pip_log"; then
        echo "pip: externally managed environment, retrying with --break-system-packages"
        "$PYTHON" -m pip install --quiet --disable-pip-version-check --break-system-packages -r requirements.txt
    else
        cat "$pip_log" >&2
        exit 1
    fi
fi
"$PYTHON" -c 'import importlib.metadata as m; print("hypercorn", m.version("hypercorn"), "h2", m.version("h2"), "h11", m.version("h11"), "websockets", m.version("websockets"), "aioquic", m.version("aioquic"))'

echo "== interop: Go server"
[ -x "$GO" ] || { echo "go not found (set GO=/path/to/go)" >&2; exit 1; }
"$GO" version
(cd servers/go && "$GO" build -trimpath -mod=readonly -o interop-server .)
echo "built $(pwd)/servers/go/interop-server"

echo "== interop: Node"
command -v "$NODE" >/dev/null || { echo "node not found (set NODE=/path/to/node)" >&2; exit 1; }
"$NODE" -e '
const [maj, min] = process.versions.node.split(".").map(Number);
if (maj < 18 || (maj === 18 && min < 11)) { console.error("node " + process.version + " lacks writeEarlyHints; need >= 18.11"); process.exit(1); }
console.log("node " + process.version + " (built-in http, http2; no npm packages)");'
echo "== interop: ready"
