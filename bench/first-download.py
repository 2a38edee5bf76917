#!/usr/bin/env python3
"""Issue 30 item 3: per-download wall time through delay-proxy (25 ms each way) to courier serve.
Each round runs every config once (alternated, order rotated); prints medians and per-round ratios
against HTTP/1.1 (plain or TLS) from the same round.
usage: bench/first-download.py ROUNDS N[,N..] CONFIG...   CONFIG = label:http:tls:ENV=V+ENV=V (tls = 0/1;
BIN=path in ENV: that client binary for the config). Environment: COURIER, SERVER_BIN, PROXY, ONE_WAY (ms), SIZE.
The TLS server also serves HTTP/3 (`--http3`, QUIC on the same port number) and its proxy relays UDP too (`--udp`),
so http 3 (tls 1) is HTTP/3 from the same server as TLS HTTP/1.1, through the same delay; its ratio is against
tls HTTP/1.1.
e.g. bench/first-download.py 5 1,3,10 h1:1.1:0: h2c:2:0: tls-h1:1.1:1: tls-h2:2:1: h3:3:1:"""
import os, statistics, subprocess, sys, time, socket, tempfile

ROOT = os.environ.get("ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COURIER = os.environ.get("COURIER", f"{ROOT}/target/release/courier")
SERVER_BIN = os.environ.get("SERVER_BIN", COURIER)
PROXY = os.environ.get("PROXY", f"{ROOT}/target/release/delay-proxy")
ONE_WAY = os.environ.get("ONE_WAY", "25")
SIZE = int(os.environ.get("SIZE", str(64 << 20)))

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def wait_port(p):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", p), 0.2).close(); return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"port {p} never opened")

procs = []
work = tempfile.mkdtemp(prefix="perf30.")
def spawn(args):
    p = subprocess.Popen(args, stdout=open(f"{work}/log", "a"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    procs.append(p); return p

try:
    plain, tls = free_port(), free_port()
    spawn([SERVER_BIN, "serve", "-p", str(plain)])
    spawn([SERVER_BIN, "serve", "-p", str(tls), "--tls", "--http3", "--cert-out", f"{work}/ca.pem"])
    wait_port(plain); wait_port(tls)
    pplain, ptls = free_port(), free_port()
    spawn([PROXY, f"127.0.0.1:{pplain}", f"127.0.0.1:{plain}", ONE_WAY])
    spawn([PROXY, "--udp", f"127.0.0.1:{ptls}", f"127.0.0.1:{tls}", ONE_WAY])
    wait_port(pplain); wait_port(ptls)
    rounds = int(sys.argv[1]); ns = [int(x) for x in sys.argv[2].split(",")]
    configs = []
    for c in sys.argv[3:]:
        label, http, t, *env = c.split(":")
        e = dict(kv.split("=", 1) for kv in (env[0].split("+") if env and env[0] else []))
        configs.append((label, http, t == "1", e))
    times = {}
    for r in range(rounds):
        for n in ns:
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for label, http, t, e in order:
                url = f"https://127.0.0.1:{ptls}" if t else f"http://127.0.0.1:{pplain}"
                cmd = [e.get("BIN", COURIER), "bench", f"{url}/bytes/{SIZE}", "-n", str(n), "-c", "1", "--threads", "1",
                       "--http", http, "--progress", "none", "--json", f"{work}/out.json"]
                if t: cmd.append("--insecure")
                env = dict(os.environ, **e)
                t0 = time.perf_counter()
                rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
                dt = time.perf_counter() - t0
                if rc != 0: print("FAILED", label, n, file=sys.stderr)
                times.setdefault((label, n), []).append(dt)
    load = open("/proc/loadavg").read().split()[:3]
    print(f"load after: {' '.join(load)}; rounds {rounds}; one way {ONE_WAY} ms; size {SIZE}")
    for n in ns:
        base = {False: None, True: None}
        for label, http, t, e in configs:
            if http == "1.1": base[t] = label
        print(f"\n-n {n}: label | median s | MB/s | ratio of medians vs HTTP/1.1 | median of per-round ratios")
        for label, http, t, e in configs:
            ts = times[(label, n)]
            med = statistics.median(ts)
            b = base[t]
            line = f"  {label:28s} {med*1000:8.1f} ms {n*SIZE/med/1e6:7.0f} MB/s"
            if b:
                bt = times[(b, n)]
                line += f"  {statistics.median(bt)/med:5.2f}x  {statistics.median([x/y for x, y in zip(bt, ts)]):5.2f}x"
            line += "  runs " + " ".join(f"{x*1000:.0f}" for x in ts)
            print(line)
finally:
    for p in procs: p.kill()
