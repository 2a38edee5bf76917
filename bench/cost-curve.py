#!/usr/bin/env python3
"""The cost curve's table and figure, from bench/cost-curve.sh's raw runs.

    python3 bench/cost-curve.py [RAW] [--out DIR]

RAW is one JSON object a line (docs/src/cost-curve.raw.jsonl by default). Writes, into DIR
(RAW's folder by default): cost-curve.json (the medians per point, and each round's values),
cost-curve.svg (two panels: CPU µs per request and memory per connection or stream, against
connections or streams on a log scale) and prints the table as Markdown. The SVG is written by
hand: no plotting library needed.
"""

import json
import math
import statistics
import sys
from pathlib import Path

PROTOS = {
    "h1": "HTTP/1.1, N connections",
    "h2": "HTTP/2, N streams on 1 connection",
}
COLOURS = {"h1": "#1f77b4", "h2": "#d62728"}


def load(path):
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    points = {}
    for row in rows:
        key = (row["proto"], row["n"])
        point = points.setdefault(key, {"cpu": [], "mem": []})
        point[row["kind"]].append(row)
    return points


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cpu_us(row):
    """Client CPU µs per response over the measured window (warmup and setup left out)."""
    if not row.get("responses"):
        return None
    return row["cpu_seconds"] * 1e6 / row["responses"]


def summarise(points):
    out = []
    for (proto, n), point in sorted(points.items()):
        cpu, mem = point["cpu"], point["mem"]
        # Memory per connection (HTTP/1.1) or per stream (HTTP/2): the long polls' heap per
        # request in flight, the connection's share included.
        out.append({
            "proto": proto,
            "n": n,
            "rounds": len(cpu),
            "cpu_us_per_request": median([cpu_us(r) for r in cpu]),
            "cpu_us_per_request_runs": [cpu_us(r) for r in cpu],
            "rps": median([r["rps"] for r in cpu]),
            "rss_max_mb": median([r["rss_max_mb"] for r in cpu]),
            "connections": median([r["connections"] for r in cpu]),
            "heap_per_in_flight_bytes": median([r.get("heap_per_request") for r in mem]),
            "rss_per_in_flight_bytes": median([r.get("rss_per_request") for r in mem]),
            "heap_per_connection_bytes": median([r.get("heap_per_connection") for r in mem]),
            "load": median([r["load"] for r in cpu + mem]),
            "commands": sorted({r["cmd"].split(" ", 1)[1] for r in cpu + mem}),
        })
    return out


def fmt(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def table(summary):
    lines = [
        "| protocol | N | client CPU µs / request (median; runs) | requests/s | heap / in flight | RSS / in flight | heap / connection (idle) | peak RSS (closed loop) | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        runs = ", ".join(fmt(v, 1) for v in s["cpu_us_per_request_runs"])
        lines.append(
            f"| {'HTTP/1.1' if s['proto'] == 'h1' else 'HTTP/2'} | {s['n']:,} "
            f"| {fmt(s['cpu_us_per_request'], 1)} ({runs}) | {fmt(s['rps'])} "
            f"| {fmt(s['heap_per_in_flight_bytes'])} B | {fmt(s['rss_per_in_flight_bytes'])} B "
            f"| {fmt(s['heap_per_connection_bytes'])} B | {fmt(s['rss_max_mb'], 1)} MB | {fmt(s['load'], 1)} |"
        )
    return "\n".join(lines)


def svg(summary):
    width, height = 960, 400
    panels = [
        ("client CPU per request (µs)", "cpu_us_per_request", 20),
        ("heap per connection or stream in flight (bytes)", "heap_per_in_flight_bytes", 520),
    ]
    pw, ph, top, left = 400, 280, 40, 60
    ns = sorted({s["n"] for s in summary})
    xmin, xmax = math.log10(min(ns)), math.log10(max(ns))

    def x(n, x0):
        return x0 + left + (math.log10(n) - xmin) / max(xmax - xmin, 1e-9) * (pw - left)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for title, key, x0 in panels:
        values = [s[key] for s in summary if s[key] is not None]
        ymax = max(values) * 1.1 if values else 1
        # Round the axis to a tidy step.
        step = 10 ** math.floor(math.log10(ymax / 5)) if ymax > 0 else 1
        for m in (1, 2, 5, 10):
            if ymax / (step * m) <= 6:
                step *= m
                break
        ymax = math.ceil(ymax / step) * step

        def y(v):
            return top + ph - v / ymax * ph

        parts.append(f'<text x="{x0 + left}" y="{top - 15}" font-weight="bold">{title}</text>')
        parts.append(
            f'<line x1="{x0 + left}" y1="{top + ph}" x2="{x0 + pw}" y2="{top + ph}" stroke="black"/>'
            f'<line x1="{x0 + left}" y1="{top}" x2="{x0 + left}" y2="{top + ph}" stroke="black"/>'
        )
        v = 0
        while v <= ymax + 1e-9:
            parts.append(
                f'<line x1="{x0 + left}" y1="{y(v):.1f}" x2="{x0 + pw}" y2="{y(v):.1f}" stroke="#ddd"/>'
                f'<text x="{x0 + left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>'
            )
            v += step
        for n in ns:
            parts.append(
                f'<text x="{x(n, x0):.1f}" y="{top + ph + 16}" text-anchor="middle">{n:,}</text>'
            )
        parts.append(
            f'<text x="{x0 + (left + pw) / 2:.1f}" y="{top + ph + 34}" text-anchor="middle">'
            "N: connections (HTTP/1.1) or streams on one connection (HTTP/2)</text>"
        )
        for proto, colour in COLOURS.items():
            pts = [(s["n"], s[key]) for s in summary if s["proto"] == proto and s[key] is not None]
            if not pts:
                continue
            path = " ".join(f"{x(n, x0):.1f},{y(v):.1f}" for n, v in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for n, v in pts:
                parts.append(f'<circle cx="{x(n, x0):.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}"/>')
                label = f"{v:,.1f}" if v < 100 else f"{v:,.0f}"
                parts.append(
                    f'<text x="{x(n, x0) + 5:.1f}" y="{y(v) - 6:.1f}" fill="{colour}" font-size="10">{label}</text>'
                )
    for i, (proto, label) in enumerate(PROTOS.items()):
        ly = height - 22 + i * 14 - 8
        parts.append(
            f'<line x1="{20 + 0}" y1="{ly}" x2="{40}" y2="{ly}" stroke="{COLOURS[proto]}" stroke-width="2"/>'
            f'<text x="46" y="{ly + 4}">{label}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv):
    raw = Path("docs/src/cost-curve.raw.jsonl")
    out = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--out":
            out = Path(args.pop(0))
        else:
            raw = Path(arg)
    out = out or raw.parent
    summary = summarise(load(raw))
    (out / "cost-curve.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "cost-curve.svg").write_text(svg(summary))
    print(table(summary))
    print(f"\nwrote {out / 'cost-curve.json'} and {out / 'cost-curve.svg'}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
