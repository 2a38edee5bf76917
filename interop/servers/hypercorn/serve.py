#!/usr/bin/env python3
"""The hypercorn server of courier's interop suite.

An ASGI app (standard library only) served by hypercorn, started
programmatically so it takes the same flags as the Go and Node servers.
Hypercorn's insecure binds speak HTTP/1.1 and h2c (prior knowledge and
Upgrade) on the same port, so --h1 and --h2c are two such binds; --tls
offers ALPN h2 and http/1.1; --h3 is a QUIC bind (HTTP/3 on aioquic), which
takes the same certificate.

Hypercorn limits what ASGI can send: trailers and 103 Early Hints exist only
over HTTP/2, and trailers only when the request carries `te: trailers`.
Over HTTP/1.1 /trailers sends the chunked body without trailers and
/early-hints sends only the 200.
"""

import argparse
import asyncio
import functools
import gzip
import hashlib
import os
import signal
import sys

from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config
from hypercorn.utils import wrap_app

TRAILER_BODY = bytes(i % 251 for i in range(64 * 1024))
TRAILER_SUM = hashlib.sha256(TRAILER_BODY).hexdigest().encode()
CHUNK = 64 * 1024

DOCROOT = "."


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    get = method == "GET"
    if path.startswith("/static/") and method in ("GET", "HEAD"):
        await static(scope, send, path[len("/static/"):])
    elif path == "/echo" and method in ("POST", "PUT"):
        await echo(receive, send)
    elif get and path.startswith("/status/"):
        code = number(path[len("/status/"):])
        if code is None or not 200 <= code <= 599:
            return await not_found(send)
        await start(send, code)
        await send({"type": "http.response.body", "body": b""})
    elif get and path == "/trailers":
        await trailers(scope, send)
    elif get and path == "/early-hints":
        if "http.response.early_hint" in scope["extensions"]:
            await send(
                {"type": "http.response.early_hint", "links": [b"</static/small.txt>; rel=preload"]}
            )
        await simple(send, 200, b"ok")
    elif get and path == "/gzip":
        await gzipped(scope, send)
    elif get and path.startswith("/redirect/"):
        n = number(path[len("/redirect/"):])
        if n is None:
            return await not_found(send)
        if n == 0:
            return await simple(send, 200, b"done")
        await start(send, 302, [(b"location", b"/redirect/%d" % (n - 1))])
        await send({"type": "http.response.body", "body": b""})
    elif get and path.startswith("/delay/"):
        ms = number(path[len("/delay/"):])
        if ms is None:
            return await not_found(send)
        await asyncio.sleep(ms / 1000)
        await simple(send, 200, b"ok")
    else:
        await not_found(send)


def number(text):
    return int(text) if text.isdigit() else None


async def start(send, status, headers=(), trailers=False):
    await send(
        {"type": "http.response.start", "status": status, "headers": list(headers),
         "trailers": trailers}
    )


async def simple(send, status, body, headers=()):
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body)),
               *headers]
    await start(send, status, headers)
    await send({"type": "http.response.body", "body": body})


async def not_found(send):
    await simple(send, 404, b"not found")


async def static(scope, send, name):
    if not name or ".." in name or "\0" in name:
        return await not_found(send)
    file = os.path.join(DOCROOT, name)
    if not os.path.isfile(file):
        return await not_found(send)
    size = os.path.getsize(file)
    await start(send, 200, [(b"content-type", b"application/octet-stream"),
                            (b"content-length", b"%d" % size)])
    if scope["method"] == "HEAD":
        return await send({"type": "http.response.body", "body": b""})
    with open(file, "rb") as f:
        while chunk := f.read(CHUNK):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def echo(receive, send):
    """Sends each received chunk back at once (no content-length: chunked / DATA)."""
    await start(send, 200, [(b"content-type", b"application/octet-stream")])
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return  # http.disconnect
        if message.get("body"):
            await send({"type": "http.response.body", "body": message["body"], "more_body": True})
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.body", "body": b""})


async def trailers(scope, send):
    # Hypercorn sends trailers only over h2 and only to a request with
    # exactly `te: trailers`; declaring them elsewhere promises what never comes.
    can = "http.response.trailers" in scope["extensions"] and any(
        k == b"te" and v == b"trailers" for k, v in scope["headers"]
    )
    headers = [(b"content-type", b"application/octet-stream")]
    if can:
        headers.append((b"trailer", b"x-checksum"))
    await start(send, 200, headers, trailers=can)
    await send({"type": "http.response.body", "body": TRAILER_BODY, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
    if can:
        await send({"type": "http.response.trailers",
                    "headers": [(b"x-checksum", TRAILER_SUM)], "more_trailers": False})


async def gzipped(scope, send):
    try:
        with open(os.path.join(DOCROOT, "text.txt"), "rb") as f:
            text = f.read()
    except OSError:
        return await not_found(send)
    headers = [(b"vary", b"accept-encoding")]
    accept = b",".join(v for k, v in scope["headers"] if k == b"accept-encoding")
    if b"gzip" in accept.lower():
        text = gzip.compress(text)
        headers.append((b"content-encoding", b"gzip"))
    await simple(send, 200, text, headers)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--h1", type=int)
    p.add_argument("--h2c", type=int)
    p.add_argument("--tls", type=int)
    p.add_argument("--h3", type=int)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--docroot", default=".")
    p.add_argument("--profile", choices=["default", "tight"], default="default")
    args = p.parse_args()
    if (args.tls or args.h3) and not (args.cert and args.key):
        p.error("--tls and --h3 need --cert and --key")
    return args


def make_config(args):
    config = Config()
    config.accesslog = None
    insecure = [f"127.0.0.1:{port}" for port in (args.h1, args.h2c) if port]
    if args.tls or args.h3:
        config.certfile, config.keyfile = args.cert, args.key
        config.bind = [f"127.0.0.1:{args.tls}"] if args.tls else []
        config.insecure_bind = insecure
        # aioquic's QUIC has its own idle timeout (60 s) and no request
        # limit: neither keep_alive setting below reaches it.
        config.quic_bind = [f"127.0.0.1:{args.h3}"] if args.h3 else []
    else:
        config.bind = insecure
    if args.profile == "tight":
        # keep_alive_timeout closes connections with no request in progress,
        # so it is also the header timeout (an h1 request whose head is
        # incomplete is not in progress yet). keep_alive_max_requests is the
        # per-connection limit (h1: Connection: close; h2: GOAWAY).
        # Not set: `max_requests` restarts the whole worker, not a connection;
        # `read_timeout` bounds every wait for client bytes, and an h2
        # response in flight when it fires never ends (the connection hangs).
        config.keep_alive_timeout = 2
        config.keep_alive_max_requests = 100
        if args.h3:
            # QUIC's idle timeout, which hypercorn does not configure
            # (aioquic's default: 60 s): 2 s too, through the name
            # hypercorn's QUIC protocol builds its configuration with.
            import hypercorn.protocol.quic as quic

            quic.QuicConfiguration = functools.partial(quic.QuicConfiguration, idle_timeout=2.0)
    return config


async def main():
    global DOCROOT
    args = parse_args()
    DOCROOT = args.docroot
    config = make_config(args)
    # Bind and listen before serving so `ready` means connectable;
    # hypercorn's own binding happens after lifespan startup, with no hook.
    sockets = config.create_sockets()
    for sock in sockets.secure_sockets + sockets.insecure_sockets:
        sock.listen(config.backlog)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = asyncio.create_task(
        worker_serve(wrap_app(app, config.wsgi_max_body_size, "asgi"), config,
                     sockets=sockets, shutdown_trigger=stop.wait)
    )
    print("ready", flush=True)
    await server


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    sys.exit(0)
