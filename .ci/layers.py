#!/usr/bin/env python3
"""The import graphs of courier's three source trees against their layer
diagrams (DESIGN.md, "Layers"): the library (crates/courier/src), the CLI
(crates/courier-cli/src) and the server (crates/courier-server/src).

Reads every `crate::`, `super::` and `self::` path (in `use` items and
inline) and every `use child::...` of a module's own child, comments,
strings and test code — `#[cfg(test)]` items and modules — left out (tests
may reach any layer), maps each file to its layer with the tables below,
and fails on:
  - an arrow from a lower layer to a higher one;
  - a circle between folders (a file's folder is the directory it sits in;
    a top-level file is a folder of its own: `client/`, `proto/h2/frame/`,
    `error.rs`...; a parent folder's mod.rs imports its children, so a
    child importing its parent folder's files is a circle too);
  - a protocol named in the library's `pool/` outside comments (the grep in
    issue 29), while POOL_PROTOCOL_RULE_ENFORCED is True;
  - a Rust file over MAX_LINES lines outside tests, anywhere under crates/
    and bench/ (test files are exempt: named tests.rs or *_tests.rs, or
    under a tests/ directory).
Python 3, stdlib only. Usage: python3 .ci/layers.py [--verbose] [--root DIR]
"""

import os
import re
import sys
from collections import defaultdict

# The pool rule: `pool/` names no protocol. The pool branch removes the last
# of them; the lead sets this to True when merging it.
POOL_PROTOCOL_RULE_ENFORCED = True

# `--root DIR` reads another checkout (to compare before and after).
ROOT = (sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The tree being checked (main() sets it for each of TREES).
SRC = os.path.join(ROOT, "crates", "courier", "src")

# Top to bottom: a module may import its own layer and the ones below it.
# Each entry: (layer, top-level modules in it). `lib.rs` and the internal
# hooks (bench_support, fuzzing, http3_hooks, book) and the unit tests' helpers
# (test_support) sit above everything and are not checked: they exist to reach
# into any layer.
LAYERS = [
    ("export", ["metrics_export"]),
    ("factory", ["factory"]),
    ("cluster", ["cluster"]),
    ("service", ["service"]),
    ("middleware", ["middleware"]),
    ("client", ["client", "multipart", "redirect"]),
    ("pool", ["pool"]),
    ("proto", ["proto"]),
    ("config", ["config"]),
    ("connect", ["connect", "tls"]),
    ("ground", ["body", "validate", "metrics", "error", "basic_auth", "served"]),
]
UNCHECKED = {"", "bench_support", "fuzzing", "http3_hooks", "book", "test_support"}

# The CLI (crates/courier-cli/src), top to bottom, as its imports run now;
# `main.rs` dispatches to every command and is not checked.
CLI_LAYERS = [
    # Read, compare and combine the reports `bench` writes.
    ("reports", ["compare", "merge"]),
    # The commands that run something: load, the test server, its replicas.
    ("commands", ["bench", "serve", "serve_replicas"]),
    # Leaves: `--fail-if` expressions, the counting allocator, the server
    # banner, the error type, the duration syntax.
    ("leaves", ["threshold", "alloc", "banner", "error", "secs"]),
]

# The server (crates/courier-server/src, flat: each file a folder of its
# own), top to bottom, as its imports run now; `lib.rs` (the public API,
# re-exports) is not checked.
SERVER_LAYERS = [
    # Running servers: the replica set, one server, its accept loop, one
    # connection, the handle a test holds.
    ("run", ["replica_set", "server", "accept", "conn", "handle"]),
    # Telling protocols apart and speaking them.
    ("protocols", ["negotiate", "http1", "http2", "http3"]),
    # Answering requests: routing, endpoints, faults, bodies, replies.
    ("service", ["service", "endpoints", "faults", "httpbin", "reply", "body",
                 "request_body", "control"]),
    # What a server keeps and its I/O: shared state, replicas' behaviour,
    # configuration, transports, QUIC endpoint (and its congestion
    # controller), write coalescing.
    ("state", ["state", "replica", "replica_fault", "config", "io",
               "coalesce", "transport", "detect", "quic", "quic_start"]),
    # Leaves: fault and protocol names, TLS settings and test PKI.
    ("ground", ["fault", "protocol", "tls", "pki"]),
]

# Arrows from a subfolder up into its ancestor folder's own files: each makes
# a parent <-> child circle. Known ones, scoped to one folder of one tree,
# bounded and counted (lower the bound as they go; more fails): the CLI's
# bench/ subfolders (args, cluster, export, html, json, report) read
# bench/'s own files (format, stats, pacer, progress, limits, output...),
# and a dozen of those read the subfolders (the report schema in json/,
# the flags in args/). The fix is bench/'s leaves in a folder of their own,
# as pool/common/ in the library. Inside such a folder, a circle between
# files still fails.
CHILD_TO_PARENT_ARROWS = {
    ("courier-cli", "bench"): 30,
}

# Small files, one concept each (issue 29): no Rust file over this many
# lines outside tests.
MAX_LINES = 600
# Files over it that another branch is splitting: printed every run, allowed
# at most their length now, and reported for removal once under the limit
# (so either merge order stays green).
LONG_FILES_PENDING = {
    # "path": (lines it may not grow past, why it is pending) -- a stale entry fails the run
}

TREES = [
    # (name, source directory, the crate root's file, layers, unchecked)
    ("courier-http", ("crates", "courier", "src"), "lib", LAYERS, UNCHECKED),
    ("courier-cli", ("crates", "courier-cli", "src"), "main", CLI_LAYERS, {""}),
    ("courier-server", ("crates", "courier-server", "src"), "lib", SERVER_LAYERS, {""}),
]


def strip_comments_and_strings(text):
    """The code with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(' ""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), or a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# `#[cfg(test)]` and `#[cfg(all(test, ...))]`: test code, which may reach any
# layer (as the hooks do); the graph is the library's own.
TEST_ATTR = re.compile(r"#\[cfg\((?:all\()?test\b[^\]]*\]")


def strip_test_items(code):
    """The code without its test-only items: each `#[cfg(test)]` and the item
    after it, to its matching `}` or its `;` (comments and strings are
    already blanked, so braces are code)."""
    out, i = [], 0
    while True:
        m = TEST_ATTR.search(code, i)
        if not m:
            out.append(code[i:])
            return "".join(out)
        out.append(code[i:m.start()])
        j, depth = m.end(), 0
        while j < len(code):
            c = code[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            elif c == ";" and depth == 0:
                j += 1
                break
            j += 1
        out.append("\n" * code.count("\n", m.start(), j))
        i = j


def test_modules(mods):
    """Modules declared `#[cfg(test)] mod x;` in their parent, and theirs."""
    found = set()
    decl = re.compile(r"#\[cfg\((?:all\()?test\b[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*"
                      r"(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
    for mod, rel in mods.items():
        code = strip_comments_and_strings(open(os.path.join(SRC, rel)).read())
        for m in decl.finditer(code):
            found.add(mod + (m.group(1),))
    return {m for m in mods if any(m[:len(t)] == t for t in found)}


def modules(root_file="lib"):
    """{module path tuple: file}, from the files under src."""
    mods = {}
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), SRC)
            parts = rel[:-3].split(os.sep)
            if parts == [root_file]:
                parts = []
            elif parts[-1] == "mod":
                parts = parts[:-1]
            mods[tuple(parts)] = rel
    # `#[path = "x.rs"] mod y;`: the file is module y.
    for mod, rel in list(mods.items()):
        text = open(os.path.join(SRC, rel)).read()
        for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)', text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
            real = tuple(target[:-3].split(os.sep))
            if real in mods:
                del mods[real]
                mods[mod + (m.group(2),)] = target
    return mods


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (as lists of segments)."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas\w+", "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(s):
        i = s.find("{")
        if i < 0:
            return [[seg for seg in s.split("::") if seg]]
        prefix = [seg for seg in s[:i].split("::") if seg]
        inner = s[i + 1:s.rfind("}")]
        result = []
        for part in split_top(inner):
            for tail in walk(part):
                result.append(prefix + tail)
        return result or [prefix]

    return walk(tree)


USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);")
# `use child::x;`: a path relative to the module, kept when `child` is one of
# its own modules (an external crate's path is not).
CHILD_USE_RE = re.compile(r"\buse\s+((?!crate\b|super\b|self\b)\w+::[^;]*);")
VIS_IN_RE = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
INLINE_RE = re.compile(r"(?<![\w:])((?:crate|super)(?:::(?:super|\w+))+)")


def inline_modules(code):
    """[(start, end, names)]: the spans of inline `mod x { ... }` blocks."""
    spans, stack = [], []  # stack: (name or None, start)
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{|[{}]", code):
        tok = m.group(0)
        if tok == "}":
            if stack:
                name, start = stack.pop()
                if name is not None:
                    names = [n for n, _ in stack if n is not None] + [name]
                    spans.append((start, m.end(), names))
        else:
            stack.append((m.group(1), m.start()))
    return spans


def import_paths(code, mod, mods=()):
    """Every path a file names from the crate root (use trees and inline
    paths), as absolute module paths."""
    spans = inline_modules(code)

    def scope(pos):
        best = []
        for start, end, names in spans:
            if start <= pos < end and len(names) > len(best):
                best = names
        return list(mod) + best

    paths = []
    for m in USE_RE.finditer(code):
        for p in expand_use_tree(m.group(1)):
            paths.append(absolute(p, scope(m.start())))
    for m in CHILD_USE_RE.finditer(code):
        for p in expand_use_tree(m.group(1)):
            here = scope(m.start())
            if p and tuple(here + [p[0]]) in mods:
                paths.append(here + p)
    no_uses = USE_RE.sub(lambda m: " " * len(m.group(0)), code)
    # `pub(in crate::a::b)` names who may see an item, not what it uses.
    no_uses = VIS_IN_RE.sub(lambda m: " " * len(m.group(0)), no_uses)
    for m in INLINE_RE.finditer(no_uses):
        paths.append(absolute(m.group(1).split("::"), scope(m.start())))
    return paths


def absolute(path, mod):
    """A path relative to `crate`/`super`/`self` in module `mod` as a module
    path from the root."""
    if path[0] == "crate":
        return list(path[1:])
    here = list(mod)
    rest = list(path)
    if rest[0] == "self":
        return here + rest[1:]
    while rest and rest[0] == "super":
        here = here[:-1]
        rest = rest[1:]
    return here + rest


def resolve(path, mods, reexports):
    """The module a path lands in: its longest prefix that is a module, through
    the root's and folders' `pub use` re-exports."""
    for _ in range(8):
        best = ()
        for k in range(len(path), 0, -1):
            if tuple(path[:k]) in mods:
                best = tuple(path[:k])
                break
        rest = path[len(best):]
        if rest and (best, rest[0]) in reexports:
            path = reexports[(best, rest[0])] + rest[1:]
            continue
        return best
    return best


def room(mod, mods):
    """The folder a module's file sits in (`client/response.rs` in `client`,
    `client/response/construct.rs` in `client::response`); a top-level file
    is a folder of its own."""
    folder = os.path.dirname(mods[mod])
    if folder:
        return tuple(folder.split(os.sep))
    return mod


def layer_of(mod, layers=LAYERS, unchecked=UNCHECKED):
    top = mod[0] if mod else ""
    for rank, (name, tops) in enumerate(layers):
        if top in tops:
            return rank, name
    if top in unchecked:
        return None, None
    raise SystemExit(f"layers.py: module {'::'.join(mod)} is in no layer: add it to its tree's layers")


def sccs(graph):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def pool_protocol_mentions():
    """`grep -rn "http1\\|http2\\|h2::\\|h1::\\|alpn" pool` outside comments."""
    hits = []
    pat = re.compile(r"http1|http2|h2::|h1::|alpn")
    for dirpath, _, files in os.walk(os.path.join(SRC, "pool")):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            text = open(path).read()
            code = strip_comments_and_strings_keep_strings(text)
            for no, line in enumerate(code.split("\n"), 1):
                if pat.search(line):
                    hits.append(f"{os.path.relpath(path, ROOT)}:{no}: {text.split(chr(10))[no - 1].strip()}")
    return hits


def strip_comments_and_strings_keep_strings(text):
    """Comments blanked, strings kept (a metric name in a string is a mention)."""
    out = []
    for line in text.split("\n"):
        s = line.lstrip()
        out.append("" if s.startswith("//") else line.split(" //")[0])
    return "\n".join(out)


def check_tree(tree, verbose):
    """Checks one tree; prints its table and findings; True if it failed."""
    global SRC
    tree_name, parts, root_file, layers, unchecked = tree
    SRC = os.path.join(ROOT, *parts)
    layer = lambda m: layer_of(m, layers, unchecked)
    mods = modules(root_file)
    # `pub use` re-exports: (module, name) -> the path it stands for.
    reexports = {}
    codes = {}
    tests = test_modules(mods)
    for mod, rel in mods.items():
        if mod in tests:
            continue
        code = strip_test_items(strip_comments_and_strings(open(os.path.join(SRC, rel)).read()))
        codes[mod] = code
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]*);", code):
            for p in expand_use_tree(m.group(1)):
                if p and p[0] in ("crate", "super", "self"):
                    target = absolute(p, mod)
                elif p and (mod + (p[0],)) in mods:
                    target = list(mod) + p
                else:
                    continue
                reexports[(mod, p[-1])] = target

    file_edges = set()
    for mod, code in codes.items():
        for p in import_paths(code, mod, mods):
            target = resolve(p, mods, reexports)
            if target == mod or target == ():
                continue
            file_edges.add((mod, target))

    room_edges = defaultdict(set)
    # Per tolerated folder: its child -> ancestor file arrows, and the file
    # graph inside it (where circles still fail).
    tolerated = {folder: bound for (name, folder), bound in CHILD_TO_PARENT_ARROWS.items()
                 if name == tree_name}
    up_arrows = defaultdict(list)
    inner_files = defaultdict(lambda: defaultdict(set))
    back = []
    checked = 0
    for src, dst in sorted(file_edges):
        rs, rd = room(src, mods), room(dst, mods)
        ls, ns = layer(src)
        ld, nd = layer(dst)
        if ls is None or ld is None:
            continue
        checked += 1
        if ld < ls:
            back.append((ns, mods[src], nd, mods[dst]))
        for folder in tolerated:
            top = tuple(folder.split("/"))
            if rs[:len(top)] == top and rd[:len(top)] == top:
                inner_files[folder][src].add(dst)
        if rs == rd:
            continue
        # A parent folder and its subfolder: the arrow from the child up
        # counts too (the parent's mod.rs imports the child), so
        # parent <-> child circles show.
        child_up = rs[:len(rd)] == rd
        folder = next((f for f in tolerated if rd[:len(f.split("/"))] == tuple(f.split("/"))), None)
        if child_up and folder is not None:
            up_arrows[folder].append((mods[src], mods[dst]))
            continue
        room_edges[rs].add(rd)
    circles = sccs(room_edges)

    name = lambda m: "::".join(m) or "crate"
    print(f"{tree_name} ({'/'.join(parts)}) layers, top to bottom (each imports only its own and the ones below):")
    for rank, (layer_name, tops) in enumerate(layers):
        print(f"  {rank + 1}. {layer_name:<11} {', '.join(tops)}")
    print(f"  not checked: {', '.join(sorted(t or root_file + '.rs' for t in unchecked))}")
    n_rooms = len({room(m, mods) for m in mods if layer(m)[0] is not None})
    n_room_arrows = sum(len(v) for v in room_edges.values())
    print(f"{checked} arrows checked between {len([m for m in mods if layer(m)[0] is not None])} files; "
          f"{n_room_arrows} arrows between {n_rooms} folders")
    failed = False
    print(f"arrows up the layers: {len(back)}")
    for ns, fs, nd, fd in back:
        print(f"  {fs} ({ns}) -> {fd} ({nd})")
    failed |= bool(back)
    print(f"circles between folders: {len(circles)}")
    for comp in circles:
        print(f"  {' <-> '.join(name(m) for m in comp)}")
        if verbose:
            inside = set(comp)
            for s in comp:
                for d in sorted(room_edges[s] & inside):
                    print(f"      {name(s)} -> {name(d)}")
    failed |= bool(circles)
    for folder, bound in sorted(tolerated.items()):
        arrows = up_arrows[folder]
        file_circles = sccs(inner_files[folder])
        over = len(arrows) > bound
        print(f"{folder}/: arrows from its subfolders up into its own files: {len(arrows)} "
              f"(bound {bound}, CHILD_TO_PARENT_ARROWS)"
              + ("  FAILED: more than the bound" if over else "")
              + ("  (fewer: lower the bound)" if len(arrows) < bound else ""))
        if verbose or over:
            for a, b in arrows:
                print(f"      {a} -> {b}")
        print(f"{folder}/: circles between its files: {len(file_circles)}")
        for comp in file_circles:
            print(f"  {' <-> '.join(mods[m] for m in comp)}")
        failed |= over or bool(file_circles)
    if tree_name == "courier-http":
        hits = pool_protocol_mentions()
        if POOL_PROTOCOL_RULE_ENFORCED:
            print(f"protocol names in pool/ outside comments: {len(hits)}")
            failed |= bool(hits)
        else:
            print(f"protocol names in pool/ outside comments: {len(hits)} (pending: "
                  f"POOL_PROTOCOL_RULE_ENFORCED is False until the pool branch lands)")
        if hits and (verbose or POOL_PROTOCOL_RULE_ENFORCED):
            for h in hits:
                print(f"  {h}")
    print()
    return failed


def is_test_file(rel):
    parts = rel.split("/")
    name = parts[-1]
    return "tests" in parts[:-1] or name == "tests.rs" or name.endswith("_tests.rs")


def check_file_lengths():
    """Rust files over MAX_LINES outside tests; True if the rule failed."""
    over, checked, failed = [], 0, False
    for top in ("crates", "bench"):
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "target")
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT).replace(os.sep, "/")
                if not f.endswith(".rs") or is_test_file(rel):
                    continue
                checked += 1
                with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                    n = sum(1 for _ in fh)
                if n > MAX_LINES:
                    over.append((rel, n))
    failing = [(rel, n) for rel, n in over
               if rel not in LONG_FILES_PENDING or n > LONG_FILES_PENDING[rel][0]]
    print(f"files over {MAX_LINES} lines outside tests: {len(failing)} of {checked} files "
          f"(and {len(over) - len(failing)} pending: LONG_FILES_PENDING)")
    for rel, n in over:
        pending = LONG_FILES_PENDING.get(rel)
        if pending and n <= pending[0]:
            print(f"  {rel}: {n} (pending, at most {pending[0]}: {pending[1]})")
        else:
            print(f"  {rel}: {n}" + (f" (pending at most {pending[0]}: grown)" if pending else ""))
    done = sorted(set(LONG_FILES_PENDING) - {rel for rel, _ in over})
    for rel in done:
        print(f"  {rel}: no longer over {MAX_LINES} (or gone): remove it from LONG_FILES_PENDING")
    return bool(failing) or bool(done)


def main():
    verbose = "--verbose" in sys.argv
    failed = [tree[0] for tree in TREES if check_tree(tree, verbose)]
    if check_file_lengths():
        failed.append("file lengths")
    if failed:
        print(f"layers: FAILED in {', '.join(failed)} (see DESIGN.md, \"Layers\"; the tables are in .ci/layers.py)")
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
