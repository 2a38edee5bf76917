#!/usr/bin/env bash
# The kernel side of a client's cost per request (issue 30): for each client, one after another
# against the same running server, user and system CPU per request, system calls per request by
# kind, voluntary context switches (sleeps in epoll_wait), bytes per read and per write, and the
# packets the client's own context sent, pure ACKs apart. run.sh says how much CPU a client takes;
# this says where its system time goes. Needs perf (tracepoints: run as root) and a server:
# nginx as run.sh configures it, say (`NO_INSTALL=1 ... run.sh` once and copy its nginx.conf).
#
#   bench/peers/kernel.sh http://127.0.0.1:24081/128.bin
#   CLIENTS="hyper-util courier" ROUNDS=3 bench/peers/kernel.sh https://127.0.0.1:24082/128.bin
#
# Environment: CLIENTS="h2load hyper-util courier" ROUNDS=1 DURATION=3 CLIENT_CPU=0 CONC=256
# H2LOAD_CONNS=4 COURIER_BIN=target/release/courier HYPER_BIN=bench/peers/target/release/hyper-load
# (the HTTP/2 runs of run.sh: h2load -t1 -c4 -m64; hyper-util and courier on one thread).
# RATE=R: the open loop of run.sh's RATE, R requests a second in all (h2load --rps R/H2LOAD_CONNS).
#
# A pure ACK is a 66-byte packet (IPv4, TCP timestamps, no payload). Over loopback a packet's
# receiving side runs in the sender's context too, so "pkts" counts the server's packets whose
# processing the client's system calls ran as well.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
URL="${1:?usage: kernel.sh URL (of a running HTTP/2 server)}"
CLIENTS="${CLIENTS:-h2load hyper-util courier}"
ROUNDS="${ROUNDS:-1}"
DURATION="${DURATION:-3}"
CLIENT_CPU="${CLIENT_CPU:-0}"
CONC="${CONC:-256}"
H2LOAD_CONNS="${H2LOAD_CONNS:-4}"
COURIER_BIN="${COURIER_BIN:-$ROOT/target/release/courier}"
HYPER_BIN="${HYPER_BIN:-$HERE/target/release/hyper-load}"
RATE="${RATE:-}"
WORK="$(mktemp -d /tmp/courier-kernel.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

command -v perf >/dev/null || { echo "kernel.sh needs perf" >&2; exit 1; }

client_cmd() {
    local open="${RATE:+ --rate $RATE}"
    case "$1" in
    h2load) echo "h2load -t1 -c$H2LOAD_CONNS -m$((CONC / H2LOAD_CONNS))${RATE:+ --rps $(awk "BEGIN{print $RATE / $H2LOAD_CONNS}")} -D $DURATION $URL" ;;
    hyper-util) echo "$HYPER_BIN $URL -c $CONC -d $DURATION --threads 1 --http 2 --insecure$open" ;;
    courier) echo "$COURIER_BIN bench $URL -c $CONC --threads 1 -d $DURATION --http 2 --insecure --progress none --json $WORK/courier.json$open" ;;
    *) echo "unknown client $1 (h2load hyper-util courier)" >&2; exit 1 ;;
    esac
}

# The requests a run completed, from the client's own output.
requests() {
    case "$1" in
    h2load) grep -oP 'requests: \K[0-9]+' "$WORK/out" ;;
    hyper-util) grep -oP '"requests":\K[0-9]+' "$WORK/out" ;;
    courier) python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['requests'])" "$WORK/courier.json" ;;
    esac
}

# Counted (perf stat, light: the counts are those of an undisturbed run) ...
COUNTS=raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_epoll_wait
# ... and recorded in a second run (perf record, which slows the client: its reads grow), for
# the sizes: bytes per read and per write, packets and pure ACKs.
RECORD=syscalls:sys_exit_read,syscalls:sys_exit_recvfrom,syscalls:sys_exit_write,syscalls:sys_exit_writev,syscalls:sys_exit_sendto,syscalls:sys_exit_sendmsg,net:net_dev_xmit

printf '%-10s %8s %6s %6s %6s | %5s %5s %5s %5s %6s | %6s %6s %5s %5s\n' \
    client requests usr sys total calls reads writes epoll sleeps B/read B/write pkts acks
printf '%-10s %8s %6s %6s %6s | %5s %5s %5s %5s %6s | %6s %6s %5s %5s\n' \
    '' '' 'µs' 'µs' 'µs' '/req' '/req' '/req' '/req' '/req' 'rec.' 'rec.' '/req' '/req'
for round in $(seq "$ROUNDS"); do
    for client in $CLIENTS; do
        cmd="$(client_cmd "$client")"
        # shellcheck disable=SC2086
        perf stat -x, -o "$WORK/counts" -e "$COUNTS" -- \
            /usr/bin/time -f '%U %S %w' -o "$WORK/time" taskset -c "$CLIENT_CPU" $cmd >"$WORK/out" 2>&1
        n="$(requests "$client")"
        sleep 0.3
        # shellcheck disable=SC2086
        perf record -q -o "$WORK/perf.data" -e "$RECORD" -- taskset -c "$CLIENT_CPU" $cmd >"$WORK/out" 2>&1
        n_rec="$(requests "$client")"
        perf script -i "$WORK/perf.data" -F comm,event,trace 2>/dev/null |
            python3 "$HERE/kernel_tally.py" "$client" "$n" "$(cat "$WORK/time")" "$WORK/counts" "$n_rec"
        sleep 0.3
    done
done
