#!/usr/bin/env bash
# Prints the dependency edges between the modules of one directory of Rust modules, and exits
# nonzero if they form a cycle:
#   scripts/module-cycles.sh core/src/scheme/baselines
# Each file `x.rs` and each directory `x/` of DIR is module `x`; DIR's own file (mod.rs, lib.rs,
# main.rs, or ../DIR.rs) is module `(root)`. An edge a -> b means code of `a` names a path into
# `b`: `use super::b::..`, `use crate::..::b::..`, `super::b::` or `crate::..::b::` in code,
# bare `b::` where `b` is in scope (the root's children, or through a glob import of the root),
# and an item of the root's own file (`super::Item` from a child) counts as an edge to `(root)`.
# `mod b;` declarations are not edges: the parent owning its children is not a dependency.
# Comments, string literals and `#[cfg(test)]` modules are ignored (a test module's `super`
# is its file, and what tests use is not a dependency of the code). With -v every edge lists
# where it was seen.
set -euo pipefail
verbose=0
if [[ "${1:-}" == "-v" ]]; then
    verbose=1
    shift
fi
dir=${1:?usage: scripts/module-cycles.sh [-v] DIR}
[[ -d "$dir" ]] || { echo "not a directory: $dir" >&2; exit 2; }
exec python3 - "$dir" "$verbose" <<'PY'
import os
import re
import sys

ROOT = "(root)"
top = os.path.abspath(sys.argv[1])
verbose = sys.argv[2] == "1"


def crate_src(d):
    """The nearest directory at or above `d` holding a crate root file."""
    p = d
    while True:
        if any(os.path.isfile(os.path.join(p, f)) for f in ("lib.rs", "main.rs")):
            return p
        up = os.path.dirname(p)
        if up == p:
            return d
        p = up


src = crate_src(top)
rel = os.path.relpath(top, src)
base = [] if rel == "." else rel.split(os.sep)

root_files = [os.path.join(top, f) for f in ("mod.rs", "lib.rs", "main.rs")]
root_files.append(top + ".rs")
root_files = [f for f in root_files if os.path.isfile(f) and (f != top + ".rs" or base)]

children = {}
for e in sorted(os.listdir(top)):
    p = os.path.join(top, e)
    if e.endswith(".rs") and os.path.isfile(p) and e not in ("mod.rs", "lib.rs", "main.rs"):
        children.setdefault(e[:-3], []).append(p)
    elif os.path.isdir(p):
        files = []
        for d, _, fs in os.walk(p):
            files += [os.path.join(d, f) for f in sorted(fs) if f.endswith(".rs")]
        if files:
            children.setdefault(e, []).extend(sorted(files))


def mod_path(f):
    """Module path of file `f` from the crate root."""
    if f in root_files:
        return list(base)
    parts = os.path.relpath(f, top).split(os.sep)
    last = parts[-1][:-3]
    parts = parts[:-1] + ([] if last == "mod" else [last])
    return base + parts


def strip(text):
    """The text with comments and the contents of string and char literals blanked."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not (i and re.match(r"\w", text[i - 1])):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append("' '" + " " * (len(m.group(0)) - 3))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_tests(text):
    """The text with every `#[cfg(test)] mod NAME { ... }` blanked (after `strip`)."""
    for m in reversed(list(re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text))):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        text = text[: m.start()] + re.sub(r"[^\n]", " ", text[m.start() : j]) + text[j:]
    return text


TOKEN = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*|::|[{}();,*]|\S")


def tokens(text):
    line = 1
    pos = 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield m.group(0), line


def use_paths(toks):
    """Expand a use tree (tokens after `use`, before `;`) into paths (lists of segments)."""
    paths = []

    def tree(i, prefix):
        segs = list(prefix)
        while i < len(toks):
            t = toks[i]
            if t == "{":
                i += 1
                while i < len(toks) and toks[i] != "}":
                    i = tree(i, segs)
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                return i + 1
            if t == "*":
                paths.append(segs + ["*"])
                return i + 1
            if t in (",", "}"):
                break
            if t == "as":
                i += 2
                continue
            if t != "::":
                segs.append(t)
            i += 1
        if segs != list(prefix):
            paths.append(segs)
        return i

    tree(0, [])
    return paths


modules = set(children)


def resolve(segs, cur, scope):
    """The absolute module path `segs` names from module `cur`, or None when outside."""
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        return segs[1:]
    if head in ("super", "self"):
        p = list(cur)
        k = 0
        while k < len(segs) and segs[k] in ("super", "self"):
            if segs[k] == "super":
                p = p[:-1]
            k += 1
        return p + segs[k:]
    if head in scope:
        return scope[head] + segs[1:]
    return None


def target(abs_path):
    if abs_path is None or abs_path[: len(base)] != base:
        return None
    rest = abs_path[len(base) :]
    if rest and rest[0] in modules:
        return rest[0]
    return ROOT


edges = {}
# Glob imports (`use P::*`) per module path, found in a first pass: a module that globs the
# root (or globs a module that does) sees the root's children by their bare names.
globs = {}


def add(a, b, where):
    if b is None or a == b:
        return
    edges.setdefault((a, b), []).append(where)


def sees_root(mp, seen=()):
    if mp == base:
        return True
    return any(
        g == base or (g not in seen and sees_root(g, seen + (mp,))) for g in globs.get(tuple(mp), [])
    )


def scan(f, owner, collect):
    text = drop_tests(strip(open(f, encoding="utf-8").read()))
    toks = list(tokens(text))
    words = [t for t, _ in toks]
    shown = os.path.relpath(f)
    fmod = mod_path(f)
    # Inline modules: (name, brace depth inside them).
    stack = []
    depth = 0
    roots = {m: base + [m] for m in modules}
    i = 0
    while i < len(toks):
        t, line = toks[i]
        cur = fmod + [s[0] for s in stack]
        scope = {} if collect or not sees_root(cur) else roots
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if stack and stack[-1][1] > depth:
                stack.pop()
        elif t == "mod" and i + 2 < len(toks) and words[i + 2] == "{":
            stack.append((words[i + 1], depth + 1))
            depth += 1
            i += 3
            continue
        elif t == "use":
            j = i + 1
            while j < len(toks) and words[j] != ";":
                j += 1
            for p in use_paths(words[i + 1 : j]):
                glob = p[-1] == "*"
                segs = p[:-1] if glob else p
                a = resolve(segs, cur, scope)
                if collect:
                    if glob and a is not None:
                        globs.setdefault(tuple(cur), []).append(a)
                else:
                    add(owner, target(a), f"{shown}:{line}")
            i = j + 1
            continue
        elif re.match(r"[A-Za-z_]", t) and i + 1 < len(toks) and words[i + 1] == "::":
            prev = words[i - 1] if i else ""
            if prev != "::" and not (prev == "in" and i >= 3 and words[i - 3] == "pub"):
                segs = [t]
                j = i + 1
                while j + 1 < len(toks) and words[j] == "::" and re.match(r"[A-Za-z_]", words[j + 1]):
                    segs.append(words[j + 1])
                    j += 2
                if not collect:
                    add(owner, target(resolve(segs, cur, scope)), f"{shown}:{line}")
                i = j
                continue
        i += 1


for collect in (True, False):
    for f in root_files:
        scan(f, ROOT, collect)
    for name, files in children.items():
        for f in files:
            scan(f, name, collect)

for (a, b), where in sorted(edges.items()):
    print(f"{a} -> {b}" + (f"   ({', '.join(sorted(set(where)))})" if verbose else ""))

# Strongly connected components (Tarjan); every one with more than one module is a cycle.
graph = {}
for a, b in edges:
    graph.setdefault(a, []).append(b)
index, low, onstack, st, sccs = {}, {}, set(), [], []


def connect(v):
    index[v] = low[v] = len(index)
    st.append(v)
    onstack.add(v)
    for w in sorted(graph.get(v, [])):
        if w not in index:
            connect(w)
            low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = st.pop()
            onstack.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        connect(v)

for comp in sccs:
    inside = set(comp)
    print(f"cycle: {' '.join(comp)}")
    for (a, b), where in sorted(edges.items()):
        if a in inside and b in inside:
            print(f"  {a} -> {b}   ({', '.join(sorted(set(where))[:3])})")
sys.exit(1 if sccs else 0)
PY
