"""bench's module import graph: its cycles and its back-up arrows.

A back-up arrow is an import from a lower room into a higher one (LAYERS, highest
first), e.g. commands <- fleet <- cli. Imports under `if TYPE_CHECKING:` are left out;
imports inside functions count (they still tie the modules together).
The source is parsed, nothing is imported.

    python benchmarks/imports.py [--verbose]

Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "bench"
# Rooms, highest first; a top-level module or package not named is in the lowest room.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__", "cli"),
    ("commands",),
    ("fleet", "ladder", "tune", "report"),
    ("runner", "probe", "launchers", "child", "runtime", "drift"),
    ("frameworks", "workloads", "datasets", "platforms", "trackers", "provenance"),
    ("parallel", "mfu", "memory_floor"),
    (
        "registry",
        "config",
        "data_ref",
        "ranks",
        "result",
        "catalog",
        "archive",
        "stopping",
        "integrity",
    ),
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


def _imports(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    targets: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "bench":
                    targets.add(resolve(alias.name) or "bench")
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
                    targets.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    targets.discard(name)
    return targets


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {
        name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py", known)
        for name, path in found.items()
    }


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


def back_up(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where the imported module sits in a higher room."""
    return sorted((a, b) for a, bs in edges.items() for b in bs if layer(b) < layer(a))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every arrow")
    args = parser.parse_args()
    edges = graph()
    groups = cycles(edges)
    arrows = back_up(edges)
    print(f"modules: {len(edges)}, imports: {sum(map(len, edges.values()))}")
    print(f"cycles: {len(groups)} (modules in them: {sum(map(len, groups))})")
    for group in groups:
        print("  " + " ".join(group))
    print(f"back-up arrows: {len(arrows)}")
    for a, b in arrows:
        if args.verbose or "cli" in (a.split(".") + b.split(".")) or layer(b) == 0:
            print(f"  {b} <- {a}")
    if not args.verbose and arrows:
        print("  (--verbose lists them all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
