#!/usr/bin/env node
// The Node.js server of courier's interop suite (built-in http and http2 only).
//
// HTTP/1.1 uses `http`, h2c prior knowledge `http2.createServer`, and TLS
// `http2.createSecureServer({allowHTTP1: true})` so ALPN offers h2 and
// http/1.1. The handler uses the compatibility API shared by both stacks.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const path = require('path');
const zlib = require('zlib');

function parseArgs(argv) {
  const opts = { profile: 'default', docroot: '.' };
  const known = ['h1', 'h2c', 'tls', 'cert', 'key', 'docroot', 'profile'];
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--?/, '');
    if (!known.includes(name) || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    opts[name] = argv[i + 1];
  }
  if (!['default', 'tight'].includes(opts.profile)) {
    throw new Error(`unknown profile ${opts.profile}`);
  }
  if (opts.tls && !(opts.cert && opts.key)) throw new Error('--tls needs --cert and --key');
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const tight = opts.profile === 'tight';

const TRAILER_BODY = Buffer.alloc(64 * 1024);
for (let i = 0; i < TRAILER_BODY.length; i++) TRAILER_BODY[i] = i % 251;
const TRAILER_SUM = crypto.createHash('sha256').update(TRAILER_BODY).digest('hex');

function notFound(res) {
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('not found');
}

// Whatever a client sends must not take the server down (a bad percent
// escape makes decodeURIComponent throw): answer 400 instead.
function handle(req, res) {
  try {
    route(req, res);
  } catch (err) {
    if (!res.headersSent) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end('bad request');
    } else {
      res.destroy();
    }
  }
}

function route(req, res) {
  const url = new URL(req.url, 'http://x');
  const p = url.pathname;
  const m = req.method;
  const get = m === 'GET';
  let arg;
  if (p.startsWith('/static/') && (get || m === 'HEAD')) {
    serveStatic(req, res, decodeURIComponent(p.slice('/static/'.length)));
  } else if (p === '/echo' && (m === 'POST' || m === 'PUT')) {
    // Stream back chunk by chunk; pipe() writes each chunk as it arrives.
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    req.pipe(res);
  } else if (get && (arg = match(p, '/status/')) !== null) {
    const code = Number(arg);
    if (!Number.isInteger(code) || code < 200 || code > 599) return notFound(res);
    res.writeHead(code);
    res.end();
  } else if (get && p === '/trailers') {
    // HTTP/1.1 needs the declaration and chunked framing; h2 sends a HEADERS frame.
    const headers = { 'content-type': 'application/octet-stream' };
    if (req.httpVersionMajor === 1) headers.trailer = 'x-checksum';
    res.writeHead(200, headers);
    res.write(TRAILER_BODY);
    res.addTrailers({ 'x-checksum': TRAILER_SUM });
    res.end();
  } else if (get && p === '/early-hints') {
    res.writeEarlyHints({ link: '</static/small.txt>; rel=preload' });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  } else if (get && p === '/gzip') {
    gzip(req, res);
  } else if (get && (arg = match(p, '/redirect/')) !== null) {
    const n = Number(arg);
    if (!Number.isInteger(n) || n < 0) return notFound(res);
    if (n === 0) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('done');
    }
    res.writeHead(302, { location: `/redirect/${n - 1}` });
    res.end();
  } else if (get && (arg = match(p, '/delay/')) !== null) {
    const ms = Number(arg);
    if (!Number.isInteger(ms) || ms < 0) return notFound(res);
    const timer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    }, ms);
    res.on('close', () => clearTimeout(timer));
  } else {
    notFound(res);
  }
}

function match(p, prefix) {
  return p.startsWith(prefix) ? p.slice(prefix.length) : null;
}

function serveStatic(req, res, name) {
  if (name === '' || name.includes('..') || name.includes('\0')) return notFound(res);
  const file = path.join(opts.docroot, name);
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) return notFound(res);
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': st.size,
      'last-modified': st.mtime.toUTCString(),
    });
    if (req.method === 'HEAD') return res.end();
    const stream = fs.createReadStream(file);
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  });
}

function gzip(req, res) {
  fs.readFile(path.join(opts.docroot, 'text.txt'), (err, text) => {
    if (err) return notFound(res);
    const headers = { 'content-type': 'text/plain; charset=utf-8', vary: 'accept-encoding' };
    if (/gzip/i.test(req.headers['accept-encoding'] || '')) {
      text = zlib.gzipSync(text);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = text.length;
    res.writeHead(200, headers);
    res.end(text);
  });
}

// "tight": Node's own knobs. HTTP/1.1 (also HTTP/1.1 over the TLS port):
// keepAliveTimeout, maxRequestsPerSocket, headersTimeout (checked every
// connectionsCheckingInterval, so that is shortened too). HTTP/2 has no
// request limit and no idle timeout, only an inactivity one: see below.
function applyProfile(server, isH2) {
  if (!tight) return server;
  server.keepAliveTimeout = 2000;
  server.maxRequestsPerSocket = 100;
  server.headersTimeout = 3000;
  if (isH2) closeIdleSessions(server, 2000);
  return server;
}

// server.setTimeout() would destroy a session after `ms` without traffic even
// with a response pending (a slow handler), and on the TLS port it also cuts
// HTTP/1.1 sockets mid-request. So time sessions out one by one and close
// (GOAWAY, then end) only those with no open stream; an inactivity timer
// fires again after the next activity.
function closeIdleSessions(server, ms) {
  server.on('session', (session) => {
    let open = 0;
    session.on('stream', (stream) => {
      open++;
      stream.on('close', () => open--);
    });
    session.setTimeout(ms, () => {
      if (open === 0 && !session.closed) session.close();
    });
  });
}

const servers = [];

function listen(server, port) {
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), '127.0.0.1', resolve);
  });
}

async function main() {
  const pending = [];
  if (opts.h1) {
    const server = http.createServer(
      tight ? { connectionsCheckingInterval: 500, headersTimeout: 3000 } : {},
      handle,
    );
    pending.push(listen(applyProfile(server, false), opts.h1));
  }
  if (opts.h2c) {
    pending.push(listen(applyProfile(http2.createServer({}, handle), true), opts.h2c));
  }
  if (opts.tls) {
    const server = http2.createSecureServer(
      {
        cert: fs.readFileSync(opts.cert),
        key: fs.readFileSync(opts.key),
        allowHTTP1: true,
        ...(tight ? { connectionsCheckingInterval: 500, headersTimeout: 3000 } : {}),
      },
      handle,
    );
    pending.push(listen(applyProfile(server, true), opts.tls));
  }
  await Promise.all(pending);
  process.stdout.write('ready\n');
}

function stop() {
  for (const s of servers) {
    s.close();
    if (s.closeAllConnections) s.closeAllConnections();
  }
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

main().catch((err) => {
  process.stderr.write(`server.js: ${err.message}\n`);
  process.exit(1);
});
