#!/usr/bin/env python3
"""Fails if Cargo.lock holds a crate whose declared rust-version is above the
workspace's: CI has no toolchain as old as the MSRV to compile with, so this
is what keeps `rust-version` true. The workspace resolver ("3") picks such
versions on `cargo update`; this catches a lockfile edited another way.

Reads the sources `cargo fetch` unpacked; crates for other platforms (not
unpacked here) are not checked. Having checked none fails too: an empty or
unreadable lock, or sources not fetched, would otherwise pass unseen.

Usage: msrv-lock.py [ROOT] (default: the repository this script is in)."""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), ".."
)
manifest = open(os.path.join(root, "Cargo.toml")).read()
msrv = re.search(r'^rust-version\s*=\s*"([^"]+)"', manifest, re.M).group(1)


def version(text):
    parts = [int(x) for x in text.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


lock = open(os.path.join(root, "Cargo.lock")).read()
packages = re.findall(
    r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"\nsource = "registry', lock
)
home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
above, checked = [], 0
for name, ver in packages:
    found = glob.glob(os.path.join(home, "registry", "src", "*", f"{name}-{ver}", "Cargo.toml"))
    if not found:
        continue
    checked += 1
    declared = re.search(r'^rust-version\s*=\s*"([^"]+)"', open(found[0]).read(), re.M)
    # wasip2 is for wasm targets only; it is never built here.
    if declared and version(declared.group(1)) > version(msrv) and name != "wasip2":
        above.append(f"{name} {ver} needs Rust {declared.group(1)}")
print(f"msrv-lock: {checked} locked crates checked against rust-version {msrv}")
if checked == 0:
    print("msrv-lock: no locked crate was checked (is Cargo.lock empty, or were its "
          "sources not fetched? run `cargo fetch --locked` first)")
    sys.exit(1)
if above:
    print("above the MSRV (pin an older version: "
          "CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo update -p NAME):")
    print("\n".join("  " + a for a in above))
    sys.exit(1)
