"""Where a module's tests are: tests/ mirrors bench/, so the tests of bench/report/page.py
are tests/report/test_page.py and tests/report/test_page_<aspect>.py (a module's leading
underscore dropped: bench/frameworks/_ipex.py's are tests/frameworks/test_ipex.py), and a
package's own tests are named after it one folder up (tests/test_datasets.py). Three
folders mirror no package of bench, each for a stated reason (OTHER_FOLDERS)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT

TESTS = ROOT / "tests"

OTHER_FOLDERS = {
    "benchmarks": "the scripts of benchmarks/, named after the script they test",
    "untrusted": "what others send (results, archives, datasets, peers, shared folders), "
    "across every command that reads it",
    "project": "the repository as a whole: the README, the manual, the images, the "
    "imports' layers, a bare install and the contributing recipes",
}


def _names(package: Path) -> set[str]:
    """What a test in the folder mirroring `package` may be named after: its modules
    (leading underscore dropped) and its subpackages."""
    modules = {p.stem.lstrip("_") for p in package.glob("*.py") if p.stem != "__init__"}
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return modules | packages


def _subject(folder: Path, stem: str) -> str | None:
    """The module or package a test file is named after (None: none fits): the longest
    name of its folder's package that is the stem or begins it, then '_'."""
    relative = folder.relative_to(TESTS)
    top = relative.parts[0] if relative.parts else None
    if top in OTHER_FOLDERS:
        if top == "benchmarks":
            scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
            return next((s for s in sorted(scripts, key=len, reverse=True)
                         if stem == s or stem.startswith(s + "_")), None)  # fmt: skip
        return stem
    names = _names(ROOT / "bench" / relative)
    fits = [n for n in names if stem == n or stem.startswith(n + "_")]
    return max(fits, key=len) if fits else None


def test_every_test_file_is_named_after_a_module_of_the_package_its_folder_mirrors():
    strays = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "__pycache__" in path.parts:
            continue
        if _subject(path.parent, path.stem.removeprefix("test_")) is None:
            strays.append(str(path.relative_to(ROOT)))
    assert not strays, (
        "each of these names no module of the bench package its folder mirrors "
        f"(tests/report/test_page_*.py: bench/report/page.py): {strays}"
    )


def test_every_folder_of_tests_mirrors_a_package_or_says_why_not():
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir()):
        relative = folder.relative_to(TESTS)
        if "__pycache__" in relative.parts or relative.parts[0] == "data":
            continue
        # a package each: two folders may then hold files of one name (test_fleet.py)
        assert (folder / "__init__.py").is_file(), f"{relative} has no __init__.py"
        if relative.parts[0] not in OTHER_FOLDERS:
            assert (ROOT / "bench" / relative / "__init__.py").is_file(), (
                f"tests/{relative} mirrors no package of bench: move its tests to the "
                f"package they test, or name it in OTHER_FOLDERS with a reason"
            )


def test_the_rule_places_a_module_s_tests_and_refuses_a_stray():
    report = TESTS / "report"
    assert _subject(report, "page") == "page"
    assert _subject(report, "page_browser") == "page"
    assert _subject(report, "compare_fleet") == "compare"
    assert _subject(TESTS / "frameworks", "ipex") == "ipex"  # bench/frameworks/_ipex.py
    assert _subject(TESTS / "run", "max_batch_probes") == "max_batch"
    assert _subject(TESTS, "datasets") == "datasets"  # a package, one folder up
    assert _subject(TESTS / "benchmarks", "llm_peer_levers") == "llm_peer"
    assert _subject(report, "report_page") is None  # the old flat name
    assert _subject(TESTS / "workloads", "zoo") is None


def test_every_module_of_bench_opens_with_what_it_holds():
    """A newcomer reads a module's first docstring line to know what it holds; a
    package's __init__ says what the package is for (a workload's folder: its specs)."""
    import ast

    bare = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "bench").rglob("*.py"))
        if path.name != "__main__.py" and not ast.get_docstring(ast.parse(path.read_text()))
    ]
    assert bare == [], f"modules without a docstring: {bare}"
