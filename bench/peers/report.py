#!/usr/bin/env python3
"""Helper of bench/peers/run.sh: reads one client's output into a JSON line (`parse`, `skip`),
and turns all lines into tables and results.json (`report`). Standard library only."""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone

# courier-tick: courier with `--tick` (run.sh's COURIER_TICK), sending on h2load's 10 ms ticks
CLIENT_ORDER = ["wrk", "h2load", "go", "reqwest", "reqwest-h3", "hyper-util", "courier", "courier-tick"]
COURIERS = ["courier", "courier-tick"]
LIBRARIES = ["go", "reqwest", "reqwest-h3", "hyper-util"]
TOOLS = ["wrk", "h2load"]

# RATE (the open loop): a client whose achieved rate is below this share of its target fell behind
# its schedule, and its row is flagged rather than compared as if it had carried the same load.
BEHIND = 0.97
# The open-loop figures a client reports beside the closed loop's (courier's from its JSON's
# `open_loop`, the Rust peers' from their JSON line; h2load reports none of them).
OPEN_LOOP_KEYS = ("intended", "sent", "not_sent", "late", "max_in_flight", "p50_corrected_ms", "p99_corrected_ms")

UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def wrk_ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text.strip())
    return float(m.group(1)) * UNITS_MS[m.group(2)]


def parse_wrk(out):
    r = {}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h)", out)
    r["requests"] = int(m.group(1))
    r["elapsed_s"] = float(m.group(2)) * UNITS_MS[m.group(3)] / 1000.0
    for q, key in (("50", "p50_ms"), ("99", "p99_ms")):
        m = re.search(rf"^\s*{q}%\s+(\S+)", out, re.M)
        r[key] = wrk_ms(m.group(1)) if m else None
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    r["errors"] = errors
    return r


def h2load_ms(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text.strip())
    return float(m.group(1)) * UNITS_MS[m.group(2)]


def parse_h2load(out):
    r = {}
    m = re.search(r"finished in ([\d.]+)(us|ms|s),", out)
    r["elapsed_s"] = float(m.group(1)) * UNITS_MS[m.group(2)] / 1000.0
    m = re.search(
        r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout",
        out,
    )
    r["requests"] = int(m.group(4))
    r["errors"] = int(m.group(5)) + int(m.group(7))  # errored ⊂ failed
    # h2load prints no percentiles (only with --log-file, which costs it CPU per request)
    r["p50_ms"] = None
    r["p99_ms"] = None
    m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out)
    if m:
        r["mean_ms"] = h2load_ms(m.group(3))
        r["max_ms"] = h2load_ms(m.group(2))
    return r


def parse_json_line(out):
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    j = json.loads(line)
    r = {k: j[k] for k in ("requests", "errors", "elapsed_s", "p50_ms", "p99_ms")}
    r.update({k: j[k] for k in OPEN_LOOP_KEYS if k in j})
    return r


def parse_courier(path):
    with open(path) as f:
        j = json.load(f)
    lb = j.get("latency_last_byte_ms") or {}
    r = {
        "requests": j["requests"],
        "errors": j["errors"] if isinstance(j["errors"], int) else sum(j["errors"].values()),
        "elapsed_s": j["duration_s"],
        "p50_ms": lb.get("p50"),
        "p99_ms": lb.get("p99"),
        "connections_established": j.get("connections_established"),
        "connections_open_max": j.get("connections_open_max"),
        "courier_version": j.get("version"),
    }
    ol = j.get("open_loop")
    if ol:
        corrected = ol.get("latency_corrected_last_byte_ms") or {}
        r.update(intended=ol.get("intended"), sent=ol.get("sent"), not_sent=ol.get("not_sent"),
                 late=ol.get("late"), max_in_flight=ol.get("max_in_flight"),
                 p50_corrected_ms=corrected.get("p50"), p99_corrected_ms=corrected.get("p99"))
    return r


def cmd_parse(a):
    d = a.dir
    out = open(os.path.join(d, "stdout"), errors="replace").read()
    rec = {"scenario": a.scenario, "client": a.client, "round": a.round, "rc": a.rc, "url": a.url,
           "http": a.http, "concurrency": a.concurrency, "rate": rate_arg(a.rate)}
    try:
        rec["command"] = open(os.path.join(d, "cmd")).read().strip()
    except OSError:
        pass
    try:
        if a.client == "wrk":
            rec.update(parse_wrk(out))
        elif a.client == "h2load":
            rec.update(parse_h2load(out))
        elif a.client in COURIERS:
            rec.update(parse_courier(os.path.join(d, "courier.json")))
        else:
            rec.update(parse_json_line(out))
    except Exception as e:  # noqa: BLE001 - report and keep going
        err = open(os.path.join(d, "stderr"), errors="replace").read()[-2000:]
        rec["failed"] = f"cannot parse output: {e!r}; stdout tail: {out[-500:]!r}; stderr tail: {err!r}"
        print(json.dumps(rec))
        print(f"   {a.client:<10} round {a.round}: FAILED ({rec['failed'][:300]})", file=sys.stderr)
        return
    t = open(os.path.join(d, "time")).read().strip().splitlines()[-1].split()
    user, sys_, maxrss_kb, wall = float(t[0]), float(t[1]), int(t[2]), float(t[3])
    rec.update(cpu_user_s=user, cpu_sys_s=sys_, wall_s=wall, rss_mb=maxrss_kb / 1024.0)
    # %w: the times the client waited (slept in epoll_wait, mostly), %c: the times it was preempted
    waits = int(t[4]) if len(t) > 5 else None
    if len(t) > 5:
        rec.update(voluntary_switches=waits, involuntary_switches=int(t[5]))
    try:
        rec["connections"] = int(open(os.path.join(d, "conns")).read().strip())
    except (OSError, ValueError):
        rec["connections"] = None
    busy = cpu_busy(d)
    if busy and wall:
        # how busy the client's and the server's CPUs were, whoever ran there: on a quiet machine
        # the client CPU shows just the client (cpu_pct), the server CPU just nginx
        if a.client_cpu in busy:
            rec["client_cpu_busy_pct"] = 100.0 * busy[a.client_cpu] / wall
            rec["client_cpu_others_pct"] = max(0.0, rec["client_cpu_busy_pct"] - 100.0 * (user + sys_) / wall)
        if a.server_cpu in busy:
            rec["server_cpu_busy_pct"] = 100.0 * busy[a.server_cpu] / wall
    server = process_seconds(d)
    if server is not None and wall:
        # the server process alone (nginx's worker, or courier serve), whatever else ran on its core
        rec["server_proc_pct"] = 100.0 * server / wall
    n = rec["requests"]
    rec["rps"] = n / rec["elapsed_s"] if rec["elapsed_s"] else 0.0
    rec["cpu_us_per_req"] = (user + sys_) * 1e6 / n if n else None
    # A client that waits less often batches more a wake-up: what a CPU figure is made of
    rec["sleeps_per_req"] = waits / n if waits is not None and n else None
    # CALLGRIND=1: valgrind prints "==pid== Collected : N" (user-space instructions, startup included)
    m = re.search(r"==\d+== Collected : (\d+)", open(os.path.join(d, "stderr"), errors="replace").read())
    if m and n:
        rec["instructions_per_req"] = int(m.group(1)) / n
    rec["cpu_pct"] = 100.0 * (user + sys_) / wall if wall else None
    if rec["rate"]:
        rec["behind"] = rec["rps"] < BEHIND * rec["rate"]
    print(json.dumps(rec))
    p50 = f"{rec['p50_ms']:.2f}" if rec.get("p50_ms") is not None else "–"
    cpu = f"{rec['cpu_us_per_req']:.1f}" if rec["cpu_us_per_req"] is not None else "–"
    errs = f", {rec['errors']} errors" if rec["errors"] else ""
    noise = ""
    if rec.get("client_cpu_others_pct", 0) > 5:
        noise = f"  (others used {rec['client_cpu_others_pct']:.0f}% of the client CPU)"
    instr = f"  {rec['instructions_per_req']:,.0f} instructions/req" if "instructions_per_req" in rec else ""
    target = ""
    if rec["rate"]:
        target = f" of {rec['rate']:.0f}{' BEHIND' if rec['behind'] else ''}"
    server = f"  server {rec['server_proc_pct']:.0f}%" if "server_proc_pct" in rec else ""
    print(f"   {a.client:<10} round {a.round}: {cpu:>7} µs/req  {rec['rps']:>10.0f}{target} req/s  p50 {p50} ms  "
          f"cpu {rec['cpu_pct']:.0f}%{server}  {rec['connections']} conns{errs}{noise}{instr}", file=sys.stderr)


def rate_arg(text):
    """run.sh's --rate: the open loop's target (requests a second), or None for the closed loop."""
    return float(text) if text else None


def process_seconds(d):
    """CPU seconds the server process used between the server0 and server1 snapshots (ticks)."""
    try:
        t0, t1 = (open(os.path.join(d, name)).read().strip() for name in ("server0", "server1"))
        return (int(t1) - int(t0)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def cpu_busy(d):
    """Busy seconds per CPU between the stat0 and stat1 snapshots of /proc/stat."""
    try:
        snaps = []
        for name in ("stat0", "stat1"):
            cpus = {}
            for line in open(os.path.join(d, name)):
                f = line.split()
                vals = [int(x) for x in f[1:]]
                idle = vals[3] + vals[4]  # idle + iowait
                cpus[f[0][3:]] = (sum(vals[:8]) - idle)
            snaps.append(cpus)
        hz = os.sysconf("SC_CLK_TCK")
        return {c: (snaps[1][c] - snaps[0][c]) / hz for c in snaps[0] if c in snaps[1]}
    except (OSError, ValueError, IndexError):
        return None


def cmd_skip(a):
    print(json.dumps({"scenario": a.scenario, "client": a.client, "skipped": a.reason, "rate": rate_arg(a.rate)}))


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paired_ratio(mine, theirs, key, rate):
    """`mine` ÷ `theirs` round by round: a round runs the clients one after the other, so each pair shares the
    machine's state of those seconds, which the medians of the two columns do not. The median, range and how
    many pairs came out under 1, over the rounds both completed (in the open loop, on schedule); None without
    a pair."""
    def by_round(v):
        return {r["round"]: r.get(key) for r in v.get("rounds", [])
                if r.get(key) and not (rate and r.get("behind"))}
    a, b = by_round(mine), by_round(theirs)
    ratios = [a[n] / b[n] for n in sorted(a.keys() & b.keys())]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "pairs": len(ratios),
            "under_1": sum(1 for x in ratios if x < 1.0)}


def fmt(v, digits=1):
    if v is None:
        return "–"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def versions(lock_path):
    v = {}
    for cmd, key in ((["nginx", "-v"], "nginx"), (["wrk", "-v"], "wrk"), (["h2load", "--version"], "h2load"),
                     (["go", "version"], "go"), (["rustc", "--version"], "rustc")):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            v[key] = (p.stdout + p.stderr).strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            pass
    try:
        lock = open(lock_path).read()
        for name in ("reqwest", "hyper", "hyper-util", "h2", "h3", "h3-quinn", "quinn", "rustls", "tokio"):
            m = re.search(rf'name = "{re.escape(name)}"\nversion = "([^"]+)"', lock)
            if m:
                v[name] = m.group(1)
    except OSError:
        pass
    return v


def cmd_report(a):
    recs = [json.loads(l) for l in open(a.raw) if l.strip()]
    # What the ratios compare: CPU time, or (CALLGRIND=1) user-space instructions.
    key, unit, digits = "cpu_us_per_req", "CPU µs/req", 1
    if a.metric == "instructions":
        key, unit, digits = "instructions_per_req", "instructions/req (user space)", 0
    labels = dict(x.split("=", 1) for x in a.labels.split(";") if "=" in x)
    # one table per scenario, and with RATE per scenario and rate
    scenarios = list(dict.fromkeys(row_key(r) for r in recs))
    open_loop = any(r.get("rate") for r in recs)
    out = {
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model(), "kernel": platform.release(),
                    "server_cpu": a.server_cpu, "client_cpu": a.client_cpu},
        "rounds": a.rounds, "duration_s": a.duration,
        "metric": key,
        "method": "client CPU = user+sys of the client process (/usr/bin/time), whole run incl. "
                  "startup and connection setup, divided by completed requests; medians over rounds "
                  "(each metric separately); connections = established to the server port at mid-run (ss); "
                  "courier_paired_ratios = courier's CPU over a peer's in each round (the clients run one after "
                  "the other within a round), their median, range and how many are under 1; sleeps = "
                  "voluntary context switches (/usr/bin/time %w)",
        "courier_binary": a.courier_note,
        "versions": versions(a.peers_lock),
        "scenarios": {},
    }
    text = []
    summary_rows = []
    for sc in scenarios:
        rs = [r for r in recs if row_key(r) == sc]
        rate = rs[0].get("rate")
        title = labels.get(rs[0]["scenario"], rs[0]["scenario"])
        if rate:
            title += f", open loop at {rate:,.0f} req/s"
        clients = {}
        for c in CLIENT_ORDER:
            cr = [r for r in rs if r["client"] == c]
            if not cr:
                continue
            skipped = [r for r in cr if "skipped" in r]
            ok = [r for r in cr if "skipped" not in r and "failed" not in r]
            if skipped:
                clients[c] = {"skipped": skipped[0]["skipped"]}
                continue
            if not ok:
                clients[c] = {"failed": [r.get("failed") for r in cr]}
                continue
            # RATE: the medians are over the rounds that kept to the schedule; a round behind it carried
            # less load (a client starved of its core by other work batches more, and costs less a
            # request), so it is counted and left out, unless every round was behind
            used = ok
            if rate:
                used = [r for r in ok if not r.get("behind")] or ok
            agg = {k: med([r.get(k) for r in used]) for k in
                   ("cpu_us_per_req", "instructions_per_req", "rps", "p50_ms", "p99_ms", "rss_mb", "connections", "cpu_pct", "errors",
                    "mean_ms", "sleeps_per_req", "client_cpu_others_pct", "server_cpu_busy_pct", "server_proc_pct")
                   + OPEN_LOOP_KEYS}
            agg["rounds"] = ok
            agg["command"] = ok[0].get("command")
            if c in COURIERS:
                agg["connections_established"] = med([r.get("connections_established") for r in used])
            if rate:
                agg["rate"] = rate
                agg["rounds_behind"] = sum(1 for r in ok if r.get("behind"))
                agg["always_behind"] = agg["rounds_behind"] == len(ok)
            clients[c] = agg
        entry = {"label": title, "scenario": rs[0]["scenario"], "rate": rate, "clients": clients}
        cpu = {c: v[key] for c, v in clients.items() if v.get(key)}
        ratios = {}
        if "courier" in cpu:
            if "hyper-util" in cpu:
                ratios["vs_hyper-util"] = cpu["courier"] / cpu["hyper-util"]
            for t in TOOLS:
                if t in cpu:
                    ratios[f"vs_{t}"] = cpu["courier"] / cpu[t]
            libs = {c: cpu[c] for c in LIBRARIES if c in cpu}
            if libs:
                best = min(libs, key=libs.get)
                ratios["best_library"] = best
                ratios["vs_best_library"] = cpu["courier"] / libs[best]
        entry["courier_cpu_ratios"] = ratios
        paired = {}
        if "courier" in cpu:
            for p in TOOLS + ["hyper-util"]:
                if p in cpu and (pr := paired_ratio(clients["courier"], clients[p], key, rate)):
                    paired[f"vs_{p}"] = pr
        entry["courier_paired_ratios"] = paired
        if "courier-tick" in cpu:
            entry["courier_tick_cpu_ratios"] = {f"vs_{p}": cpu["courier-tick"] / cpu[p]
                                                for p in ("h2load", "hyper-util", "courier") if p in cpu}
        out["scenarios"][sc] = entry

        text.append(f"\n### {title}\n")
        if rate:
            text.extend(open_loop_table(clients, cpu, key, unit, digits))
        else:
            text.extend(closed_loop_table(clients, key, unit, digits))
            text.append("\nsleeps/req: the client's voluntary context switches (waits in epoll_wait) ÷ requests; "
                        "each costs a switch out and back in, so a client that batches more a wake-up sleeps less")
        others = [r.get("client_cpu_others_pct") for r in rs if r.get("client_cpu_others_pct") is not None]
        if others:
            entry["client_cpu_others_pct"] = {"median": med(others), "min": min(others), "max": max(others)}
            text.append(f"\nother work on the client CPU during these runs (noise): median {med(others):.0f} % "
                        f"of the time (range {min(others):.0f}–{max(others):.0f} %)")
        if ratios:
            parts = [f"{ratios[f'vs_{t}']:.2f} × {t}" for t in TOOLS if f"vs_{t}" in ratios]
            if "vs_best_library" in ratios:
                parts.append(f"{ratios['vs_best_library']:.2f} × the best library ({ratios['best_library']})")
            text.append(f"\ncourier {unit}: {', '.join(parts)}")
            if paired:
                text.append("round by round (ratios of each round's own pair): " + ", ".join(
                    f"{v['median']:.2f} × {p[3:]} ({v['min']:.2f}–{v['max']:.2f}, under 1 in {v['under_1']} of "
                    f"{v['pairs']})" for p, v in paired.items()))
        elif "courier" in cpu:
            text.append("\ncourier: no peer in this run to compare with")
        elif "courier" in clients:
            text.append("\ncourier: no figure (skipped or failed)")
        behind = [c for c, v in clients.items() if v.get("always_behind")]
        if behind:
            entry["behind"] = behind
            text.append(f"\n⚠ behind their schedule in every round (their cost is not at the target rate): "
                        f"{', '.join(behind)}")
        summary_rows.append((title, {c: v.get(key) for c, v in clients.items()}, ratios))

    text.extend(summary_table(summary_rows, unit, digits, open_loop))
    print("\n".join(text))
    out["markdown"] = "\n".join(text).strip() + "\n"
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"\nwrote {a.out}", file=sys.stderr)


def row_key(r):
    """A table's key: the scenario, and in the open loop its rate (`h2c@20000`)."""
    return f"{r['scenario']}@{r['rate']:g}" if r.get("rate") else r["scenario"]


def not_run(v):
    """Why a client has no figures in a table's row (skipped, failed), or None."""
    if "skipped" in v:
        return f"skipped: {v['skipped']}"
    if "failed" in v:
        return "failed (see results.json)"
    return None


def closed_loop_table(clients, key, unit, digits):
    text = [f"| client | {unit} | req/s | p50 ms | p99 ms | RSS MB | conns | sleeps/req |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c, v in clients.items():
        if (why := not_run(v)) is not None:
            text.append(f"| {c} | {why} |" + " |" * 6)
            continue
        p50, p99 = fmt(v["p50_ms"], 2), fmt(v["p99_ms"], 2)
        if c == "h2load" and v["p50_ms"] is None and v.get("mean_ms") is not None:
            p50 = f"({fmt(v['mean_ms'], 2)} mean)"
        err = f" ⚠ {fmt(v['errors'], 0)} errors" if v.get("errors") else ""
        text.append(f"| {c} | {fmt(v[key], digits)} | {fmt(v['rps'], 0)} | {p50} | {p99} | "
                    f"{fmt(v['rss_mb'])} | {conns_cell(c, v)}{err} | {fmt(v.get('sleeps_per_req'), 3)} |")
    return text


def open_loop_table(clients, cpu, key, unit, digits):
    """RATE's table: the target and achieved rates, the cost beside h2load's and hyper-util's, and how
    busy the server was (its core, whoever ran there, and its process alone)."""
    text = [f"| client | target req/s | achieved req/s | {unit} | ÷ h2load | ÷ hyper-util | p50 ms | p99 ms | "
            "p99 from due ms | server core busy % | server process % | conns |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c, v in clients.items():
        if (why := not_run(v)) is not None:
            text.append(f"| {c} | {why} |" + " |" * 10)
            continue
        achieved = fmt(v["rps"], 0)
        if v.get("always_behind"):
            achieved += f" ⚠ behind in all {v['rounds_behind']} rounds"
        elif v.get("rounds_behind"):
            achieved += f" ({v['rounds_behind']} of {len(v['rounds'])} rounds behind, left out)"
        ratio = {p: (f"{cpu[c] / cpu[p]:.2f}" if c in cpu and p in cpu else "–") for p in ("h2load", "hyper-util")}
        err = f" ⚠ {fmt(v['errors'], 0)} errors" if v.get("errors") else ""
        text.append(f"| {c} | {fmt(v['rate'], 0)} | {achieved} | {fmt(v[key], digits)} | {ratio['h2load']} | "
                    f"{ratio['hyper-util']} | {fmt(v['p50_ms'], 2)} | {fmt(v['p99_ms'], 2)} | "
                    f"{fmt(v.get('p99_corrected_ms'), 2)} | {fmt(v.get('server_cpu_busy_pct'), 0)} | "
                    f"{fmt(v.get('server_proc_pct'), 0)} | {conns_cell(c, v)}{err} |")
    text.append(f"\nachieved = completed requests ÷ run time; a round under {BEHIND:.0%} of the target is behind its "
                "schedule (it carried less load) and left out of the medians; ⚠ every round behind: do not compare "
                "its cost. p50/p99 from the send; "
                "\"from due\" from the time the schedule set (courier and the Rust peers; h2load prints none)")
    return text


def conns_cell(c, v):
    conns = fmt(v["connections"], 0)
    if c in COURIERS and v.get("connections_established") is not None:
        conns = f"{conns} ({fmt(v['connections_established'], 0)} est.)"
    return conns


def summary_table(summary_rows, unit, digits, open_loop):
    """The matrix of every scenario (and rate) against every client, as in issue 5."""
    cols = [c for c in CLIENT_ORDER if any(c in row for _, row, _ in summary_rows)]
    text = [f"\n### Client {unit} (lower is better)\n"]
    extra = " courier ÷ hyper-util |" if open_loop else ""
    text.append("| scenario | " + " | ".join(cols) + f" | courier ÷ wrk/h2load | courier ÷ best library |{extra}")
    text.append("|---|" + "---:|" * (len(cols) + 2 + bool(open_loop)))
    for title, row, ratios in summary_rows:
        tool_s = "–"
        if "vs_wrk" in ratios:
            tool_s = f"{ratios['vs_wrk']:.2f} (wrk)"
        elif "vs_h2load" in ratios:
            tool_s = f"{ratios['vs_h2load']:.2f} (h2load)"
        lib_s = (f"{ratios['vs_best_library']:.2f} ({ratios['best_library']})"
                 if "vs_best_library" in ratios else "–")
        hyper_s = ""
        if open_loop:
            hyper_s = f" {ratios['vs_hyper-util']:.2f} |" if "vs_hyper-util" in ratios else " – |"
        text.append(f"| {title} | " + " | ".join(fmt(row.get(c), digits) for c in cols)
                    + f" | {tool_s} | {lib_s} |{hyper_s}")
    return text


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("parse")
    for k in ("--scenario", "--client", "--dir", "--url", "--http"):
        s.add_argument(k, required=True)
    s.add_argument("--round", type=int, required=True)
    s.add_argument("--rc", type=int, default=0)
    s.add_argument("--client-cpu", default="1")
    s.add_argument("--server-cpu", default="0")
    s.add_argument("--concurrency", type=int, required=True)
    s.add_argument("--rate", default="", help="the open loop's rate (RATE), empty for the closed loop")
    s = sub.add_parser("skip")
    for k in ("--scenario", "--client", "--reason"):
        s.add_argument(k, required=True)
    s.add_argument("--rate", default="", help="the open loop's rate (RATE), empty for the closed loop")
    s = sub.add_parser("report")
    s.add_argument("--raw", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--rounds", type=int)
    s.add_argument("--duration", type=float)
    s.add_argument("--server-cpu")
    s.add_argument("--client-cpu")
    s.add_argument("--courier-note", default="")
    s.add_argument("--peers-lock", default="")
    s.add_argument("--labels", default="")
    s.add_argument("--metric", default="", help="'instructions' (CALLGRIND=1) or CPU time")
    a = p.parse_args()
    {"parse": cmd_parse, "skip": cmd_skip, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
