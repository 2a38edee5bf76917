#!/usr/bin/env bash
# Peer comparison for courier (issue 5): wrk, h2load, Go net/http, reqwest, hyper-util's legacy
# Client and `courier bench`, one after another against the same nginx, nginx pinned to CPU 0 and
# every client to CPU 1. Measures each client's CPU time per request (user+sys from
# /usr/bin/time, whole process), RPS, p50/p99, peak RSS, connections and sleeps (waits) per
# request (/usr/bin/time's voluntary context switches: a wake-up that finds more sleeps less); prints one table per
# scenario (medians of ROUNDS rounds) and writes bench/peers/results.json.
#
# HTTP/3 (issue 31): nginx has none, so the scenarios `h3` and `h2tls-cs` run against `courier serve
# --tls --http3` (the built-in server, on SERVER_CPU, 512 streams per connection as nginx here) on
# one port number: HTTP/3 over UDP and TLS HTTP/2 over TCP from the same server, for the
# ratio of the two. HTTP/3 clients: courier (`--http 3`), Go's quic-go http3 (`go`, `-http 3`)
# and reqwest's http3 (`reqwest-h3`, built with RUSTFLAGS="--cfg reqwest_unstable").
#   SCENARIOS="h2tls-cs h3" CLIENTS="go reqwest reqwest-h3 courier" bench/peers/run.sh
#
#   bench/peers/run.sh                       # defaults: ROUNDS=3 DURATION=5
#   ROUNDS=1 DURATION=3 bench/peers/run.sh   # quick look
#
# Environment (all optional):
#   ROUNDS=3 DURATION=5          rounds per (scenario, client); seconds per run
#   SCENARIOS="h1 h2c h1tls h2tls h1-1m"   subset of scenarios to run (also h2tls-cs, h3: not by default)
#   CLIENTS="wrk h2load go reqwest hyper-util courier"   subset of clients (also reqwest-h3, courier-tick)
#   H2LOAD_CONNS=4               h2load's connections for HTTP/2 (streams = 256 / H2LOAD_CONNS)
#   BIG_CONC=16                  in flight for the 1 MiB scenario
#   SERVER_CPU=0 CLIENT_CPU=1    CPUs to pin nginx and the clients to
#   PORT_H1 PORT_H2C PORT_TLS    nginx ports on 127.0.0.1 [free ones from 24080 up, below the
#                                ephemeral range]
#   PORT_CS                      courier serve's port (TCP and UDP) for h2tls-cs and h3 [free, from 24090]
#   CALLGRIND=1                  run every client under `valgrind --tool=callgrind` and compare user-space
#                                instructions per request instead of CPU time: repeatable where CPU time is
#                                noise, but blind to the kernel, and with every client slowed ~50× the server
#                                is never the bottleneck (use DURATION=8 or more)
#   COURIER_BIN=path             use this courier binary instead of building courier-cli
#   RESULTS=path                 where to write the JSON [bench/peers/results.json]
#   RATE="R1 R2 ..."             open loop (unset: the closed loop): each client starts R requests a second
#                                in all on schedule, whatever the latency, at most the scenario's in-flight
#                                count at once; each scenario runs at each rate. courier and the Rust peers
#                                `--rate R` (each request sent within 1 ms of its due time), h2load
#                                `--rps R/N` (per client, N = its -c; it sends what is due every 10 ms);
#                                wrk and the Go client have no open loop (n/a). The table gives target and
#                                achieved rates (rounds behind the schedule flagged and left out of the
#                                medians) and how busy the server's core and the server process were:
#                                compare clients where the server is not saturated (issue 30, target 2)
#   COURIER_TICK=10              with RATE, the client `courier-tick` is courier with `--tick 10ms`: it sends
#                                what has come due only every MS ms, h2load's load shape (10 ms); add it to
#                                CLIENTS beside `courier` to compare both in the same rounds
#   NO_INSTALL=1 NO_BUILD=1      skip apt-get / skip building the peer clients (a chosen peer whose
#                                binary is missing is then skipped, with the reason in its row)
#
# Only what the chosen CLIENTS and SCENARIOS use is installed or built: wrk for wrk, h2load for
# h2load, Go for go, the Rust peers for reqwest and hyper-util, openssl for the TLS scenarios,
# valgrind with CALLGRIND; nginx, taskset, ss and /usr/bin/time always.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
SCENARIOS="${SCENARIOS:-h1 h2c h1tls h2tls h1-1m}"
CLIENTS="${CLIENTS:-wrk h2load go reqwest hyper-util courier}"
H2LOAD_CONNS="${H2LOAD_CONNS:-4}"
CONC=256
BIG_CONC="${BIG_CONC:-16}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
PORT_H1="${PORT_H1:-}"
PORT_H2C="${PORT_H2C:-}"
PORT_TLS="${PORT_TLS:-}"
PORT_CS="${PORT_CS:-}"
RESULTS="${RESULTS:-$HERE/results.json}"
RATE="${RATE:-}"
COURIER_TICK="${COURIER_TICK:-10}"
TARGET="$HERE/target"
PY="$(command -v python3)"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
warn() { printf '\033[33mwarning: %s\033[0m\n' "$*" >&2; }
die() { printf '\033[31merror: %s\033[0m\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# 1. tools
# ---------------------------------------------------------------------------------------------
# Whether the word $1 is in the list $2.
among() { [[ " $2 " == *" $1 "* ]]; }

# A TLS scenario is chosen: nginx gets a TLS port and a certificate.
wants_tls() { among h1tls "$SCENARIOS" || among h2tls "$SCENARIOS"; }

install_tools() {
    local missing=()
    command -v nginx >/dev/null || missing+=(nginx)
    if among wrk "$CLIENTS"; then command -v wrk >/dev/null || missing+=(wrk); fi
    if among h2load "$CLIENTS"; then command -v h2load >/dev/null || missing+=(nghttp2-client); fi
    [ -x /usr/bin/time ] || missing+=(time)
    command -v taskset >/dev/null || missing+=(util-linux)
    command -v ss >/dev/null || missing+=(iproute2)
    if wants_tls; then command -v openssl >/dev/null || missing+=(openssl); fi
    if [ -n "${CALLGRIND:-}" ]; then command -v valgrind >/dev/null || missing+=(valgrind); fi
    [ ${#missing[@]} -eq 0 ] && return 0
    [ -n "${NO_INSTALL:-}" ] && die "missing: ${missing[*]} (NO_INSTALL is set)"
    log "installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"; then
        $sudo apt-get update
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
    fi
}

# Builds the chosen peer clients (never with NO_BUILD: client_cmd skips those it cannot find).
build_peers() {
    [ -n "${NO_BUILD:-}" ] && return 0
    mkdir -p "$TARGET"
    if among go "$CLIENTS"; then
        command -v go >/dev/null || die "the go client needs Go to build it (or leave go out of CLIENTS, or NO_BUILD=1)"
        log "building the Go load client"
        (cd "$HERE/go" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$TARGET/go-load" .)
    fi
    if among reqwest "$CLIENTS" || among hyper-util "$CLIENTS"; then
        log "building the reqwest and hyper-util load clients"
        cargo build --release --quiet --manifest-path "$HERE/reqwest/Cargo.toml" --target-dir "$TARGET"
    fi
    if among reqwest-h3 "$CLIENTS"; then
        # reqwest's http3 is behind `--cfg reqwest_unstable`; its own target dir, so the flag does
        # not rebuild (or change) the HTTP/1.1 and HTTP/2 clients.
        log "building the reqwest HTTP/3 load client"
        RUSTFLAGS="${RUSTFLAGS:-} --cfg reqwest_unstable" cargo build --release --quiet \
            --manifest-path "$HERE/reqwest/Cargo.toml" --target-dir "$TARGET/h3" --features h3 --bin reqwest-h3-load
    fi
}

# Prints nothing if the peer binary $1 is there and can run this round, else why the client is
# skipped (on fd 3). In RATE mode a binary built before the Rust peers had `--rate` (one kept
# with NO_BUILD) would fail every round on the unknown flag: its usage line must name it.
missing_binary() {
    if [ ! -x "$1" ]; then
        echo "no $1 (NO_BUILD is set, or its build failed)" >&3
        return 0
    fi
    local usage
    usage="$("$1" --help 2>&1 || true)"  # the peers print their usage and exit 2
    if [ -n "${rate:-}" ] && ! grep -q -- '--rate' <<<"$usage"; then
        echo "$1 predates --rate: rebuild it (run without NO_BUILD)" >&3
        return 0
    fi
    return 1
}

COURIER=""
COURIER_NOTE=""
build_courier() {
    if [ -n "${COURIER_BIN:-}" ]; then
        COURIER="$COURIER_BIN"
        COURIER_NOTE="given by COURIER_BIN"
        return 0
    fi
    log "building courier-cli (cargo build --release -p courier-cli)"
    if (cd "$ROOT" && cargo build --release --quiet -p courier-cli); then
        COURIER="$ROOT/target/release/courier"
        COURIER_NOTE="built from the work tree ($(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- crates 2>/dev/null || echo ', with uncommitted changes'))"
    elif [ -x "$ROOT/target/release/courier" ]; then
        COURIER="$ROOT/target/release/courier"
        COURIER_NOTE="BUILD FAILED, used the existing binary from $(date -r "$COURIER" '+%F %T')"
        warn "courier-cli did not build; using the existing $COURIER ($COURIER_NOTE)"
    else
        warn "courier-cli did not build and there is no binary: courier's rows are skipped"
        COURIER_NOTE="build failed, no binary"
    fi
}

# ---------------------------------------------------------------------------------------------
# 2. nginx
# ---------------------------------------------------------------------------------------------
WORK=""
NGINX_STARTED=""
CS_PID=""
cleanup() {
    local rc=$?
    [ -n "$CS_PID" ] && kill "$CS_PID" 2>/dev/null || true
    if [ -n "$NGINX_STARTED" ] && [ -f "$WORK/nginx.pid" ]; then
        nginx -p "$WORK" -c nginx.conf -e "$WORK/error.log" -s stop 2>/dev/null || kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
        for _ in $(seq 50); do [ -f "$WORK/nginx.pid" ] || break; sleep 0.1; done
    fi
    [ -n "$WORK" ] && [ -d "$WORK" ] && rm -rf "$WORK"
    exit $rc
}

port_free() { ! ss -ltnH "( sport = :$1 )" | grep -q .; }

# the next free port from $1 up that is not in $2
free_port() {
    local p=$1
    while ! port_free "$p" || [[ " $2 " == *" $p "* ]]; do p=$((p + 1)); done
    echo "$p"
}

start_nginx() {
    [ -n "$PORT_H1" ] || PORT_H1="$(free_port 24080 "$PORT_H2C $PORT_TLS")"
    [ -n "$PORT_H2C" ] || PORT_H2C="$(free_port $((PORT_H1 + 1)) "$PORT_H1 $PORT_TLS")"
    [ -n "$PORT_TLS" ] || PORT_TLS="$(free_port $((PORT_H2C + 1)) "$PORT_H1 $PORT_H2C")"
    for p in "$PORT_H1" "$PORT_H2C" "$PORT_TLS"; do
        port_free "$p" || die "port $p on 127.0.0.1 is taken (a previous run still going? set PORT_H1/PORT_H2C/PORT_TLS)"
    done
    mkdir -p "$WORK/www" "$WORK/tmp" "$WORK/runs"
    chmod 755 "$WORK" "$WORK/www"  # nginx workers run as nobody
    head -c 128 /dev/zero | tr '\0' 'x' >"$WORK/www/128.bin"
    head -c 1048576 /dev/urandom >"$WORK/www/1m.bin"
    chmod 644 "$WORK/www/"*
    local tls_server="" ports="$PORT_H1 $PORT_H2C"
    if wants_tls; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
            -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
            -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
        tls_server="server {
        listen 127.0.0.1:$PORT_TLS ssl http2;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
    }"
        ports+=" $PORT_TLS"
    fi
    cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 300s;
    keepalive_requests 1000000000;
    http2_max_concurrent_streams 512;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    root $WORK/www;
    server { listen 127.0.0.1:$PORT_H1; }
    server { listen 127.0.0.1:$PORT_H2C http2; }
    $tls_server
}
EOF
    log "starting nginx on CPU $SERVER_CPU (ports $PORT_H1 http/1.1, $PORT_H2C h2c$(wants_tls && echo ", $PORT_TLS tls+h2"))"
    taskset -c "$SERVER_CPU" nginx -p "$WORK" -c nginx.conf -e "$WORK/error.log"
    NGINX_STARTED=1
    for _ in $(seq 50); do
        curl_ok=1
        for p in $ports; do port_free "$p" && curl_ok=0; done
        [ $curl_ok -eq 1 ] && break
        sleep 0.1
    done
    [ $curl_ok -eq 1 ] || die "nginx did not start: $(cat "$WORK/error.log")"
}

# The scenarios on courier's built-in server (nginx speaks no HTTP/3).
wants_cs() { among h3 "$SCENARIOS" || among h2tls-cs "$SCENARIOS"; }

udp_free() { ! ss -lunH "( sport = :$1 )" | grep -q .; }

start_courier_serve() {
    [ -n "$COURIER" ] || die "h3 and h2tls-cs need courier serve ($COURIER_NOTE)"
    if [ -z "$PORT_CS" ]; then
        PORT_CS=24090
        while ! port_free "$PORT_CS" || ! udp_free "$PORT_CS" || [[ " $PORT_H1 $PORT_H2C $PORT_TLS " == *" $PORT_CS "* ]]; do
            PORT_CS=$((PORT_CS + 1))
        done
    fi
    log "starting courier serve --tls --http3 on CPU $SERVER_CPU (port $PORT_CS: TLS HTTP/2 and HTTP/3)"
    taskset -c "$SERVER_CPU" "$COURIER" serve -p "$PORT_CS" --tls --http3 --max-concurrent-streams 512 \
        --cert-out "$WORK/cs-ca.pem" >"$WORK/cs.log" 2>&1 &
    CS_PID=$!
    for _ in $(seq 50); do port_free "$PORT_CS" || break; sleep 0.1; done
    port_free "$PORT_CS" && die "courier serve did not start: $(cat "$WORK/cs.log")"
    return 0
}

# ---------------------------------------------------------------------------------------------
# 3. runs
# ---------------------------------------------------------------------------------------------
# scenario -> "url http_version in_flight h2load_args label"
scenario() {
    case "$1" in
    h1) echo "http://127.0.0.1:$PORT_H1/128.bin 1.1 $CONC --h1,-c,$CONC,-m,1" ;;
    h2c) echo "http://127.0.0.1:$PORT_H2C/128.bin 2 $CONC -c,$H2LOAD_CONNS,-m,$((CONC / H2LOAD_CONNS))" ;;
    h1tls) echo "https://127.0.0.1:$PORT_TLS/128.bin 1.1 $CONC --h1,-c,$CONC,-m,1" ;;
    h2tls) echo "https://127.0.0.1:$PORT_TLS/128.bin 2 $CONC -c,$H2LOAD_CONNS,-m,$((CONC / H2LOAD_CONNS))" ;;
    h1-1m) echo "http://127.0.0.1:$PORT_H1/1m.bin 1.1 $BIG_CONC --h1,-c,$BIG_CONC,-m,1" ;;
    h2tls-cs) echo "https://127.0.0.1:$PORT_CS/bytes/128 2 $CONC -c,$H2LOAD_CONNS,-m,$((CONC / H2LOAD_CONNS))" ;;
    h3) echo "https://127.0.0.1:$PORT_CS/bytes/128 3 $CONC -" ;;
    *) die "unknown scenario $1 (h1 h2c h1tls h2tls h1-1m h2tls-cs h3)" ;;
    esac
}
scenario_label() {
    case "$1" in
    h1) echo "HTTP/1.1 plain, 128 B, $CONC in flight" ;;
    h2c) echo "h2c (HTTP/2 prior knowledge), 128 B, $CONC in flight" ;;
    h1tls) echo "HTTP/1.1 over TLS, 128 B, $CONC in flight" ;;
    h2tls) echo "HTTP/2 over TLS (ALPN h2), 128 B, $CONC in flight" ;;
    h1-1m) echo "HTTP/1.1 plain, 1 MiB, $BIG_CONC in flight (µs/req = µs per MiB)" ;;
    h2tls-cs) echo "HTTP/2 over TLS from courier serve, 128 B, $CONC in flight" ;;
    h3) echo "HTTP/3 from courier serve (same server as h2tls-cs), 128 B, $CONC in flight" ;;
    esac
}

COURIER_HELP=""
# Prints the client's command line for a scenario, or nothing (with a reason on fd 3) to skip.
# $7: the open loop's rate (requests a second over the whole client), empty for the closed loop.
client_cmd() {
    local client=$1 url=$2 ver=$3 c=$4 h2args=$5 dir=$6 rate=$7
    local tls=""
    [[ $url == https://* ]] && tls=1
    # the Rust peers' and courier's open loop: `--rate R`, at most -c in flight
    local open="${rate:+ --rate $rate}"
    case "$client" in
    wrk)
        [ "$ver" != 1.1 ] && { echo "wrk speaks only HTTP/1.1" >&3; return; }
        [ -n "$rate" ] && { echo "n/a: wrk has no open loop (RATE is set)" >&3; return; }
        echo "wrk -t1 -c$c -d${DURATION}s --latency $url" ;;
    h2load)
        [ "$ver" = 3 ] && { echo "h2load here is built without HTTP/3" >&3; return; }
        local rps=""
        if [ -n "$rate" ]; then
            # h2load's --rps is per client (one connection each, -c of them): the total rate divided
            # by -c, at most -m in flight on each, so -c × -m in all as the others' -c
            local conns
            conns="$(grep -oP '(^|,)-c,\K[0-9]+' <<<"$h2args")"
            rps=" --rps $(awk "BEGIN{print $rate / $conns}")"
        fi
        echo "h2load -t1 ${h2args//,/ }$rps -D $DURATION $url" ;;
    go)
        [ -z "${CALLGRIND:-}" ] || { echo "Go's runtime does not run under valgrind" >&3; return; }
        [ -n "$rate" ] && { echo "n/a: the Go client has no open loop (RATE is set)" >&3; return; }
        missing_binary "$TARGET/go-load" && return
        echo "$TARGET/go-load $url -c $c -d $DURATION -threads 1 -http $ver${tls:+ -insecure}" ;;
    reqwest)
        [ "$ver" = 3 ] && { echo "HTTP/3 is the reqwest-h3 row" >&3; return; }
        missing_binary "$TARGET/release/reqwest-load" && return
        echo "$TARGET/release/reqwest-load $url -c $c -d $DURATION --threads 1 --http $ver${tls:+ --insecure}$open" ;;
    reqwest-h3)
        [ "$ver" = 3 ] || { echo "reqwest-h3 is the HTTP/3 row only" >&3; return; }
        missing_binary "$TARGET/h3/release/reqwest-h3-load" && return
        echo "$TARGET/h3/release/reqwest-h3-load $url -c $c -d $DURATION --threads 1 --http 3${tls:+ --insecure}$open" ;;
    hyper-util)
        [ "$ver" = 3 ] && { echo "hyper has no HTTP/3" >&3; return; }
        missing_binary "$TARGET/release/hyper-load" && return
        echo "$TARGET/release/hyper-load $url -c $c -d $DURATION --threads 1 --http $ver${tls:+ --insecure}$open" ;;
    courier)
        [ -n "$COURIER" ] || { echo "no courier binary ($COURIER_NOTE)" >&3; return; }
        local extra=""
        if [ "$ver" != 1.1 ] || [ -n "$tls" ]; then
            # HTTP/2 and TLS rows need `--http` (so HTTP/1.1 over TLS does not negotiate h2) and
            # `--insecure` for the self-signed certificate.
            if ! grep -qE -- '--http[ =<]' <<<"$COURIER_HELP"; then
                echo "courier bench has no --http flag yet" >&3; return
            fi
            extra=" --http $ver"
            if [ -n "$tls" ]; then
                grep -qE -- '--insecure' <<<"$COURIER_HELP" || { echo "courier bench has no --insecure flag yet" >&3; return; }
                extra+=" --insecure"
            fi
        fi
        if [ -n "$rate" ]; then
            grep -qE -- '--rate' <<<"$COURIER_HELP" || { echo "courier bench has no --rate flag yet" >&3; return; }
            # with --rate, -c is the most in flight
            extra+="$open"
        fi
        echo "$COURIER bench $url -c $c --threads 1 -d $DURATION --json $dir/courier.json$extra" ;;
    courier-tick)
        [ -n "$rate" ] || { echo "n/a: --tick is for the open loop (RATE is unset)" >&3; return; }
        grep -qE -- '--tick' <<<"$COURIER_HELP" || { echo "courier bench has no --tick flag yet" >&3; return; }
        local base
        base="$(client_cmd courier "$url" "$ver" "$c" "$h2args" "$dir" "$rate")"
        [ -n "$base" ] && echo "$base --tick ${COURIER_TICK}ms" ;;
    *) die "unknown client $client" ;;
    esac
}

# The server's process: nginx's one worker, or courier serve.
server_pid() {
    case "$1" in
    h2tls-cs | h3) echo "$CS_PID" ;;
    *) pgrep -P "$(cat "$WORK/nginx.pid")" | head -1 ;;
    esac
}

# CPU ticks (user + system) the process $1 has used, all its threads.
proc_ticks() {
    [ -n "$1" ] && awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo ""
}

# $4: the open loop's rate, empty for the closed loop
run_one() {
    local sc=$1 round=$2 client=$3 rate=${4:-}
    read -r url ver c h2args <<<"$(scenario "$sc")"
    local port="${url#*127.0.0.1:}"
    port="${port%%/*}"
    local dir="$WORK/runs/$sc${rate:+@$rate}.$client.$round"
    mkdir -p "$dir"
    local cmd reason
    cmd="$(client_cmd "$client" "$url" "$ver" "$c" "$h2args" "$dir" "$rate" 3>"$dir/skip")"
    if [ -z "$cmd" ]; then
        reason="$(cat "$dir/skip")"
        [ "$round" = 1 ] && printf '   %-10s skipped: %s\n' "$client" "$reason" >&2
        "$PY" "$HERE/report.py" skip --scenario "$sc" --client "$client" --reason "$reason" --rate "$rate" >>"$WORK/raw.jsonl"
        return 0
    fi
    # connections established to the server's port, sampled at mid-run (only one client runs)
    # (QUIC's sockets are not connected: no count for HTTP/3; courier's own JSON has it)
    (sleep "$(awk "BEGIN{print $DURATION/2}")"; [ "$ver" = 3 ] || ss -tnH state established "( dport = :$port )" | wc -l >"$dir/conns") &
    local sampler=$!
    local rc=0
    local spid
    spid="$(server_pid "$sc")"
    grep -E '^cpu[0-9]+ ' /proc/stat >"$dir/stat0"
    proc_ticks "$spid" >"$dir/server0"
    if [ -n "${CALLGRIND:-}" ]; then
        cmd="valgrind --tool=callgrind --callgrind-out-file=$dir/callgrind.out $cmd"
    fi
    # shellcheck disable=SC2086
    taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S %M %e %w %c' -o "$dir/time" $cmd >"$dir/stdout" 2>"$dir/stderr" || rc=$?
    grep -E '^cpu[0-9]+ ' /proc/stat >"$dir/stat1"
    proc_ticks "$spid" >"$dir/server1"
    wait "$sampler" 2>/dev/null || true
    echo "$cmd" >"$dir/cmd"
    "$PY" "$HERE/report.py" parse --scenario "$sc" --client "$client" --round "$round" --dir "$dir" \
        --rc "$rc" --client-cpu "$CLIENT_CPU" --server-cpu "$SERVER_CPU" --concurrency "$c" --http "$ver" --url "$url" --rate "$rate" >>"$WORK/raw.jsonl" ||
        warn "could not read the output of $client (see below)"
    if [ "$rc" -ne 0 ]; then
        warn "$client exited with $rc: $(tail -3 "$dir/stderr")"
    fi
    sleep 0.3
}

main() {
    local sc client rate
    for sc in $SCENARIOS; do scenario "$sc" >/dev/null; done
    for rate in $RATE; do
        [[ $rate =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$(awk "BEGIN{print ($rate > 0)}")" = 1 ] ||
            die "RATE: $rate is not a rate (requests a second, more than 0)"
    done
    for client in $CLIENTS; do
        case "$client" in wrk | h2load | go | reqwest | reqwest-h3 | hyper-util | courier | courier-tick) ;; *) die "unknown client $client" ;; esac
    done
    install_tools
    build_peers
    build_courier
    if [ -n "$COURIER" ]; then
        COURIER_HELP="$("$COURIER" bench --help 2>&1 || true)"
    fi
    WORK="$(mktemp -d /tmp/courier-peers.XXXXXX)"
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    start_nginx
    wants_cs && start_courier_serve
    : >"$WORK/raw.jsonl"
    local t0=$SECONDS
    for sc in $SCENARIOS; do
        # the closed loop once, or the open loop at each rate
        for rate in ${RATE:-closed}; do
            [ "$rate" = closed ] && rate=""
            log "$(scenario_label "$sc")${rate:+, open loop at $rate req/s} — $ROUNDS round(s) × ${DURATION}s per client"
            for round in $(seq "$ROUNDS"); do
                for client in $CLIENTS; do
                    run_one "$sc" "$round" "$client" "$rate"
                done
            done
        done
    done
    log "runs took $((SECONDS - t0)) s"
    "$PY" "$HERE/report.py" report --raw "$WORK/raw.jsonl" --out "$RESULTS" \
        --metric "${CALLGRIND:+instructions}" \
        --rounds "$ROUNDS" --duration "$DURATION" --server-cpu "$SERVER_CPU" --client-cpu "$CLIENT_CPU" \
        --courier-note "$COURIER_NOTE" --peers-lock "$HERE/reqwest/Cargo.lock" \
        --labels "$(for sc in $SCENARIOS; do printf '%s=%s;' "$sc" "$(scenario_label "$sc")"; done)"
    if grep -q . "$WORK/error.log" 2>/dev/null; then
        warn "nginx error.log (last lines):"
        tail -5 "$WORK/error.log" >&2
    fi
}

main "$@"
