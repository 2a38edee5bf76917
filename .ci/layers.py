#!/usr/bin/env python3
"""courier-http's import graph against its layer diagram (DESIGN.md, "Layers").

Reads every `crate::` and `super::` path in crates/courier/src (in `use`
items and inline, comments, strings and test code — `#[cfg(test)]` items and
modules — left out: tests may reach any layer), maps each file to its
layer with the table below, and fails on:
  - an arrow from a lower layer to a higher one;
  - a circle between folders (a file's folder is the directory it sits in;
    a top-level file is a folder of its own: `client/`, `proto/h2/frame/`,
    `error.rs`...);
  - a protocol named in `pool/` outside comments (the grep in issue 29),
    while POOL_PROTOCOL_RULE_ENFORCED is True.
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
SRC = os.path.join(ROOT, "crates", "courier", "src")

# Top to bottom: a module may import its own layer and the ones below it.
# Each entry: (layer, top-level modules in it). `lib.rs` and the internal
# hooks (bench_support, fuzzing, http3_hooks, book) sit above everything and are not
# checked: they exist to reach into any layer.
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
UNCHECKED = {"", "bench_support", "fuzzing", "http3_hooks", "book"}


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


def modules():
    """{module path tuple: file}, from the files under src."""
    mods = {}
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), SRC)
            parts = rel[:-3].split(os.sep)
            if parts == ["lib"]:
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


def import_paths(code, mod):
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


def layer_of(mod):
    top = mod[0] if mod else ""
    for rank, (name, tops) in enumerate(LAYERS):
        if top in tops:
            return rank, name
    if top in UNCHECKED:
        return None, None
    raise SystemExit(f"layers.py: module {'::'.join(mod)} is in no layer: add it to LAYERS")


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


def main():
    verbose = "--verbose" in sys.argv
    mods = modules()
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

    arrows = defaultdict(set)  # (from file module, to module) -> lines
    file_edges = set()
    for mod, code in codes.items():
        for p in import_paths(code, mod):
            target = resolve(p, mods, reexports)
            if target == mod or target == ():
                continue
            # A module naming its own child, or a child its ancestor's items
            # through `super`: inside one folder either way.
            file_edges.add((mod, target))

    room_edges = defaultdict(set)
    back = []
    checked = 0
    for src, dst in sorted(file_edges):
        rs, rd = room(src, mods), room(dst, mods)
        ls, ns = layer_of(src)
        ld, nd = layer_of(dst)
        if ls is None or ld is None:
            continue
        checked += 1
        if ld < ls:
            back.append((ns, mods[src], nd, mods[dst]))
        if rs != rd and not (rd[:len(rs)] == rs or rs[:len(rd)] == rd):
            room_edges[rs].add(rd)
        elif rs != rd:
            # A parent folder and its subfolder: count the arrow from the
            # child up as a room edge too, so parent<->child circles show.
            room_edges[rs].add(rd)
    circles = sccs(room_edges)

    name = lambda m: "::".join(m) or "crate"
    print("layers, top to bottom (each imports only its own and the ones below):")
    for rank, (layer, tops) in enumerate(LAYERS):
        print(f"  {rank + 1}. {layer:<11} {', '.join(tops)}")
    print(f"  not checked: {', '.join(sorted(t or 'lib.rs' for t in UNCHECKED))}")
    n_rooms = len({room(m, mods) for m in mods if layer_of(m)[0] is not None})
    n_room_arrows = sum(len(v) for v in room_edges.values())
    print(f"{checked} arrows checked between {len([m for m in mods if layer_of(m)[0] is not None])} files; "
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
    if failed:
        print("layers: FAILED (see DESIGN.md, \"Layers\"; the table is in .ci/layers.py)")
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
