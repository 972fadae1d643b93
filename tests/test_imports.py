"""The rooms' arrows point down: no module of bench imports the command line."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _imports_cli(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "bench.cli" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            if node.module == "bench.cli" or (node.level and node.module == "cli"):
                return True
            if node.module == "bench" and any(a.name == "cli" for a in node.names):
                return True
            if node.level and not node.module and any(a.name == "cli" for a in node.names):
                return True
    return False


def test_no_module_of_bench_imports_bench_cli():
    allowed = {BENCH / "__main__.py"}  # `python -m bench` runs cli.main
    found = [
        str(path.relative_to(BENCH.parent))
        for path in sorted(BENCH.rglob("*.py"))
        if path not in allowed and _imports_cli(ast.parse(path.read_text()))
    ]
    assert not found, f"these import bench.cli; import bench.commands.* instead: {found}"


def _names_a_platform(node: ast.AST) -> bool:
    """`platform`, `<x>.platform`, `<x>.name`, `<x>.device`: what holds a platform or its
    name (a config's device is a platform's name)."""
    if isinstance(node, ast.Name):
        return node.id == "platform"
    return isinstance(node, ast.Attribute) and node.attr in ("platform", "name", "device")


def _platform_literals(node: ast.AST, names: set[str]) -> set[str]:
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {e.value for e in elements if isinstance(e, ast.Constant) and e.value in names} - {None}


def _platform_decisions(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s for s in sides if _names_a_platform(s)]
            literals = set().union(*(_platform_literals(s, names) for s in sides))
            if named and literals:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            # a table keyed by platform names, looked up by a platform's name
            key = node.slice
            by_name = isinstance(key, ast.Attribute) and key.attr == "name"
            if by_name and _names_a_platform(key.value):  # type: ignore[attr-defined]
                found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_only_the_platforms_compare_a_platform_name():
    """What differs between platforms is a Platform attribute or method (bench/platforms/
    base.py), asked for by what it means: no other module branches on a platform's name."""
    from bench import registry

    names = set(registry.platforms())
    found = [
        f"{path.relative_to(BENCH.parent)}:{line}: {text}"
        for path in sorted(BENCH.rglob("*.py"))
        if BENCH / "platforms" not in path.parents
        for line, text in _platform_decisions(ast.parse(path.read_text()), names)
    ]
    assert not found, "ask the Platform (bench/platforms/base.py) instead:\n" + "\n".join(found)
