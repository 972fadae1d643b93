"""The rooms' arrows point down: no module imports a higher room (nor the command line)."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

BENCH = ROOT / "bench"


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


# What names a device's type: torch's `<device>.type`, a platform's `torch_device` and
# `xla_device`, and a `device_type` taken from either.
_DEVICE_TYPE_ATTRIBUTES = ("type", "torch_device", "xla_device", "device_type")


def _device_types() -> set[str]:
    """Every name a platform module declares for itself or its devices (`name = "cuda"`,
    `torch_device = "xla"`, `xla_device = "gpu"`), read from bench/platforms/ unimported."""
    declared = ("name", "torch_device", "xla_device")
    found = set()
    for path in (BENCH / "platforms").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            target = node.target if isinstance(node, ast.AnnAssign) else None
            targets = node.targets if isinstance(node, ast.Assign) else [target]
            value = getattr(node, "value", None)
            named = any(isinstance(t, ast.Name) and t.id in declared for t in targets)
            if named and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(value.value)
    return found


def _names_a_device_type(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _DEVICE_TYPE_ATTRIBUTES[1:]
    return isinstance(node, ast.Attribute) and node.attr in _DEVICE_TYPE_ATTRIBUTES


def _device_type_decisions(tree: ast.AST, types: set[str]) -> list[tuple[int, str]]:
    """Comparisons of a device's type with a device's name (`device.type == "cuda"`,
    `platform.xla_device != "gpu"`, `x.type in ("cpu", "mps")`), and tables looked up by
    a device's type."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            literals = set().union(*(_platform_literals(s, types) for s in sides))
            if literals and any(_names_a_device_type(s) for s in sides):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Subscript) and _names_a_device_type(node.slice):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_only_the_platforms_test_a_devices_type():
    """A device's differences live in its platform: the frameworks and the rest
    of bench ask it for what a difference means (`pins_host_memory`, `timing_event`,
    `xla_memory_stats`, ...), never whether its device is a "cuda" or a "cpu" one. Torch's
    "meta" device is no platform's and may be asked for."""
    types = _device_types()
    assert {"cpu", "cuda", "gpu", "tpu", "xla"} <= types, types
    found = [
        f"{path.relative_to(BENCH.parent)}:{line}: {text}"
        for path in sorted(BENCH.rglob("*.py"))
        if BENCH / "platforms" not in path.parents
        for line, text in _device_type_decisions(ast.parse(path.read_text()), types)
    ]
    assert not found, "ask the Platform (bench/platforms/base.py) instead:\n" + "\n".join(found)


def test_a_device_type_test_is_found_however_it_is_written():
    types = _device_types()
    tests = [
        'self.device.type == "cuda"',
        'platform.xla_device != "gpu"',
        '"cpu" == platform.torch_device',
        'p.device.type in ("cuda", "mps")',
        "IMAGES[platform.xla_device]",
        "device_type == 'tpu'",
    ]
    for text in tests:
        assert _device_type_decisions(ast.parse(text), types), text
    asked = ['rotary.device.type != "meta"', "p.device.type in devices", "torch.device(x.type)"]
    for text in asked:
        assert not _device_type_decisions(ast.parse(text), types), text


def _import_graph():
    import importlib.util

    path = BENCH.parent / "benchmarks" / "imports.py"
    spec = importlib.util.spec_from_file_location("bench_import_graph", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_no_runtime_import_runs_up_a_room():
    """The rooms of docs/architecture.md (LAYERS in benchmarks/imports.py): a lower room
    that needs something of a higher one at run time gets it moved down, as bench/parallel/ranks.py
    and bench/config/data_ref.py were."""
    graph = _import_graph()
    types: dict[str, set[str]] = {}
    edges = graph.graph(types)
    runtime = {name: targets - types[name] for name, targets in edges.items()}
    arrows = graph.back_up(runtime)
    assert not arrows, f"back-up arrows (importer, imported): {arrows}"


def test_no_import_runs_up_a_room_type_only_included():
    graph = _import_graph()
    arrows = graph.back_up(graph.graph())
    assert not arrows, f"{len(arrows)} back-up arrows (importer, imported): {arrows}"


def test_every_entry_of_bench_is_in_a_room():
    """bench/'s top level is the rooms of docs/architecture.md, each named in LAYERS: a
    module or package left out would sit in the lowest room unseen."""
    graph = _import_graph()
    named = {name for room in graph.LAYERS for name in room}
    top = {p.stem for p in BENCH.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in BENCH.iterdir() if (p / "__init__.py").is_file()}
    assert top - named == set(), f"in no room of LAYERS (benchmarks/imports.py): {top - named}"


def test_no_import_cycle_of_any_kind():
    """Not even through an import for types only (`if TYPE_CHECKING:`): a type the lower
    module needs of the higher is declared where both can import it, or passed in."""
    graph = _import_graph()
    types: dict[str, set[str]] = {}
    edges = graph.graph(types)
    found = [graph.arrows_within(group, edges, types) for group in graph.cycles(edges)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_an_import_for_types_only_is_an_import():
    graph = _import_graph()
    source = (
        "from typing import TYPE_CHECKING\n"
        "import bench.b\n"
        "if TYPE_CHECKING:\n"
        "    from bench.c import C\n"
        "    from bench import b\n"
        "def f():\n"
        "    from bench.d import D\n"
    )
    known = {"bench.a", "bench.b", "bench.c", "bench.d"}
    types: set[str] = set()
    found = graph._imports(ast.parse(source), "bench.a", False, known, types)
    assert found == {"bench.b", "bench.c", "bench.d"}
    assert types == {"bench.c"}  # bench.b is imported at run time too
    assert graph.cycles({"bench.a": {"bench.c"}, "bench.c": {"bench.a"}}) == [
        ["bench.a", "bench.c"]
    ]


def test_every_module_over_500_lines_says_why_at_its_top():
    """Over 500 lines a module mixes jobs or says too little; where it does not, a line
    at its top says why ("Over 500 lines because ..."), in its first lines."""
    graph = _import_graph()
    silent = sorted(path for path, said in graph.long_modules().items() if not said)
    assert not silent, (
        f"over {graph.MAX_LINES} lines with no line starting 'Over 500 lines because' in its "
        f"first {graph.REASON_WITHIN}: split it into modules named after what they do, or "
        f"say why not: {silent}"
    )


def test_a_long_modules_reason_is_a_line_of_its_own_at_its_top(tmp_path):
    graph = _import_graph()
    (tmp_path / "bench").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "noxfile.py").write_text("")
    filler = "x = 1\n" * graph.MAX_LINES
    said = {
        "docstring.py": '"""Over 500 lines because one table.\n"""\n',
        "comment.py": "# Over 500 lines because one table.\n",
        "docstring_line.py": '"""The table.\n\nOver 500 lines because one table.\n"""\n',
        "mentioned.py": '"""Not over 500 lines because of anything.\n"""\n',
        "too_low.py": "\n" * graph.REASON_WITHIN + "# Over 500 lines because one table.\n",
        "short.py": "",
    }
    for name, top in said.items():
        (tmp_path / "bench" / name).write_text(top + filler * (name != "short.py"))
    assert graph.long_modules(tmp_path) == {
        "bench/comment.py": True,
        "bench/docstring.py": True,
        "bench/docstring_line.py": True,
        "bench/mentioned.py": False,
        "bench/too_low.py": False,
    }


def test_what_the_noxfile_imports_of_bench_needs_the_standard_library_only():
    """nox runs the noxfile in its own Python, without bench's dependencies: an import
    of bench.util.files in bench.result.archive pulled rich in, and every nox session failed."""
    import subprocess
    import sys

    root = ROOT
    noxfile = (root / "noxfile.py").read_text()
    found = re.findall(r"^\s*from bench[\w.]* import .+$", noxfile, re.M)
    imports = sorted({line.strip() for line in found})
    assert imports, "the noxfile imports nothing of bench?"
    absent = ("rich", "torch", "numpy", "pandas", "scipy")
    code = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in absent)
    code += "".join(f"{line}\n" for line in imports)
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
