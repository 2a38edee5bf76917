#!/usr/bin/env python3
"""Checks that POST /echo streams: the first chunk comes back before the
upload ends. Usage: stream_check.py PORT h1|h2c|tls-h1|tls-h2

HTTP/1.1 is spoken by hand (chunked upload); HTTP/2 uses the `h2` package,
which hypercorn already installs. Exit 0 when streamed and echoed intact.
"""

import socket
import ssl
import sys
import time

FIRST = b"first-chunk:" + b"a" * 1000
REST = b"rest:" + bytes(i % 251 for i in range(200_000))
DEADLINE = 5.0


def connect(port, tls, alpn):
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols([alpn])
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
        if sock.selected_alpn_protocol() != alpn:
            sys.exit(f"ALPN gave {sock.selected_alpn_protocol()}, wanted {alpn}")
    return sock


def dechunk(data):
    """Returns (body, complete) of a chunked body prefix."""
    body, pos = b"", 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return body, False
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return body, True
        if len(data) < end + 2 + size + 2:
            return body + data[end + 2:end + 2 + size], False
        body += data[end + 2:end + 2 + size]
        pos = end + 2 + size + 2


def h1(port, tls):
    sock = connect(port, tls, "http/1.1")
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                 b"Content-Type: application/octet-stream\r\n\r\n")
    sock.sendall(b"%x\r\n%s\r\n" % (len(FIRST), FIRST))
    buf = b""
    deadline = time.monotonic() + DEADLINE
    while True:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            head, rest = buf[:head_end].lower(), buf[head_end + 4:]
            if b"transfer-encoding: chunked" in head:
                got, _ = dechunk(rest)
            else:
                got = rest
            if len(got) >= len(FIRST):
                break
        if time.monotonic() > deadline:
            sys.exit(f"no echo of the first chunk within {DEADLINE}s (got {len(buf)} bytes)")
        data = sock.recv(65536)
        if not data:
            sys.exit("connection closed before the first chunk came back")
        buf += data
    sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(REST), REST))
    while True:
        got, done = dechunk(rest) if b"chunked" in head else (rest, False)
        if done or len(got) >= len(FIRST + REST):
            break
        data = sock.recv(65536)
        if not data:
            break
        rest += data
    if got != FIRST + REST:
        sys.exit(f"echo differs: {len(got)} bytes back of {len(FIRST + REST)}")


def h2(port, tls):
    import h2.connection
    import h2.events

    sock = connect(port, tls, "h2")
    conn = h2.connection.H2Connection()
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "POST"), (":path", "/echo"), (":scheme",
                      "https" if tls else "http"), (":authority", "localhost")])
    conn.send_data(1, FIRST)
    sock.sendall(conn.data_to_send())
    got, sent_rest, ended = b"", False, False
    deadline = time.monotonic() + DEADLINE
    while not ended:
        if time.monotonic() > deadline:
            sys.exit(f"echo incomplete within {DEADLINE}s ({len(got)} bytes)")
        data = sock.recv(65536)
        if not data:
            sys.exit("connection closed")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                got += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, 1)
            elif isinstance(event, h2.events.StreamEnded):
                ended = True
            elif isinstance(event, h2.events.StreamReset):
                sys.exit("stream reset")
        if not sent_rest and len(got) >= len(FIRST):
            sent_rest = True
            pending = REST
            while pending:
                window = min(conn.local_flow_control_window(1), conn.max_outbound_frame_size)
                if window <= 0:
                    break
                conn.send_data(1, pending[:window])
                pending = pending[window:]
            if pending:
                # Flow control: finish the rest by waiting for WINDOW_UPDATEs.
                sock.sendall(conn.data_to_send())
                while pending:
                    for event in conn.receive_data(sock.recv(65536)):
                        if isinstance(event, h2.events.DataReceived):
                            got += event.data
                            conn.acknowledge_received_data(event.flow_controlled_length, 1)
                    window = min(conn.local_flow_control_window(1),
                                 conn.max_outbound_frame_size)
                    if window > 0:
                        conn.send_data(1, pending[:window])
                        pending = pending[window:]
                    sock.sendall(conn.data_to_send())
            conn.end_stream(1)
        sock.sendall(conn.data_to_send())
    if not sent_rest:
        sys.exit("response ended before the upload did")
    if got != FIRST + REST:
        sys.exit(f"echo differs: {len(got)} bytes back of {len(FIRST + REST)}")


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    try:
        {"h1": lambda: h1(port, False), "tls-h1": lambda: h1(port, True),
         "h2c": lambda: h2(port, False), "tls-h2": lambda: h2(port, True)}[mode]()
    except (TimeoutError, OSError) as err:
        sys.exit(f"no streamed echo: {err!r}")


if __name__ == "__main__":
    main()
