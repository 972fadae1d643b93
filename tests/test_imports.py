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
