#!/usr/bin/env bash
# Downloads over an emulated long link with real TCP on it (issue 30, item 3). bench/delay-proxy terminates TCP,
# so behind it HTTP/1.1 never shows TCP's slow start; this script instead puts `courier serve` in a network
# namespace of its own, joined to the client's namespace by two TUN devices and a delay line, which
# holds each IP packet ONE_WAY ms and drops LOSS % of them (bench/tun-delay.c; this kernel has no netem qdisc). Both kernels'
# TCP (slow start, congestion control, socket buffers) run end to end over that path.
#
# For each link, ROUNDS rounds; each round runs every config once per N (the order rotated each round), each
# a whole `courier bench URL -n N -c 1 --threads 1 --http H --progress none [--insecure]` process timed from
# start to exit (connection setup included). Prints per config: the median, MB/s, the ratio of medians
# against HTTP/1.1 with the same TLS-ness (HTTP/1.1's time / this one's) and the median of the per-round
# ratios, the client's median CPU (user + system) per run; every run's time follows.
#
#   bench/netem-link.sh                                   # LINKS="50:0 50:0.1 5:0 5:0.1" ROUNDS=3 NS="1 10"
#   LINKS=50:0 ROUNDS=5 NS=1 CONFIGS="h1:1.1:0 h2c:2:0" bench/netem-link.sh
#
# Environment (all optional):
#   LINKS="50:0 50:0.1 5:0 5:0.1"  RTT_MS:LOSS_PERCENT pairs (each direction: RTT/2 and LOSS)
#   ROUNDS=3  NS="1 10"  SIZE=67108864 (bytes per download, /bytes/SIZE)
#   CONFIGS="h1:1.1:0 h2c:2:0 tls-h1:1.1:1 tls-h2:2:1"  LABEL:HTTP:TLS[:BIN[:ARGS]], BIN another courier binary,
#                  ARGS more `courier bench` flags, comma-separated (h3-2m:3:1::--http3-stream-receive-window,2097152);
#                  HTTP 3 goes to the TLS server's QUIC side (same port, UDP)
#   SERVE_ARGS=""  more `courier serve` flags for the TLS (and HTTP/3) server, e.g. --quic-bbr
#   MTU=9000       the TUN devices' MTU (a jumbo frame's: 1500 triples the packets the relay and both kernels
#                  handle on this 2-core machine; TCP's slow start still starts at 10 segments)
#   BUFFERS=kernel the namespaces' TCP buffers as a fresh namespace has them (here tcp_wmem max 4 MiB: the
#                  server's sender may have 4 MiB in flight, 80 MB/s at 50 ms), or `64m`: tcp_rmem and
#                  tcp_wmem up to 64 MiB in both, as a host tuned for long fat links
#   NICENESS=-10   run everything (server, relay, clients) at this nice level: on a machine others load
#                  (builds), the runs measure the link and the protocols rather than the scheduler
#   COURIER_BIN    [target/release/courier]   OUT=file  keep the raw times (TSV) there
#   TIME_LIMIT=3000 seconds: the whole script is killed after this
# Needs: root or unprivileged user namespaces (`unshare -rn`), /dev/net/tun, ip (iproute2), nsenter, cc, python3.
# Everything runs in namespaces the script creates; nothing outside them changes; all of it ends on exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
COURIER="${COURIER_BIN:-$ROOT/target/release/courier}"
[ -x "$COURIER" ] || { echo "no $COURIER (cargo build --release -p courier-cli)" >&2; exit 1; }

if [ -z "${NETEM_LINK_INNER:-}" ]; then
    # Re-run inside a new user + network namespace (the client's side), bounded in time.
    # NICENESS: set here, outside the user namespace (a lower nice level needs the host's CAP_SYS_NICE).
    exec nice -n "${NICENESS:-0}" timeout --kill-after=10 "${TIME_LIMIT:-3000}" unshare -rn env NETEM_LINK_INNER=1 COURIER_BIN="$COURIER" "$0" "$@"
fi

LINKS="${LINKS:-50:0 50:0.1 5:0 5:0.1}"
ROUNDS="${ROUNDS:-3}"
NS="${NS:-1 10}"
SIZE="${SIZE:-67108864}"
CONFIGS="${CONFIGS:-h1:1.1:0 h2c:2:0 tls-h1:1.1:1 tls-h2:2:1}"
MTU="${MTU:-9000}"
BUFFERS="${BUFFERS:-kernel}"
CLIENT_IP=10.77.0.1
SERVER_IP=10.77.0.2
WORK="$(mktemp -d /tmp/netem-link.XXXXXX)"
PIDS=()
cleanup() {
    local rc=$?
    for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null || true; done
    sleep 0.5
    for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cc -O2 -o "$WORK/tun-delay" "$HERE/tun-delay.c"
log() { printf '==> %s\n' "$*" >&2; }

# The server's namespace: a child network namespace, held open by a process that only sleeps.
unshare -n sleep 100000 &
SERVER_NS=$!
PIDS+=($SERVER_NS)
# Until unshare has made the namespace, the process is still in this one (bounded wait).
for _ in $(seq 100); do
    [ "$(readlink /proc/$SERVER_NS/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.05
done
[ "$(readlink /proc/$SERVER_NS/ns/net)" != "$(readlink /proc/self/ns/net)" ] || { echo "no server namespace" >&2; exit 1; }
in_server() { nsenter -t "$SERVER_NS" -n "$@"; }

ip link set lo up
in_server ip link set lo up
if [ "$BUFFERS" = 64m ]; then
    for side in "" in_server; do
        $side sh -c 'echo "4096 131072 67108864" >/proc/sys/net/ipv4/tcp_rmem; echo "4096 16384 67108864" >/proc/sys/net/ipv4/tcp_wmem'
    done
elif [ "$BUFFERS" != kernel ]; then
    echo "BUFFERS is kernel or 64m, not $BUFFERS" >&2
    exit 1
fi
log "TCP: $(cat /proc/sys/net/ipv4/tcp_congestion_control); client tcp_rmem $(tr '\t' ' ' </proc/sys/net/ipv4/tcp_rmem); server tcp_wmem $(in_server cat /proc/sys/net/ipv4/tcp_wmem | tr '\t' ' '); MTU $MTU"

# nsenter, not in_server: a function run with & is a subshell, and $! would be it, not the server.
nsenter -t "$SERVER_NS" -n "$COURIER" serve --addr 0.0.0.0 -p 8080 >"$WORK/serve.log" 2>&1 </dev/null &
PIDS+=($!)
nsenter -t "$SERVER_NS" -n "$COURIER" serve --addr 0.0.0.0 -p 8443 --tls --http3 ${SERVE_ARGS:-} --cert-out "$WORK/ca.pem" >"$WORK/serve-tls.log" 2>&1 </dev/null &
PIDS+=($!)

RELAY=""
# link RTT_MS LOSS: (re)creates the TUN pair and its delay line.
link() {
    if [ -n "$RELAY" ]; then
        kill "$RELAY" 2>/dev/null || true
        wait "$RELAY" 2>/dev/null || true
    fi
    local one_way
    one_way="$(awk "BEGIN{print $1/2}")"
    "$WORK/tun-delay" tunc tuns "$one_way" "$2" >"$WORK/relay.out" 2>&1 </dev/null &
    RELAY=$!
    PIDS+=($RELAY)
    for _ in $(seq 50); do grep -q ready "$WORK/relay.out" 2>/dev/null && break; sleep 0.1; done
    grep -q ready "$WORK/relay.out" || { cat "$WORK/relay.out" >&2; exit 1; }
    ip link set tuns netns "$SERVER_NS"
    ip addr add "$CLIENT_IP" peer "$SERVER_IP" dev tunc
    ip link set tunc mtu "$MTU" txqueuelen 10000 up
    in_server ip addr add "$SERVER_IP" peer "$CLIENT_IP" dev tuns
    in_server ip link set tuns mtu "$MTU" txqueuelen 10000 up
    # Both servers answer through the link (bounded wait).
    for port in 8080 8443; do
        for _ in $(seq 100); do
            timeout 2 bash -c "echo >/dev/tcp/$SERVER_IP/$port" 2>/dev/null && break
            sleep 0.1
        done
    done
}

# RcvbufErrors of this namespace's UDP (/proc/net/snmp's second Udp: line).
UDP_DROPS='$1 == "Udp:" && $2 ~ /^[0-9]/ { print $6 }'
udp_drops() { awk "$UDP_DROPS" /proc/net/snmp; }

RAW="${OUT:-$WORK/times.tsv}"
: >"$RAW"
read -r -a configs <<<"$CONFIGS"
for l in $LINKS; do
    rtt="${l%%:*}"
    loss="${l#*:}"
    link "$rtt" "$loss"
    log "link: RTT $rtt ms, loss $loss % each way; ${ROUNDS} rounds; N = $NS; $SIZE bytes"
    for ((r = 0; r < ROUNDS; r++)); do
        for n in $NS; do
            k=$((r % ${#configs[@]}))
            for c in "${configs[@]:k}" "${configs[@]:0:k}"; do
                IFS=: read -r label http tls bin extra <<<"$c"
                if [ "$tls" = 1 ]; then url="https://$SERVER_IP:8443"; else url="http://$SERVER_IP:8080"; fi
                cmd=("${bin:-$COURIER}" bench "$url/bytes/$SIZE" -n "$n" -c 1 --threads 1 --http "$http" --progress none)
                [ "$tls" = 1 ] && cmd+=(--insecure)
                [ -n "${extra:-}" ] && IFS=, read -r -a more <<<"$extra" && cmd+=("${more[@]}")
                drops0="$(udp_drops) $(in_server awk "$UDP_DROPS" /proc/net/snmp)"
                t0=$(date +%s%N)
                # The client's CPU (user + system), from /usr/bin/time's last line.
                if /usr/bin/time -f 'cpu %U %S' -o "$WORK/cpu" timeout 300 "${cmd[@]}" >"$WORK/bench.out" 2>&1 </dev/null; then ok=ok; else ok=failed; fi
                t1=$(date +%s%N)
                cpu="$(awk '$1 == "cpu" { s = $2 + $3 } END { print s + 0 }' "$WORK/cpu")"
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$loss" "$r" "$n" "$label" "$http" "$tls" "$(((t1 - t0) / 1000))" "$cpu" >>"$RAW"
                [ "$ok" = ok ] || { log "FAILED: ${cmd[*]}"; tail -3 "$WORK/bench.out" >&2; }
                # UDP datagrams the kernel dropped for a full socket receive buffer, each side.
                read -r c0 s0 <<<"$drops0"
                read -r c1 s1 <<<"$(udp_drops) $(in_server awk "$UDP_DROPS" /proc/net/snmp)"
                [ "$http" = 3 ] && log "$label n=$n: UDP RcvbufErrors client +$((c1 - c0)), server +$((s1 - s0))"
            done
        done
    done
done

python3 - "$RAW" "$SIZE" "$MTU" "$BUFFERS" <<'PY'
import collections, statistics, sys
raw, size, mtu, buffers = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(raw) if l.strip()]
t = collections.defaultdict(dict)   # (rtt, loss, n, label) -> {round: seconds}
cpu = collections.defaultdict(list)  # (rtt, loss, n, label) -> [client CPU seconds]
meta = {}
for rtt, loss, r, n, label, http, tls, us, c in rows:
    t[(rtt, loss, n, label)][r] = int(us) / 1e6
    cpu[(rtt, loss, n, label)].append(float(c))
    meta[label] = (http, tls)
base = {tls: label for label, (http, tls) in meta.items() if http == "1.1"}
links = list(dict.fromkeys((rtt, loss) for rtt, loss, *_ in rows))
ns = list(dict.fromkeys(n for _, _, _, n, *_ in rows))
load = open("/proc/loadavg").read().split()[:3]
print(f"\n{size} bytes a download; MTU {mtu}; buffers {buffers}; load after {' '.join(load)}")
for rtt, loss in links:
    for n in ns:
        print(f"\nRTT {rtt} ms, loss {loss} %, N = {n}: label | median | MB/s | vs HTTP/1.1: ratio of medians, median of round ratios | client CPU | runs (ms)")
        for label, (http, tls) in meta.items():
            runs = t.get((rtt, loss, n, label))
            if not runs:
                continue
            med = statistics.median(runs.values())
            line = f"  {label:10s} {med * 1000:8.0f} ms {int(n) * size / med / 1e6:6.0f} MB/s"
            b = t.get((rtt, loss, n, base.get(tls)))
            if b and base.get(tls) != label:
                rr = [b[r] / runs[r] for r in runs if r in b]
                line += f"  {statistics.median(b.values()) / med:5.2f}x {statistics.median(rr):5.2f}x"
            else:
                line += " " * 14
            line += f"  {statistics.median(cpu[(rtt, loss, n, label)]):5.2f} s"
            line += "  " + " ".join(f"{runs[r] * 1000:.0f}" for r in sorted(runs, key=int))
            print(line)
PY
