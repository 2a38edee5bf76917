#!/usr/bin/env python3
"""Tests of report.py, run.sh's reader, through its command line as run.sh calls it:
`python3 bench/peers/test_report.py`. Standard library only."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.py")
TICKS = os.sysconf("SC_CLK_TCK")


def run(*args):
    p = subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True, check=True)
    return p.stdout


def run_dir(root, name, stdout="", courier=None, server_ticks=None, wall=5.0, switches=" 1000 7"):
    """A run's directory as run_one leaves it: the client's output, /usr/bin/time's line, /proc/stat
    and the server process's ticks before and after."""
    d = os.path.join(root, name)
    os.makedirs(d)
    files = {
        "stdout": stdout,
        "stderr": "",
        "cmd": f"{name} --rate 1000",
        "time": f"0.40 1.60 12000 {wall}{switches}\n",
        "conns": "1\n",
        # cpu0 (the server's) busy 2.5 s of the 5 s, cpu1 idle
        "stat0": "cpu0 0 0 0 1000 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\n",
        "stat1": f"cpu0 {int(2.5 * TICKS)} 0 0 1000 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\n",
    }
    if server_ticks is not None:
        files["server0"] = "100\n"
        files["server1"] = f"{100 + server_ticks}\n"
    if courier is not None:
        files["courier.json"] = json.dumps(courier)
    for k, v in files.items():
        with open(os.path.join(d, k), "w") as f:
            f.write(v)
    return d


def load(path):
    with open(path) as f:
        return json.load(f)


def parse(d, client, rate="", scenario="h2c", round_=1):
    line = run("parse", "--scenario", scenario, "--client", client, "--dir", d, "--url", "http://x/",
               "--http", "2", "--round", str(round_), "--concurrency", "256", "--rate", rate)
    return json.loads(line)


def courier_json(requests, rate):
    return {
        "requests": requests, "errors": 0, "duration_s": 5.0,
        "latency_last_byte_ms": {"p50": 0.2, "p99": 1.5},
        "connections_established": 1, "connections_open_max": 1, "version": "0.1.0",
        "open_loop": {"rate": rate, "intended": int(rate * 5), "sent": requests, "not_sent": int(rate * 5) - requests,
                      "late": 3, "max_in_flight": 40,
                      "latency_corrected_last_byte_ms": {"p50": 0.9, "p99": 2.5}},
    }


def peer_line(requests, rate):
    return json.dumps({"client": "hyper-util", "requests": requests, "errors": 0, "elapsed_s": 5.0,
                       "rps": requests / 5.0, "p50_ms": 0.3, "p99_ms": 2.0, "concurrency": 256, "threads": 1,
                       "http": "2", "rate": rate, "intended": int(rate * 5), "sent": requests,
                       "not_sent": int(rate * 5) - requests, "late": 7, "max_in_flight": 50,
                       "p50_corrected_ms": 1.0, "p99_corrected_ms": 3.0}) + "\n"


H2LOAD_OUT = """finished in 5.00s, 1000.00 req/s, 1MB/s
requests: 5000 total, 5000 started, 5000 done, 5000 succeeded, 0 failed, 0 errored, 0 timeout
time for request:      100us      2.00ms       300us       100us    90.00%
"""


class OpenLoop(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_courier_open_loop_fields_and_the_server_process(self):
        d = run_dir(self.root, "courier", courier=courier_json(5000, 1000.0), server_ticks=TICKS)
        r = parse(d, "courier", rate="1000")
        self.assertEqual(r["rate"], 1000.0)
        self.assertEqual((r["intended"], r["sent"], r["not_sent"], r["late"]), (5000, 5000, 0, 3))
        self.assertEqual((r["p50_corrected_ms"], r["p99_corrected_ms"]), (0.9, 2.5))
        self.assertEqual(r["p99_ms"], 1.5)
        self.assertAlmostEqual(r["rps"], 1000.0)
        self.assertFalse(r["behind"])
        self.assertAlmostEqual(r["cpu_us_per_req"], 400.0)
        # one second of the server process's CPU in a 5 s run; its core 2.5 s
        self.assertAlmostEqual(r["server_proc_pct"], 20.0)
        self.assertAlmostEqual(r["server_cpu_busy_pct"], 50.0)

    def test_a_client_under_its_target_is_behind(self):
        d = run_dir(self.root, "hyper", stdout=peer_line(4000, 1000.0))
        r = parse(d, "hyper-util", rate="1000")
        self.assertEqual((r["sent"], r["not_sent"], r["p99_corrected_ms"]), (4000, 1000, 3.0))
        self.assertTrue(r["behind"])
        self.assertNotIn("server_proc_pct", r)

    def test_the_closed_loop_has_no_rate(self):
        d = run_dir(self.root, "h2load", stdout=H2LOAD_OUT)
        r = parse(d, "h2load")
        self.assertIsNone(r["rate"])
        self.assertNotIn("behind", r)
        self.assertEqual(r["requests"], 5000)

    def test_sleeps_a_request_are_the_waits_over_the_requests(self):
        r = parse(run_dir(self.root, "h2load", stdout=H2LOAD_OUT), "h2load")
        # /usr/bin/time's %w (1,000 waits) and %c (7 preemptions) for 5,000 requests
        self.assertEqual((r["voluntary_switches"], r["involuntary_switches"]), (1000, 7))
        self.assertAlmostEqual(r["sleeps_per_req"], 0.2)
        raw = os.path.join(self.root, "raw.jsonl")
        with open(raw, "w") as f:
            f.write(json.dumps(r) + "\n")
        text = run("report", "--raw", raw, "--out", os.path.join(self.root, "results.json"))
        self.assertIn("| conns | sleeps/req |", text)
        self.assertIn(" | 0.200 |", text)
        # a time file from before the switches were asked for: no figure, not a wrong one
        old = parse(run_dir(self.root, "old", stdout=H2LOAD_OUT, switches=""), "h2load")
        self.assertIsNone(old["sleeps_per_req"])
        self.assertNotIn("voluntary_switches", old)

    def test_ratios_round_by_round_pair_each_round_with_its_own(self):
        # courier 6,000 then 4,000 requests for 2 s of CPU (333 and 500 µs), h2load 5,000 both times (400 µs):
        # the rounds' own ratios are 0.83 and 1.25, where the medians' ratio is 416.7 ÷ 400
        closed = {k: v for k, v in courier_json(0, 1.0).items() if k != "open_loop"}
        lines = []
        for round_, n in ((1, 6000), (2, 4000)):
            lines.append(parse(run_dir(self.root, f"h{round_}", stdout=H2LOAD_OUT), "h2load", round_=round_))
            lines.append(parse(run_dir(self.root, f"c{round_}", courier=dict(closed, requests=n)), "courier",
                               round_=round_))
        raw = os.path.join(self.root, "raw.jsonl")
        with open(raw, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        out = os.path.join(self.root, "results.json")
        text = run("report", "--raw", raw, "--out", out)
        entry = load(out)["scenarios"]["h2c"]
        pair = entry["courier_paired_ratios"]["vs_h2load"]
        self.assertAlmostEqual(pair["min"], 400 / 480)
        self.assertAlmostEqual(pair["max"], 1.25)
        self.assertAlmostEqual(pair["median"], (400 / 480 + 1.25) / 2)
        self.assertEqual((pair["pairs"], pair["under_1"]), (2, 1))
        self.assertAlmostEqual(entry["courier_cpu_ratios"]["vs_h2load"], ((2e6 / 6000 + 2e6 / 4000) / 2) / 400)
        self.assertIn("round by round (ratios of each round's own pair): 1.04 × h2load (0.83–1.25, under 1 in 1 of 2)",
                      text)

    def test_report_has_a_table_per_rate_and_flags_who_fell_behind(self):
        raw = os.path.join(self.root, "raw.jsonl")
        lines = []
        for rate, hyper_requests in ((1000, 5000), (2000, 8000)):
            n = rate * 5
            lines.append(parse(run_dir(self.root, f"h{rate}", stdout=H2LOAD_OUT.replace("5000", str(n))),
                               "h2load", rate=str(rate)))
            lines.append(parse(run_dir(self.root, f"p{rate}", stdout=peer_line(hyper_requests, rate)),
                               "hyper-util", rate=str(rate)))
            lines.append(parse(run_dir(self.root, f"c{rate}", courier=courier_json(n, rate), server_ticks=TICKS),
                               "courier", rate=str(rate)))
        lines.append(json.loads(run("skip", "--scenario", "h2c", "--client", "wrk", "--rate", "1000",
                                    "--reason", "n/a: wrk has no open loop (RATE is set)")))
        with open(raw, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        out = os.path.join(self.root, "results.json")
        text = run("report", "--raw", raw, "--out", out, "--labels", "h2c=h2c, 128 B;")
        self.assertIn("### h2c, 128 B, open loop at 1,000 req/s", text)
        self.assertIn("### h2c, 128 B, open loop at 2,000 req/s", text)
        self.assertIn("| wrk | skipped: n/a: wrk has no open loop (RATE is set) |", text)
        # hyper-util made 1,600 of its 2,000 a second: flagged in its row and under the table
        self.assertIn("1,600 ⚠ behind in all 1 rounds", text)
        self.assertIn("⚠ behind their schedule in every round (their cost is not at the target rate): hyper-util",
                      text)
        j = load(out)
        self.assertEqual(set(j["scenarios"]), {"h2c@1000", "h2c@2000"})
        first = j["scenarios"]["h2c@1000"]
        self.assertEqual(first["rate"], 1000.0)
        # every client 2 s of CPU a run: courier's 5,000 requests cost what h2load's did, hyper-util's too
        self.assertAlmostEqual(first["courier_cpu_ratios"]["vs_h2load"], 1.0)
        self.assertAlmostEqual(first["courier_cpu_ratios"]["vs_hyper-util"], 1.0)
        self.assertAlmostEqual(first["clients"]["courier"]["server_proc_pct"], 20.0)
        self.assertEqual(first["clients"]["hyper-util"]["rounds_behind"], 0)
        self.assertEqual(j["scenarios"]["h2c@2000"]["behind"], ["hyper-util"])
        # hyper-util's 8,000 requests for 2 s of CPU against courier's 10,000
        self.assertAlmostEqual(j["scenarios"]["h2c@2000"]["courier_cpu_ratios"]["vs_hyper-util"], 0.8)
        # a round behind its schedule pairs with nothing: at 2,000 hyper-util's only round was behind
        self.assertEqual(first["courier_paired_ratios"]["vs_hyper-util"]["pairs"], 1)
        self.assertNotIn("vs_hyper-util", j["scenarios"]["h2c@2000"]["courier_paired_ratios"])
        self.assertAlmostEqual(j["scenarios"]["h2c@2000"]["courier_paired_ratios"]["vs_h2load"]["median"], 1.0)

    def test_a_round_behind_is_left_out_of_the_medians(self):
        raw = os.path.join(self.root, "raw.jsonl")
        # round 1 on schedule (5,000 requests for 2 s of CPU: 400 µs each), round 2 behind (2,000:
        # 1,000 µs each), so the median is round 1's alone, not the middle of the two
        lines = [parse(run_dir(self.root, "on", stdout=peer_line(5000, 1000.0)), "hyper-util", rate="1000"),
                 parse(run_dir(self.root, "behind", stdout=peer_line(2000, 1000.0)), "hyper-util", rate="1000",
                       round_=2)]
        with open(raw, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        out = os.path.join(self.root, "results.json")
        text = run("report", "--raw", raw, "--out", out)
        self.assertIn("| hyper-util | 1,000 | 1,000 (1 of 2 rounds behind, left out) | 400.0 |", text)
        hyper = load(out)["scenarios"]["h2c@1000"]["clients"]["hyper-util"]
        self.assertEqual((hyper["rounds_behind"], hyper["always_behind"], len(hyper["rounds"])), (1, False, 2))
        self.assertAlmostEqual(hyper["cpu_us_per_req"], 400.0)

    def test_courier_with_a_tick_is_a_row_of_its_own_with_its_ratios(self):
        raw = os.path.join(self.root, "raw.jsonl")
        # h2load and courier 2 s of CPU for 5,000; courier-tick 2 s for 8,000 (it reads courier.json too)
        lines = [parse(run_dir(self.root, "h", stdout=H2LOAD_OUT), "h2load", rate="1000"),
                 parse(run_dir(self.root, "c", courier=courier_json(5000, 1000.0)), "courier", rate="1000"),
                 parse(run_dir(self.root, "t", courier=courier_json(8000, 1600.0)), "courier-tick", rate="1000")]
        self.assertEqual(lines[2]["requests"], 8000)
        self.assertEqual(lines[2]["connections_established"], 1)
        with open(raw, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        out = os.path.join(self.root, "results.json")
        text = run("report", "--raw", raw, "--out", out)
        self.assertIn("| courier-tick | 1,000 |", text)
        entry = load(out)["scenarios"]["h2c@1000"]
        self.assertAlmostEqual(entry["courier_tick_cpu_ratios"]["vs_h2load"], 5000 / 8000)
        self.assertAlmostEqual(entry["courier_tick_cpu_ratios"]["vs_courier"], 5000 / 8000)
        self.assertAlmostEqual(entry["courier_cpu_ratios"]["vs_h2load"], 1.0)


if __name__ == "__main__":
    unittest.main()
