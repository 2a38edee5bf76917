#!/usr/bin/env python3
"""The closing summary of .ci/run: counts what ran, from the logs the run
kept, so that a suite that did not run is visible, not a silent green.

Usage: summary.py LOGS SUITES
  LOGS    .ci/run's log directory: one <step>.log per step (cargo's output),
          steps.tsv (step, seconds, exit code), fuzz.tsv (target,
          executions, seconds).
  SUITES  the directory the tests write their own counts to
          (COURIER_CI_SUMMARY; see crates/courier/tests/it/support/ci.rs):
          one <suite>.txt each, a line of `key=value` pairs.

Expected: the steps in EXPECTED_STEPS, the suites in EXPECTED_SUITES, the
four h2spec modes, and every fuzz target named in $COURIER_CI_FUZZ_TARGETS
(else fuzz/Cargo.toml's [[bin]] names), each with executions. Whatever is
missing or failed is listed; the last line is `N passed, N failed`, where
passed counts tests and h2spec cases passed, and failed counts tests and
h2spec cases failed plus every missing or failed step, suite and fuzz target.
Exits 1 when anything failed."""
import os
import re
import sys

EXPECTED_STEPS = ["fmt", "msrv", "clippy", "book", "test", "features", "ignored", "fuzz"]
# interop-h3: the interop suite's h3 column alone; corpus_h3: the hostile
# HTTP/3 class (both in the features step, feature `http3`).
EXPECTED_SUITES = ["interop", "interop-h3", "corpus", "corpus_h3"]
H2SPEC_MODES = 4

logs, suites = sys.argv[1], sys.argv[2]
problems = []


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def rows(path):
    text = read(path) or ""
    return [line.split("\t") for line in text.splitlines() if line.strip()]


steps = {r[0]: (int(r[1]), int(r[2])) for r in rows(os.path.join(logs, "steps.tsv")) if len(r) == 3}
print("== summary")
print(f"{'step':<10} {'seconds':>7}  result")
for name, (secs, rc) in steps.items():
    print(f"{name:<10} {secs:>7}  {'ok' if rc == 0 else f'FAILED (exit {rc})'}")
    if rc != 0:
        problems.append(f"FAILED: step {name} (exit {rc})")
for name in EXPECTED_STEPS:
    if name not in steps:
        problems.append(f"MISSING: step {name} did not run")

# libtest's output, per step.
passed = failed = ignored = binaries = 0
result = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored", re.M)
h2spec_line = re.compile(r"^h2specd ([^:]+): (\d+)/(\d+) passed$", re.M)
h2spec_failed = re.compile(r"^h2specd ([^:]+): FAILED$", re.M)
h2spec = {}
h2spec_fail = []
h2spec_secs = ""
for name in steps:
    text = read(os.path.join(logs, f"{name}.log"))
    if text is None:
        continue
    runs = len(re.findall(r"^\s+(?:Running|Doc-tests) ", text, re.M))
    if runs == 0:
        continue
    p = f = i = 0
    for m in result.finditer(text):
        p, f, i = p + int(m.group(1)), f + int(m.group(2)), i + int(m.group(3))
    binaries, passed, failed, ignored = binaries + runs, passed + p, failed + f, ignored + i
    print(f"tests in {name}: {runs} binaries, {p} passed, {f} failed, {i} ignored ({steps[name][0]} s)")
    for m in h2spec_line.finditer(text):
        h2spec[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    h2spec_fail += h2spec_failed.findall(text)
    took = re.search(r"^h2specd: ([\d.]+)s$", text, re.M)
    h2spec_secs = took.group(1) if took else h2spec_secs
print(f"test binaries: {binaries}; tests: {passed} passed, {failed} failed, {ignored} ignored")
if failed:
    problems.append(f"FAILED: {failed} tests")

h2_passed = sum(p for p, _ in h2spec.values())
h2_failed = sum(t - p for p, t in h2spec.values())
print("h2spec: " + (", ".join(f"{m} {p}/{t}" for m, (p, t) in h2spec.items()) or "none")
      + (f" ({h2spec_secs} s)" if h2spec_secs else ""))
for mode in h2spec_fail:
    problems.append(f"FAILED: h2spec {mode}")
    h2_failed += 1
if len(h2spec) + len(h2spec_fail) < H2SPEC_MODES:
    problems.append(f"MISSING: h2spec ran {len(h2spec) + len(h2spec_fail)} of {H2SPEC_MODES} modes")
if h2_failed:
    problems.append(f"FAILED: {h2_failed} h2spec cases")

# Fuzz targets.
targets = os.environ.get("COURIER_CI_FUZZ_TARGETS", "").split()
if not targets:
    cargo = read(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "Cargo.toml")) or ""
    targets = re.findall(r'\[\[bin\]\]\s*\nname\s*=\s*"([^"]+)"', cargo)
fuzzed = {r[0]: (int(r[1]), int(r[2])) for r in rows(os.path.join(logs, "fuzz.tsv")) if len(r) == 3}
for target in targets:
    if target not in fuzzed:
        problems.append(f"MISSING: fuzz {target}")
        continue
    execs, secs = fuzzed[target]
    print(f"fuzz {target}: {execs} executions in {secs} s")
    if execs == 0:
        problems.append(f"FAILED: fuzz {target} ran 0 executions")

# The suites' own counts.
for suite in EXPECTED_SUITES:
    text = read(os.path.join(suites, f"{suite}.txt"))
    if text is None:
        problems.append(f"MISSING: {suite} (wrote no {suite}.txt)")
        continue
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    print(f"{suite}: " + " ".join(f"{k}={v}" for k, v in fields.items() if k != "suite"))
    if fields.get("failed", "0") != "0":
        problems.append(f"FAILED: {suite} failed={fields['failed']}")

for p in problems:
    print(p)
# Tests and h2spec cases count one each; every other problem counts one.
counted = re.compile(r"FAILED: \d+ (tests|h2spec cases)$")
total_failed = failed + h2_failed + sum(1 for p in problems if not counted.match(p))
print(f"{passed + h2_passed} passed, {total_failed} failed")
sys.exit(1 if problems else 0)
