#!/usr/bin/env bash
# Renders `courier bench --html` and `courier compare --html` pages in headless Chromium and
# saves screenshots, to check by eye how the reports look (cargo test checks their content).
#
#   bench/screenshot-report.sh [OUT_DIR]        # default: /tmp/courier-report
#
# Needs Debian's chromium (apt-get install -y chromium) and a built courier
# (cargo build -p courier-cli; COURIER=path overrides). Runs against `courier serve` on loopback:
# a closed-loop run, an open-loop run with stages (target vs achieved), a run with errors, and
# a comparison of the first two.
set -euo pipefail

out=${1:-/tmp/courier-report}
root=$(cd "$(dirname "$0")/.." && pwd)
courier=${COURIER:-$root/target/debug/courier}
chromium=${CHROMIUM:-chromium}
mkdir -p "$out"

"$courier" serve --port 0 >"$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  url=$(grep -o 'http://[0-9.:]*/' "$out/serve.log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "courier serve did not start" >&2; exit 1; }

"$courier" bench "${url}bytes/1024" -d 5 -c 16 --fail-if 'p99 > 50ms' \
  --json "$out/closed.json" --html "$out/closed.html" >/dev/null
"$courier" bench "${url}bytes/1024" --stages 3s:3000,4s:3000,3s:0 \
  --json "$out/stages.json" --html "$out/stages.html" >/dev/null
# Every fourth request goes to a closed port: a warning verdict with its cause.
printf 'GET %sbytes/128 weight=3\n\nGET http://127.0.0.1:1/\n' "$url" >"$out/mixed.targets"
"$courier" bench --targets "$out/mixed.targets" -d 3 -c 8 --html "$out/errors.html" >/dev/null || true
"$courier" compare "$out/closed.json" "$out/stages.json" --html "$out/compare.html" >/dev/null

for page in closed stages errors compare; do
  "$chromium" --headless --no-sandbox --hide-scrollbars --screenshot="$out/$page.png" \
    --window-size=1280,2400 "file://$out/$page.html" 2>/dev/null
  echo "$out/$page.png"
done
