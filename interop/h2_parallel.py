#!/usr/bin/env python3
"""Sends N concurrent GETs on one HTTP/2 connection and checks every answer.

Usage: h2_parallel.py PORT h2c|tls-h2 [N] [PATH]
curl 7.88 cannot reuse an h2c prior-knowledge connection (its second stream
is never sent), so the self-test multiplexes with the `h2` package instead.
"""

import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    path = sys.argv[4] if len(sys.argv) > 4 else "/static/small.txt"
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if mode == "tls-h2":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    pending = [1 + 2 * i for i in range(count)]
    status, open_streams = {}, set()
    deadline = time.monotonic() + 20
    while len(status) < count:
        # Stay within the server's MAX_CONCURRENT_STREAMS (and 100).
        limit = min(conn.remote_settings.max_concurrent_streams, 100)
        while pending and conn.open_outbound_streams < limit:
            sid = pending.pop(0)
            conn.send_headers(sid, [(":method", "GET"), (":path", f"{path}?{sid}"),
                                    (":scheme", "https" if mode == "tls-h2" else "http"),
                                    (":authority", "localhost")], end_stream=True)
            open_streams.add(sid)
        sock.sendall(conn.data_to_send())
        if time.monotonic() > deadline:
            sys.exit(f"only {len(status)} of {count} answered")
        data = sock.recv(65536)
        if not data:
            sys.exit(f"connection closed after {len(status)} of {count}")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status[event.stream_id] = dict(event.headers)[b":status"]
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                sys.exit(f"stream {event.stream_id} reset: {event.error_code}")
        sock.sendall(conn.data_to_send())
    bad = {sid: s for sid, s in status.items() if s != b"200"}
    if bad:
        sys.exit(f"non-200 answers: {bad}")
    print(f"{count} concurrent requests: all 200")


if __name__ == "__main__":
    try:
        main()
    except (TimeoutError, OSError) as err:
        sys.exit(f"failed: {err!r}")
