#!/usr/bin/env bash
# Checks the programmable interop servers against interop/README.md's
# contract with curl (and stream_check.py for streamed echo), so the servers
# themselves are known good before courier is tested against them.
#
#   interop/selftest.sh [go] [node] [hypercorn]      (default: all three)
#   PROFILES="default tight" (default both)
#
# Needs: curl with HTTP/2, openssl, python3 with h2 (interop/install.sh).
# Prints one line per failed check and a summary; exits 1 if any failed.
# Limitations a server cannot lift are listed in KNOWN_* and reported as
# "known" instead of failing (and flagged if they start passing).
set -uo pipefail
cd "$(dirname "$0")"
HERE="$(pwd)"

SERVERS=("$@")
[ ${#SERVERS[@]} -eq 0 ] && SERVERS=(go node hypercorn)
PROFILES="${PROFILES:-default tight}"

# hypercorn's ASGI layer has trailers and 103 only over HTTP/2.
KNOWN_hypercorn=" trailers@h1 trailers@tls-h1 early-hints@h1 early-hints@tls-h1 "
KNOWN_go=" "
KNOWN_node=" "

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- fixtures: a throwaway certificate and a docroot ----------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null || { echo "openssl failed"; exit 1; }
mkdir -p "$WORK/doc"
echo "hello" >"$WORK/doc/small.txt"
for i in $(seq 1 2000); do echo "line $i: the quick brown fox jumps over the lazy dog"; done >"$WORK/doc/text.txt"
head -c 1048576 /dev/urandom >"$WORK/doc/1m.bin"
echo "secret" >"$WORK/secret.txt"
head -c 1048576 /dev/urandom >"$WORK/upload.bin"

sha() { sha256sum "$1" | cut -d' ' -f1; }
TRAILER_SUM="$(python3 -c 'import hashlib; print(hashlib.sha256(bytes(i % 251 for i in range(65536))).hexdigest())')"

# Three free ports below Linux's ephemeral range (32768+), so that no other
# process's outgoing connection can be handed the same port meanwhile.
free_ports() {
    python3 -c 'import random, socket
ports = []
while len(ports) < 3:
    port = random.randint(20000, 32000)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    if port not in ports:
        ports.append(port)
print(" ".join(map(str, ports)))'
}

command_for() {
    case "$1" in
        go)
            [ -x "$HERE/servers/go/interop-server" ] || { echo "run interop/install.sh first" >&2; return 1; }
            echo "$HERE/servers/go/interop-server" ;;
        node) echo "node $HERE/servers/node/server.js" ;;
        hypercorn) echo "python3 $HERE/servers/hypercorn/serve.py" ;;
        *) echo "unknown server $1" >&2; return 1 ;;
    esac
}

PASS=0
FAIL=0
KNOWN=0
CUR=""      # server/profile, for messages
KNOWN_SET=" "

# check NAME VARIANT COMMAND...: runs COMMAND; non-zero exit is a failure.
check() {
    local name="$1" variant="$2"
    shift 2
    local known=0
    [[ "$KNOWN_SET" == *" $name@$variant "* ]] && known=1
    if "$@" >"$WORK/check.log" 2>&1; then
        if [ $known = 1 ]; then
            echo "NOTE $CUR $name@$variant passes but is listed as known: remove it from KNOWN_*"
        fi
        PASS=$((PASS + 1))
    elif [ $known = 1 ]; then
        KNOWN=$((KNOWN + 1))
    else
        FAIL=$((FAIL + 1))
        echo "FAIL $CUR $name@$variant: $(head -c 400 "$WORK/check.log" | tr '\n' ' ')"
    fi
}

# ---- individual checks; $C is the curl prefix, $U the base URL ----------
expect_eq() { [ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }; }

c_version() {
    expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_version}' "$U/static/small.txt")" "$1"
}
c_static() {
    "${C[@]}" -sf -D "$WORK/h" -o "$WORK/b" "$U/static/1m.bin" || return 1
    expect_eq "$(sha "$WORK/b")" "$(sha "$WORK/doc/1m.bin")" || return 1
    grep -qi '^content-length: 1048576' "$WORK/h" || { echo "no content-length"; return 1; }
}
c_head() {
    local out
    out="$("${C[@]}" -s -I -o /dev/null -w '%{http_code} %{size_download}' "$U/static/1m.bin")"
    expect_eq "$out" "200 0" || return 1
    "${C[@]}" -s -I "$U/static/1m.bin" | grep -qi '^content-length: 1048576' || { echo "HEAD without content-length"; return 1; }
}
c_traversal() {
    expect_eq "$("${C[@]}" -s --path-as-is -o /dev/null -w '%{http_code}' "$U/static/../secret.txt")" 404 || return 1
    expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_code}' "$U/static/%2e%2e/secret.txt")" 404
}
# A malformed percent escape is refused (400/404; Go's h2 resets the stream
# with PROTOCOL_ERROR, which curl shows as 000) and the server lives on.
c_bad_escape() {
    local code
    code="$("${C[@]}" -s -o /dev/null -w '%{http_code}' "$U/static/%E0%A4%A" 2>/dev/null)"
    case "$code" in 400|404|000) ;; *) echo "got $code for a bad escape"; return 1 ;; esac
    expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_code}' "$U/static/small.txt")" 200
}
c_notfound() {
    expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_code}' "$U/nope")" 404 || return 1
    expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_code}' "$U/static/missing.txt")" 404
}
c_status() {
    local code
    for code in 200 201 204 304 404 500 503; do
        expect_eq "$("${C[@]}" -s -o /dev/null -w '%{http_code} %{size_download}' "$U/status/$code")" "$code 0" || return 1
    done
}
c_echo() {
    "${C[@]}" -sf -X POST --data-binary @"$WORK/upload.bin" -D "$WORK/h" -o "$WORK/b" "$U/echo" || return 1
    cmp "$WORK/b" "$WORK/upload.bin" || return 1
    grep -qi '^content-type: application/octet-stream' "$WORK/h" || { echo "content-type"; return 1; }
    "${C[@]}" -sf -T "$WORK/upload.bin" -o "$WORK/b" "$U/echo" || return 1   # PUT
    cmp "$WORK/b" "$WORK/upload.bin"
}
c_expect() {
    "${C[@]}" -sfv -H 'Expect: 100-continue' --data-binary @"$WORK/upload.bin" -o "$WORK/b" "$U/echo" 2>"$WORK/v" || return 1
    cmp "$WORK/b" "$WORK/upload.bin" || return 1
    if [ "$1" = 1.1 ]; then
        grep -q '^< HTTP/1.1 100' "$WORK/v" || { echo "no 100 Continue"; return 1; }
    fi
}
c_stream() { python3 "$HERE/stream_check.py" "$1" "$2"; }
c_trailers() {
    if [ "$1" = 2 ]; then
        "${C[@]}" -sfv -H 'te: trailers' -o "$WORK/b" "$U/trailers" 2>"$WORK/v" || return 1
        expect_eq "$(sha "$WORK/b")" "$TRAILER_SUM" || return 1
        grep -qi "^< x-checksum: $TRAILER_SUM" "$WORK/v" || { echo "no x-checksum trailer"; return 1; }
        return 0
    fi
    # curl 7.88 does not show HTTP/1.1 trailers; read the raw chunked framing.
    "${C[@]}" -sf --raw -H 'te: trailers' -D "$WORK/h" -o "$WORK/b" "$U/trailers" || return 1
    grep -qi '^transfer-encoding: chunked' "$WORK/h" || { echo "not chunked"; return 1; }
    grep -qi '^trailer: x-checksum' "$WORK/h" || { echo "no Trailer declaration"; return 1; }
    python3 - "$WORK/b" "$TRAILER_SUM" <<'EOF'
import hashlib, sys
data, body, pos = open(sys.argv[1], "rb").read(), b"", 0
while True:
    end = data.index(b"\r\n", pos)
    size = int(data[pos:end].split(b";")[0], 16)
    pos = end + 2
    if size == 0:
        break
    body += data[pos:pos + size]
    pos += size + 2
trailers = data[pos:].decode("latin-1").lower().split("\r\n")
if hashlib.sha256(body).hexdigest() != sys.argv[2]:
    sys.exit("body checksum differs")
if f"x-checksum: {sys.argv[2]}" not in trailers:
    sys.exit(f"no x-checksum trailer: {trailers}")
EOF
}
c_early_hints() {
    "${C[@]}" -si "$U/early-hints" >"$WORK/b" || return 1
    grep -q '^HTTP/[0-9.]* 103' "$WORK/b" || { echo "no 103"; return 1; }
    grep -qi '^link: </static/small.txt>; rel=preload' "$WORK/b" || { echo "no link"; return 1; }
    grep -q '^HTTP/[0-9.]* 200' "$WORK/b" || { echo "no 200"; return 1; }
    expect_eq "$(tail -c 2 "$WORK/b")" ok
}
c_gzip() {
    "${C[@]}" -sf -H 'accept-encoding: gzip' -D "$WORK/h" -o "$WORK/b.gz" "$U/gzip" || return 1
    grep -qi '^content-encoding: gzip' "$WORK/h" || { echo "not gzip-encoded"; return 1; }
    gunzip -c "$WORK/b.gz" | cmp - "$WORK/doc/text.txt" || return 1
    "${C[@]}" -sf -D "$WORK/h" -o "$WORK/b" "$U/gzip" || return 1
    ! grep -qi '^content-encoding' "$WORK/h" || { echo "encoded without accept-encoding"; return 1; }
    cmp "$WORK/b" "$WORK/doc/text.txt"
}
c_redirect() {
    # Followed by hand: curl 7.88 -L cannot reuse an h2c prior-knowledge connection.
    local n
    for n in 3 2 1; do
        "${C[@]}" -s -D "$WORK/h" -o /dev/null "$U/redirect/$n"
        grep -q '^HTTP/[0-9.]* 302' "$WORK/h" || { echo "/redirect/$n not 302"; return 1; }
        grep -qi "^location: /redirect/$((n - 1))" "$WORK/h" || { echo "/redirect/$n bad location"; return 1; }
    done
    expect_eq "$("${C[@]}" -s -w ' %{http_code}' "$U/redirect/0")" "done 200"
}
c_delay() {
    local out
    out="$("${C[@]}" -s -w ' %{time_total}' "$U/delay/300")"
    expect_eq "${out%% *}" ok || return 1
    python3 -c "import sys; sys.exit(0 if float('${out##* }') >= 0.3 else 1)" || { echo "too fast: $out"; return 1; }
}
c_parallel() {   # version port variant
    if [ "$1" = 2 ]; then
        python3 "$HERE/h2_parallel.py" "$2" "$3" 100
        return
    fi
    local args=() i codes
    for i in $(seq 1 100); do args+=(-o /dev/null "$U/static/small.txt?$i"); done
    codes="$("${C[@]}" -s -Z --parallel-max 50 -w '%{http_code}\n' "${args[@]}" 2>/dev/null | sort | uniq -c | tr -s ' ')"
    expect_eq "$codes" " 100 200"
}
# Tight profile: a connection idle after a request must be closed by the
# server in ~2-3 s.
c_idle_close() {
    python3 - "$@" <<'EOF'
import socket, ssl, sys, time
import h2.connection, h2.events
port, tls, alpn = int(sys.argv[1]), sys.argv[2] == "tls", sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
if tls:
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols([alpn]); s = ctx.wrap_socket(s, server_hostname="localhost")
conn = None
if alpn == "h2":
    conn = h2.connection.H2Connection()
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "GET"), (":path", "/status/200"), (":authority", "x"),
                          (":scheme", "https" if tls else "http")], end_stream=True)
    s.sendall(conn.data_to_send())
else:
    s.sendall(b"GET /status/200 HTTP/1.1\r\nHost: x\r\n\r\n")
t = None
try:
    while True:
        data = s.recv(65536)
        if not data:
            break
        if conn is None:
            t = t or time.monotonic()   # the whole response fits one read
            continue
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.StreamEnded):
                t = time.monotonic()
        s.sendall(conn.data_to_send())
except socket.timeout:
    sys.exit("still open 10 s later")
except OSError:
    pass
if t is None:
    sys.exit("closed before the response")
took = time.monotonic() - t
print(f"closed {took:.2f}s after the response")
sys.exit(0 if 1.0 <= took <= 4.5 else 1)
EOF
}

# Tight profile: a response slower than every timeout still arrives (an idle
# or header timeout must not cut a request in progress). Runs the four
# variants at once to save time.
c_slow_response() {   # h1-port h2c-port tls-port
    local out="$WORK/slow" rc=0 i pids=()
    curl -sS --max-time 15 --http1.1 -o "$out.1" "http://127.0.0.1:$1/delay/4500" & pids+=($!)
    curl -sS --max-time 15 --http2-prior-knowledge -o "$out.2" "http://127.0.0.1:$2/delay/4500" & pids+=($!)
    curl -sS --max-time 15 -k --http2 -o "$out.3" "https://127.0.0.1:$3/delay/4500" & pids+=($!)
    curl -sS --max-time 15 -k --http1.1 -o "$out.4" "https://127.0.0.1:$3/delay/4500" & pids+=($!)
    wait "${pids[@]}"   # not a bare wait: the server is a background job too
    for i in 1 2 3 4; do
        [ "$(cat "$out.$i" 2>/dev/null)" = ok ] || { echo "variant $i (h1 h2c tls-h2 tls-h1) got no ok"; rc=1; }
    done
    return $rc
}

run_variant() {   # variant port curl-args... ; version expected
    local variant="$1" port="$2" version="$3" scheme="$4"
    shift 4
    C=(curl -S --max-time 20 "$@")
    U="$scheme://127.0.0.1:$port"
    check version "$variant" c_version "$version"
    check static "$variant" c_static
    check head "$variant" c_head
    check traversal "$variant" c_traversal
    check not-found "$variant" c_notfound
    check bad-escape "$variant" c_bad_escape
    check status "$variant" c_status
    check echo "$variant" c_echo
    check expect-100 "$variant" c_expect "$version"
    check stream-echo "$variant" c_stream "$port" "$variant"
    check trailers "$variant" c_trailers "$version"
    check early-hints "$variant" c_early_hints
    check gzip "$variant" c_gzip
    check redirect "$variant" c_redirect
    check delay "$variant" c_delay
    check parallel-100 "$variant" c_parallel "$version" "$port" "$variant"
}

start_server() {   # name profile h1 h2c tls
    local cmd
    cmd="$(command_for "$1")" || exit 1
    # shellcheck disable=SC2086
    $cmd --h1 "$3" --h2c "$4" --tls "$5" --cert "$WORK/cert.pem" --key "$WORK/key.pem" \
        --docroot "$WORK/doc" --profile "$2" >"$WORK/stdout" 2>"$WORK/stderr" &
    SERVER_PID=$!
    local deadline=$((SECONDS + 30))
    until grep -qx ready "$WORK/stdout" 2>/dev/null; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null || [ $SECONDS -gt $deadline ]; then
            echo "FAIL $1/$2 did not print ready:"; cat "$WORK/stderr"
            return 1
        fi
        sleep 0.1
    done
}

stop_server() {   # signal
    kill -"$1" "$SERVER_PID" 2>/dev/null
    local deadline=$((SECONDS + 5))
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        if [ $SECONDS -gt $deadline ]; then
            kill -KILL "$SERVER_PID" 2>/dev/null
            wait "$SERVER_PID" 2>/dev/null
            SERVER_PID=""
            return 1
        fi
        sleep 0.1
    done
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}

for server in "${SERVERS[@]}"; do
    for profile in $PROFILES; do
        CUR="$server/$profile"
        eval "KNOWN_SET=\"\$KNOWN_$server\""
        read -r P1 P2 P3 <<<"$(free_ports)"
        if ! start_server "$server" "$profile" "$P1" "$P2" "$P3"; then
            FAIL=$((FAIL + 1)); SERVER_PID=""; continue
        fi
        before=$FAIL
        run_variant h1 "$P1" 1.1 http --http1.1
        run_variant h2c "$P2" 2 http --http2-prior-knowledge
        run_variant tls-h2 "$P3" 2 https -k --http2
        run_variant tls-h1 "$P3" 1.1 https -k --http1.1
        if [ "$profile" = tight ]; then
            check idle-close h1 c_idle_close "$P1" plain http/1.1
            check idle-close h2c c_idle_close "$P2" plain h2
            check idle-close tls-h1 c_idle_close "$P3" tls http/1.1
            check idle-close tls-h2 c_idle_close "$P3" tls h2
            check slow-response all c_slow_response "$P1" "$P2" "$P3"
        fi
        signal=TERM
        [ "$profile" = tight ] && signal=INT
        check "exit-on-SIG$signal" all stop_server "$signal"
        echo "$CUR: $([ $FAIL = "$before" ] && echo ok || echo "$((FAIL - before)) failed")"
    done
done

echo "selftest: $PASS passed, $FAIL failed, $KNOWN known limitations"
[ "$FAIL" = 0 ]
