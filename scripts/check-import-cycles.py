#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Checks that no Rust module of the workspace imports one that imports it back.

Each crate's source files are modules (src/a.rs and src/a/mod.rs are `a`, src/a/b.rs is
`a::b`). A module depends on another when it names it through `crate::`, `super::`, `self::`
or child-module paths (in `use` trees, braces expanded, or in code). A module and its own
submodules are not counted as depending on each other: a parent declares its children (and the
GObject pattern has `mod.rs` name `imp::Type` while `imp.rs` names the wrapper), and a child
uses its parent's vocabulary. A circle is a set of modules, none inside another, that reach each
other through their dependencies; the script prints each one with the paths that tie it and
exits 1. Test modules (files named tests.rs or under tests/) and code after
`#[cfg(test)]` are left out: a unit test may use what it tests.

Usage: scripts/check-import-cycles.py [REPO]
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """The text without comments, string and char literals (kept as blanks)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'r(#*)".*?"\1', '""', text, flags=re.S)
    text = re.sub(r'b?"(\\.|[^"\\])*"', '""', text, flags=re.S)
    text = re.sub(r"'(\\.|[^'\\])'", "''", text)
    return re.sub(r"//[^\n]*", "", text)


def without_tests(text):
    """The text up to the first `#[cfg(test)]` (unit tests sit at the end of a file)."""
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (aliases and globs dropped)."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"as" + IDENT + "$", "", tree).rstrip(":*")]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    paths = []
    for part in filter(None, parts):
        if part == "self":
            paths.append(prefix.rstrip(":"))
        else:
            paths.extend(prefix + p for p in expand_use(part))
    return paths


def modules_of(src):
    """Module path (tuple) -> file, for one crate's src folder."""
    mods = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("").parts
        if rel[-1] in ("lib", "main") and len(rel) == 1:
            path = ()
        elif rel[-1] == "mod":
            path = rel[:-1]
        else:
            path = rel
        if "tests" in path or (path and path[-1] == "tests") or "bin" in rel[:1]:
            continue
        mods[path] = f
    return mods


def resolve(path, here, mods):
    """The longest module prefix that `path` (a list of segments) names, from module `here`."""
    if not path:
        return None
    head, rest = path[0], path[1:]
    if head not in ("crate", "self", "super") and here + (head,) in mods:
        # A child module, named relative to this one.
        head, rest = "self", path
    if head == "crate":
        base = ()
    elif head == "self":
        base = here
    elif head == "super":
        base = here
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
        base = base[:-1]
    else:
        return None
    target = base
    for seg in rest:
        if target + (seg,) in mods:
            target = target + (seg,)
        else:
            break
    return target


def nested(a, b):
    """Whether one of the modules `a` and `b` is the other or inside it."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def dependencies(text, here, mods):
    deps = {}
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for path in expand_use(m.group(1)):
            target = resolve([s for s in path.split("::") if s], here, mods)
            if target is not None and not nested(target, here):
                deps.setdefault(target, set()).add(path)
    code = re.sub(r"\buse\s+[^;]+;", "", text)
    for m in re.finditer(r"(?<![$\w:])(" + IDENT + "(?:::" + IDENT + ")+)", code):
        path = m.group(1)
        target = resolve(path.split("::"), here, mods)
        if target is not None and not nested(target, here):
            deps.setdefault(target, set()).add(path)
    return deps


def circles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        n = stack.pop()
                        on.discard(n)
                        comp.append(n)
                        if n == node:
                            break
                    if len(comp) > 1:
                        out.append(comp)
    return out


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found = 0
    crates = sorted(
        p.parent
        for p in repo.rglob("Cargo.toml")
        if (p.parent / "src").is_dir() and "target" not in p.relative_to(repo).parts
    )
    for crate in crates:
        mods = modules_of(crate / "src")
        graph, why = {}, {}
        for here, f in mods.items():
            text = without_tests(strip(f.read_text(encoding="utf-8")))
            deps = dependencies(text, here, mods)
            graph[here] = set(deps)
            for target, paths in deps.items():
                why[(here, target)] = sorted(paths)[:3]
        for comp in circles(graph):
            found += 1
            name = lambda m: "::".join(m) or "(crate root)"
            print(f"{crate.relative_to(repo)}: circle " + ", ".join(sorted(name(m) for m in comp)))
            members = set(comp)
            for a in sorted(members):
                for b in sorted(graph[a] & members):
                    print(f"    {name(a)} -> {name(b)}: {', '.join(why[(a, b)])}")
    if found:
        print(f"{found} import circle(s)", file=sys.stderr)
        return 1
    print(f"no import circles ({len(crates)} crates)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
