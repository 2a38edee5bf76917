#!/usr/bin/env bash
# Large downloads over a long link (issue 19): nginx serves a 64 MiB file behind bench/delay-proxy,
# which delays each direction by RTT/2 with no bandwidth limit, and each client downloads it one
# request at a time (closed loop, one in flight, one connection) for DURATION seconds. Prints, per
# RTT, the time per download (the mean: elapsed / downloads), the throughput, and the client's CPU
# time (user + system) per GB downloaded: on a machine the client shares with nginx and the proxy,
# CPU spent per byte is throughput taken from the others.
#
#   bench/longlink.sh                               # RTTS="5 50" DURATION=10
#   RTTS=50 DURATION=6 CLIENTS="courier-h1 courier-h2c h2load" bench/longlink.sh
#
# Environment (all optional):
#   RTTS="5 50"          round trip times in ms (each direction is delayed by half)
#   DURATION=10          seconds per client and RTT
#   CLIENTS="courier-h1 courier-h2c courier-h2c-before courier-h1tls courier-h2tls courier-h2tls-before h2load go hyper-util reqwest"
#   COURIER_BIN=path     courier binary [target/release/courier, built if missing]
#   COURIER_BEFORE=path  another courier binary for the courier-h2c-before and courier-h2tls-before rows
#                        (e.g. an older commit; the server stays COURIER_BIN's)
#   SIZE_MIB=64          the file's size
#   NO_BUILD=1           do not build anything (skip rows whose binaries are missing)
#   OUT_DIR=dir          keep each client's output (courier's --json, with latency percentiles) there
#   H2_CHUNK=8k          nginx's http2_chunk_size (its DATA frame size; 8k is nginx's default)
#   SERVER=nginx         or `courier`: courier's built-in server (`courier serve`, /bytes/N, HTTP/1.1
#                        and h2c on one port, TLS on another), whose HTTP/2 sends 16 KiB DATA frames
#                        as fast as the windows allow: nginx's HTTP/2 is slower than its HTTP/1.1 on
#                        this link (h2load gets about 0.75 x courier's HTTP/1.1 there), so its rows
#                        measure the server; with this one they measure the clients
#
# courier bench has no flag for fixed HTTP/2 windows: the "before" row is another binary
# (COURIER_BEFORE, e.g. built from the commit before adaptive windows); skipped without it.
# The peers are bench/peers' load clients (Go net/http, hyper-util's legacy Client, reqwest), built
# as bench/peers/run.sh builds them; h2load gets 1 GiB windows (-w 30 -W 30).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RTTS="${RTTS:-5 50}"
DURATION="${DURATION:-10}"
CLIENTS="${CLIENTS:-courier-h1 courier-h2c courier-h2c-before courier-h1tls courier-h2tls courier-h2tls-before h2load go hyper-util reqwest}"
SIZE_MIB="${SIZE_MIB:-64}"
PEERS="$HERE/peers/target"
COURIER="${COURIER_BIN:-$ROOT/target/release/courier}"
PROXY="$ROOT/target/release/delay-proxy"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf '\033[31merror: %s\033[0m\n' "$*" >&2; exit 1; }

SERVER="${SERVER:-nginx}"
case "$SERVER" in
nginx) command -v nginx >/dev/null || die "nginx is needed (apt-get install nginx)" ;;
courier) ;;
*) die "SERVER is nginx or courier, not $SERVER" ;;
esac
if [ -z "${NO_BUILD:-}" ]; then
    log "building delay-proxy and courier-cli"
    (cd "$ROOT" && cargo build --release --quiet -p delay-proxy -p courier-cli)
    if [[ " $CLIENTS " == *" go "* ]] && [ ! -x "$PEERS/go-load" ]; then
        (cd "$HERE/peers/go" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$PEERS/go-load" .)
    fi
    if [[ " $CLIENTS " == *" reqwest "* || " $CLIENTS " == *" hyper-util "* ]] && [ ! -x "$PEERS/release/reqwest-load" ]; then
        cargo build --release --quiet --manifest-path "$HERE/peers/reqwest/Cargo.toml" --target-dir "$PEERS"
    fi
fi
[ -x "$PROXY" ] || die "no $PROXY (cargo build --release -p delay-proxy)"

WORK="$(mktemp -d /tmp/courier-longlink.XXXXXX)"
PIDS=()
cleanup() {
    local rc=$?
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! ss -ltnH "( sport = :$1 )" | grep -q .; }
next_port=25080
# sets PORT to the next free port from next_port up (no subshell: next_port must advance)
take_port() {
    while ! port_free "$next_port"; do next_port=$((next_port + 1)); done
    PORT=$next_port
    next_port=$((next_port + 1))
}

take_port; H1=$PORT
take_port; H2C=$PORT
take_port; TLS=$PORT
if [ "$SERVER" = courier ]; then
    # One port for HTTP/1.1 and h2c (the server tells them apart), one for TLS.
    H2C=$H1
    FILE="/bytes/$((SIZE_MIB << 20))"
    "$COURIER" serve -p "$H1" >"$WORK/serve.out" 2>&1 </dev/null &
    PIDS+=($!)
    "$COURIER" serve -p "$TLS" --tls --cert-out "$WORK/serve-ca.pem" >"$WORK/serve-tls.out" 2>&1 </dev/null &
    PIDS+=($!)
    for _ in $(seq 50); do port_free "$TLS" || break; sleep 0.1; done
else
FILE=/big.bin
mkdir -p "$WORK/www" "$WORK/tmp"
chmod 755 "$WORK" "$WORK/www"
head -c $((SIZE_MIB << 20)) /dev/urandom >"$WORK/www/big.bin"
chmod 644 "$WORK/www/big.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    http2_chunk_size ${H2_CHUNK:-8k};
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    root $WORK/www;
    server { listen 127.0.0.1:$H1; }
    server { listen 127.0.0.1:$H2C http2; }
    server {
        listen 127.0.0.1:$TLS ssl http2;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
    }
}
EOF
# Its output, and the proxies', go to files: a daemon holding the caller's pipe would keep a
# `| grep` waiting after this script ends.
nginx -p "$WORK" -c nginx.conf -e "$WORK/error.log" >"$WORK/nginx.out" 2>&1 </dev/null
for _ in $(seq 50); do port_free "$TLS" || break; sleep 0.1; done
fi
SERVER_PIDS=(${PIDS[@]+"${PIDS[@]}"})

# client -> "command" for a proxied base (scheme://host:port), or nothing to skip
client_cmd() {
    local client=$1 h1=$2 h2c=$3 tls=$4 json=$5
    local c="-c 1 --threads 1 -d $DURATION --progress none --json $json"
    case "$client" in
    courier-h1) echo "$COURIER bench $h1$FILE $c --http 1.1" ;;
    courier-h2c) echo "$COURIER bench $h2c$FILE $c --http 2" ;;
    courier-h2c-before) [ -x "${COURIER_BEFORE:-}" ] && echo "$COURIER_BEFORE bench $h2c$FILE $c --http 2" ;;
    courier-h1tls) echo "$COURIER bench ${tls/http:/https:}$FILE $c --http 1.1 --insecure" ;;
    courier-h2tls) echo "$COURIER bench ${tls/http:/https:}$FILE $c --http 2 --insecure" ;;
    courier-h2tls-before) [ -x "${COURIER_BEFORE:-}" ] && echo "$COURIER_BEFORE bench ${tls/http:/https:}$FILE $c --http 2 --insecure" ;;
    h2load) command -v h2load >/dev/null && echo "h2load -c 1 -m 1 -t 1 -w 30 -W 30 -D $DURATION $h2c$FILE" ;;
    go) [ -x "$PEERS/go-load" ] && echo "$PEERS/go-load $h2c$FILE -c 1 -d $DURATION -threads 1 -http 2" ;;
    hyper-util) [ -x "$PEERS/release/hyper-load" ] && echo "$PEERS/release/hyper-load $h2c$FILE -c 1 -d $DURATION --threads 1 --http 2" ;;
    reqwest) [ -x "$PEERS/release/reqwest-load" ] && echo "$PEERS/release/reqwest-load $h2c$FILE -c 1 -d $DURATION --threads 1 --http 2" ;;
    *) die "unknown client $client" ;;
    esac
    return 0
}

label() {
    case "$1" in
    courier-h1) echo "courier, HTTP/1.1 (same link, control)" ;;
    courier-h2c) echo "courier, h2c (adaptive windows)" ;;
    courier-h2c-before) echo "courier before (COURIER_BEFORE), h2c" ;;
    courier-h1tls) echo "courier, TLS+HTTP/1.1" ;;
    courier-h2tls) echo "courier, TLS+h2 (adaptive windows)" ;;
    courier-h2tls-before) echo "courier before (COURIER_BEFORE), TLS+h2" ;;
    h2load) echo "h2load, h2c (1 GiB windows)" ;;
    go) echo "Go net/http, h2c" ;;
    hyper-util) echo "hyper-util, h2c" ;;
    reqwest) echo "reqwest, h2c" ;;
    esac
}

# stdout + json file -> "downloads elapsed_s"
parse() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
client, out, js = sys.argv[1], open(sys.argv[2], errors="replace").read(), sys.argv[3]
if client.startswith("courier"):
    j = json.load(open(js))
    print(j["requests"], j["duration_s"])
elif client == "h2load":
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
    m = re.search(r"finished in ([\d.]+)(us|ms|s),", out)
    n = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    print(n.group(1), float(m.group(1)) * units[m.group(2)])
else:
    j = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    print(j["requests"], j["elapsed_s"])
PY
}

for rtt in $RTTS; do
    half="$(awk "BEGIN{print $rtt/2}")"
    take_port; P1=$PORT
    take_port; P2=$PORT
    take_port; P3=$PORT
    for pair in "$P1 $H1" "$P2 $H2C" "$P3 $TLS"; do
        read -r from to <<<"$pair"
        "$PROXY" "127.0.0.1:$from" "127.0.0.1:$to" "$half" >>"$WORK/proxy.log" 2>&1 </dev/null &
        PIDS+=($!)
    done
    for _ in $(seq 50); do port_free "$P3" || break; sleep 0.1; done
    log "$SIZE_MIB MiB at $rtt ms RTT (delay-proxy: $half ms each way), one request at a time, ${DURATION}s per client"
    printf '\n| client, %s MiB at %s ms RTT | downloads | time per download | throughput | client CPU per GB |\n|---|---:|---:|---:|---:|\n' "$SIZE_MIB" "$rtt"
    for client in $CLIENTS; do
        json="$WORK/$client.$rtt.json"
        cmd="$(client_cmd "$client" "http://127.0.0.1:$P1" "http://127.0.0.1:$P2" "http://127.0.0.1:$P3" "$json")"
        if [ -z "$cmd" ]; then
            printf '| %s | skipped (no binary) | | | |\n' "$(label "$client")"
            continue
        fi
        echo "$cmd" >>"$WORK/commands"
        # shellcheck disable=SC2086
        # The client's CPU (user + system seconds), from /usr/bin/time's last stderr line.
        /usr/bin/time -f 'cpu %U %S' timeout "$((DURATION * 3 + 30))" $cmd >"$WORK/out" 2>"$WORK/err" </dev/null && ok=1 || ok=""
        cpu="$(awk '$1 == "cpu" { s = $2 + $3 } END { print s + 0 }' "$WORK/err")"
        if [ -n "${OUT_DIR:-}" ]; then
            mkdir -p "$OUT_DIR"
            cp "$WORK/out" "$OUT_DIR/$client.$rtt.out"
            [ -f "$json" ] && cp "$json" "$OUT_DIR/"
        fi
        if [ -z "$ok" ]; then
            printf '| %s | failed: %s | | | |\n' "$(label "$client")" "$(grep -v '^cpu ' "$WORK/err" | tail -1)"
            continue
        fi
        read -r n secs <<<"$(parse "$client" "$WORK/out" "$json")"
        awk -v l="$(label "$client")" -v n="$n" -v s="$secs" -v mib="$SIZE_MIB" -v cpu="$cpu" 'BEGIN {
            if (n == 0) { printf "| %s | 0 | | | |\n", l; exit }
            gb = n * mib * 1.048576 / 1000
            printf "| %s | %d | %.0f ms | %.0f MB/s | %.2f s |\n", l, n, 1000 * s / n, 1000 * gb / s, cpu / gb }'
    done
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        [[ " ${SERVER_PIDS[*]-} " == *" $p "* ]] || kill "$p" 2>/dev/null || true
    done
    PIDS=(${SERVER_PIDS[@]+"${SERVER_PIDS[@]}"})
done
echo
log "commands:"
sed 's/^/    /' "$WORK/commands" >&2
