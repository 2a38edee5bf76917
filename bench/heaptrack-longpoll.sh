#!/usr/bin/env bash
# What a long poll holds, by owner (docs/src/http3.md, "What an HTTP/3 long poll holds"): heaptrack
# on `courier bench --scenario longpoll`, the client killed once every poll has waited HOLD seconds
# (so what is live then is what the polls hold, not what passes while they are sent), then
# bench/heap-by-owner.py on heaptrack's live ("leaked") bytes. The built-in server runs in child
# processes, so heaptrack sees the client alone; they are stopped with it.
#
#   bench/heaptrack-longpoll.sh                          # 10,000 HTTP/3 polls, 100 connections
#   N=100000 DELAY=90 bench/heaptrack-longpoll.sh        # about 2 minutes on 2 cores
#
# Environment (all optional):
#   N=10000 DELAY=40 HTTP=3 HOLD=5   polls, their delay (s, longer than the opening plus HOLD),
#                                    the protocol, seconds all must have been in flight
#   STREAMS=100                      polls per connection (the built-in server's stream limit)
#   COURIER_BIN=path                 [target/release/courier]
#   OUT=path                         heaptrack's file, without .zst [/tmp/heaptrack-longpoll]
set -euo pipefail

N=${N:-10000}
DELAY=${DELAY:-40}
HTTP=${HTTP:-3}
HOLD=${HOLD:-5}
STREAMS=${STREAMS:-100}
BIN=${COURIER_BIN:-target/release/courier}
OUT=${OUT:-/tmp/heaptrack-longpoll}
here=$(dirname "$0")

rm -f "$OUT.zst" "$OUT.err"
heaptrack -o "$OUT" "$BIN" bench --scenario longpoll -c "$N" --delay "$DELAY" --http "$HTTP" \
  --progress lines > /dev/null 2> "$OUT.err" &
tracer=$!

# The client is heaptrack's child; its progress lines say how many polls are in flight.
client=""
held=0
for _ in $(seq 1 $((DELAY * 2))); do
  sleep 1
  [ -n "$client" ] || client=$(pgrep -P "$tracer" -f "bench --scenario longpoll" || true)
  if tr '\r' '\n' < "$OUT.err" | grep "in flight" | tail -1 | grep -q " $N in flight"; then
    held=$((held + 1))
    [ "$held" -lt "$HOLD" ] || break
  fi
done
if [ -z "$client" ] || [ "$held" -lt "$HOLD" ]; then
  echo "heaptrack-longpoll: $N polls were not all in flight for $HOLD s (see $OUT.err)" >&2
  kill "$tracer" 2> /dev/null || true
  exit 1
fi
servers=$(pgrep -P "$client" || true)
kill -KILL "$client"
wait "$tracer" || true
[ -z "$servers" ] || kill $servers 2> /dev/null || true

heaptrack_print -f "$OUT.zst" -l 1 -m 0 -p 0 -a 0 -T 0 -n 1000000 -s 1000000 > "$OUT.leaks"
"$here/heap-by-owner.py" "$OUT.leaks" "$N" $(( (N + STREAMS - 1) / STREAMS )) "$@"
