"""bench's module import graph: its cycles and its back-up arrows; and its long modules.

A back-up arrow is an import from a lower room into a higher one (LAYERS, highest
first), e.g. commands <- fleet <- cli. Every import counts: those inside functions (they
still tie the modules together) and those under `if TYPE_CHECKING:` (a type-only
import is a dependency too: mypy and a reader follow it); the listing marks the latter.
A module over MAX_LINES lines says why in a line at its top that starts with
"Over 500 lines because" (REASON). The source is parsed, nothing is imported.

    python benchmarks/imports.py [--verbose]

Not a test: it prints figures (tests/project/test_imports.py holds the house to them).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "bench"
MAX_LINES = 500
REASON = re.compile(r"^\s*(#|\"\"\"|)\s*Over 500 lines because \S")
REASON_WITHIN = 10  # the reason's line is among a module's first lines
# Rooms, highest first: every top-level module and package of bench/ (docs/architecture.md).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__", "cli"),
    ("commands",),
    ("fleet", "search", "report"),
    ("run", "child"),
    ("frameworks", "workloads", "datasets", "platforms", "trackers", "registry"),
    ("parallel",),
    ("config", "result"),
    ("stats", "util"),
)


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["bench", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    tree: ast.AST, name: str, is_package: bool, known: set[str], types: set[str] | None = None
) -> set[str]:
    """What module `name` imports of bench; those imported for types only (under `if
    TYPE_CHECKING:`) are also added to `types`, when given."""
    targets: set[str] = set()
    type_only: set[str] = set()  # imported under `if TYPE_CHECKING:`
    package = name if is_package else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit(node: ast.AST, found: set[str]) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.body:
                visit(child, type_only)
            for child in node.orelse:
                visit(child, found)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "bench":
                    found.add(resolve(alias.name) or "bench")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "bench":
                return
            for alias in node.names:
                target = resolve(f"{base}.{alias.name}")
                if target:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child, found)

    visit(tree, targets)
    if types is not None:
        types.update(type_only - targets - {name})
    return (targets | type_only) - {name}


def graph(types: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Each module's imports of bench, type-only ones included; `types`, when given, gets
    each module's imports that are for types only."""
    found = modules()
    known = set(found)
    edges = {}
    for name, path in found.items():
        only: set[str] = set()
        tree = ast.parse(path.read_text())
        edges[name] = _imports(tree, name, path.name == "__init__.py", known, only)
        if types is not None:
            types[name] = only
    return edges


def layer(module: str) -> int:
    room = module.split(".")[1] if "." in module else ""
    for rank, rooms in enumerate(LAYERS):
        if room in rooms:
            return rank
    return len(LAYERS)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return groups


def arrows_within(group: list[str], edges: dict[str, set[str]], types: dict[str, set[str]]) -> str:
    """A cycle's imports, 'a -> b', each marked '(types)' where it is for types only."""
    return "; ".join(
        f"{a} -> {b}{' (types)' * (b in types[a])}"
        for a in group
        for b in sorted(edges[a])
        if b in group
    )


def back_up(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where the imported module sits in a higher room."""
    return sorted((a, b) for a, bs in edges.items() for b in bs if layer(b) < layer(a))


def long_modules(root: Path = ROOT.parent) -> dict[str, bool]:
    """The Python modules of bench, benchmarks/ and the noxfile over MAX_LINES lines, each
    with whether it says why at its top (REASON, in its first REASON_WITHIN lines)."""
    paths = [*sorted((root / "bench").rglob("*.py")), *sorted((root / "benchmarks").glob("*.py"))]
    found = {}
    for path in [*paths, root / "noxfile.py"]:
        lines = path.read_text().splitlines()
        if len(lines) > MAX_LINES:
            top = lines[:REASON_WITHIN]
            found[str(path.relative_to(root))] = any(REASON.match(line) for line in top)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every arrow")
    args = parser.parse_args()
    types: dict[str, set[str]] = {}
    edges = graph(types)
    groups = cycles(edges)
    arrows = back_up(edges)
    print(f"modules: {len(edges)}, imports: {sum(map(len, edges.values()))}")
    print(f"cycles: {len(groups)} (modules in them: {sum(map(len, groups))})")
    for group in groups:
        print("  " + arrows_within(group, edges, types))
    print(f"back-up arrows: {len(arrows)}")
    for a, b in arrows:
        if args.verbose or "cli" in (a.split(".") + b.split(".")) or layer(b) == 0:
            print(f"  {b} <- {a}{' (types only)' * (b in types[a])}")
    if not args.verbose and arrows:
        print("  (--verbose lists them all)")
    long = long_modules()
    print(f"modules over {MAX_LINES} lines: {len(long)}, without a reason at the top: "
          f"{sum(not said for said in long.values())}")  # fmt: skip
    for path, said in sorted(long.items()):
        print(f"  {path}{'' if said else ' (no reason)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
