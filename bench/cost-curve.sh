#!/usr/bin/env bash
# The cost curve (issue 30, target 5): what a request and a connection cost `courier bench` as the
# connections (HTTP/1.1) or the streams on one connection (HTTP/2) go from 1 to 10,000 / 1,000.
#
# `courier serve` (one process, pinned to SERVER_CPU, SETTINGS_MAX_CONCURRENT_STREAMS 1000 so one
# HTTP/2 connection carries every stream) answers; the client runs on one thread pinned to
# CLIENT_CPU. For each point two runs:
#   - CPU: a closed loop, `courier bench URL/bytes/128 -c N --threads 1 --warmup W -d D` (HTTP/2:
#     `--connections 1 --streams N`); CPU per request is the JSON's `process.cpu_seconds` (the
#     measured window, warmup and connection setup left out) ÷ responses. The run's peak resident
#     set is kept too.
#   - memory: long polls, `courier bench URL --scenario longpoll -c N --delay 2s --threads 1`
#     (HTTP/2: `--connections 1 --streams N`): the heap per connection (opened idle, before the
#     polls) and heap and RSS per request in flight, from the JSON's `longpoll` block.
# Each round runs every point once, rounds alternate the order (up, then down); the figure uses
# the medians. Raw JSON lines go to RAW; bench/cost-curve.py turns them into the table and SVG.
#
#   bench/cost-curve.sh                                    # ROUNDS=3: about 6 minutes
#   ROUNDS=1 DURATION=2 H1="1 100" H2="1 100" bench/cost-curve.sh   # a quick look
#
# Environment (all optional):
#   ROUNDS=3 DURATION=4 WARMUP=2       rounds; seconds measured per CPU run; warmup seconds
#   WARMUP_BIG=8                       warmup from 2,000 connections on: a burst of 10,000 connects
#                                      overflows the kernel's SYN queue (tcp_max_syn_backlog), and
#                                      each dropped SYN waits a 1 s, 2 s, 4 s retransmission
#   H1="1 10 100 1000 10000"           HTTP/1.1 connections (one request in flight on each)
#   H2="1 10 100 1000"                 HTTP/2 streams on one connection
#   SERVER_CPU=0 CLIENT_CPU=1          where the server and the client are pinned
#   COURIER_BIN=path                   the courier binary [target/release/courier, built if absent]
#   RAW=path                           raw runs, one JSON object a line [docs/src/cost-curve.raw.jsonl]
#   NO_PLOT=1                          leave bench/cost-curve.py out
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-4}"
WARMUP="${WARMUP:-2}"
WARMUP_BIG="${WARMUP_BIG:-8}"
H1="${H1:-1 10 100 1000 10000}"
H2="${H2:-1 10 100 1000}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
RAW="${RAW:-$ROOT/docs/src/cost-curve.raw.jsonl}"
BIN="$(realpath "${COURIER_BIN:-$ROOT/target/release/courier}")"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf '\033[31merror: %s\033[0m\n' "$*" >&2; exit 1; }

if [ -z "${COURIER_BIN:-}" ]; then
    log "building courier-cli (cargo build --release -p courier-cli)"
    (cd "$ROOT" && cargo build --release --quiet -p courier-cli)
fi
[ -x "$BIN" ] || die "no courier binary at $BIN"
command -v taskset >/dev/null || die "taskset is missing (util-linux)"

# 10,000 connections need 10,000 descriptors on each side, and some to spare.
if [ "$(ulimit -n)" -lt 24000 ]; then ulimit -n 24000 2>/dev/null || true; fi
max_h1=0
for n in $H1; do [ "$n" -gt "$max_h1" ] && max_h1=$n; done
[ "$(ulimit -n)" -gt $((max_h1 + 200)) ] || die "ulimit -n is $(ulimit -n): too few for $max_h1 connections"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    local rc=$?
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT INT TERM

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
log "courier serve on 127.0.0.1:$PORT, CPU $SERVER_CPU, 1000 streams per HTTP/2 connection"
(cd "$WORK" && ulimit -n "$(ulimit -n)" && exec taskset -c "$SERVER_CPU" "$BIN" serve -p "$PORT" --max-concurrent-streams 1000 >"$WORK/serve.log" 2>&1) &
SERVER_PID=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || die "courier serve did not start: $(cat "$WORK/serve.log")"

mkdir -p "$(dirname "$RAW")"
: >"$RAW"
BASE="http://127.0.0.1:$PORT"

# One run: kind (cpu|mem), protocol (h1|h2), N, round. Appends one JSON line to RAW.
run() {
    local kind=$1 proto=$2 n=$3 round=$4 out="$WORK/run.json" load
    if [ "$proto" = h1 ]; then load=(--http 1.1 -c "$n"); else load=(--http 2 --connections 1 --streams "$n"); fi
    local cmd
    local warmup=$WARMUP
    [ "$n" -ge 2000 ] && warmup=$WARMUP_BIG
    if [ "$kind" = cpu ]; then
        cmd=("$BIN" bench "$BASE/bytes/128" "${load[@]}" --threads 1 --warmup "$warmup" -d "$DURATION" --progress none --json "$out")
    else
        cmd=("$BIN" bench "$BASE" --scenario longpoll --delay 2s "${load[@]}" --threads 1 --progress none --json "$out")
    fi
    rm -f "$out"
    local load_avg
    load_avg="$(cut -d' ' -f1 /proc/loadavg)"
    if ! taskset -c "$CLIENT_CPU" "${cmd[@]}" >"$WORK/run.out" 2>&1; then
        echo "run failed: ${cmd[*]}" >&2
        tail -5 "$WORK/run.out" >&2
        return 0
    fi
    python3 - "$out" "$kind" "$proto" "$n" "$round" "$load_avg" "${cmd[*]}" >>"$RAW" <<'EOF'
import json, sys
path, kind, proto, n, rnd, load, cmd = sys.argv[1:]
d = json.load(open(path))
row = {"kind": kind, "proto": proto, "n": int(n), "round": int(rnd), "load": float(load),
       "cmd": cmd.replace(sys.argv[1], "run.json")}
p = d["process"]
row.update(rps=d["rps"], responses=d["responses"], errors=d["errors"],
           cpu_seconds=p["cpu_seconds"], rss_max_mb=p["rss_max_mb"],
           connections=d["connections_established"])
if d.get("longpoll"):
    lp = d["longpoll"]
    row.update(peak_in_flight=lp["peak_in_flight"],
               heap_per_connection=lp["heap_per_connection_bytes"],
               heap_per_request=lp["heap_per_request_bytes"],
               rss_per_request=lp["memory_per_request_bytes"],
               rss_before_mb=lp["rss_before_mb"], rss_peak_mb=lp["rss_peak_mb"])
print(json.dumps(row))
EOF
    tail -1 "$RAW" >&2
}

points() {
    local order=$1 p n
    local list=()
    for n in $H1; do list+=("h1:$n"); done
    for n in $H2; do list+=("h2:$n"); done
    if [ "$order" = down ]; then
        local rev=()
        for ((i = ${#list[@]} - 1; i >= 0; i--)); do rev+=("${list[$i]}"); done
        list=("${rev[@]}")
    fi
    printf '%s\n' "${list[@]}"
}

for round in $(seq "$ROUNDS"); do
    order=up
    [ $((round % 2)) -eq 0 ] && order=down
    log "round $round of $ROUNDS ($order), load $(cut -d' ' -f1-3 /proc/loadavg)"
    for point in $(points "$order"); do
        run cpu "${point%%:*}" "${point#*:}" "$round"
        run mem "${point%%:*}" "${point#*:}" "$round"
    done
done

log "raw runs in $RAW"
[ -n "${NO_PLOT:-}" ] || python3 "$HERE/cost-curve.py" "$RAW"
