"""The manual's commands, checked against the code they show (fast: no mkdocs needed).

Every `bench ...` command in a code block of README.md or a page of docs/ is parsed by
bench's own parser, as `bench` would parse it: the shorthand `bench WORKLOAD` included,
and the run options that suite, ladder and tune hand to `bench run`'s rules. So are the
arguments after the image in `docker run ... bench:IMAGE ARGS` and after `--` in
`nox -s "run(image=...)" -- ARGS` (the image's entrypoint is bench). An option renamed in
the code fails here, not in a reader's copy-paste. Every `nox -s NAME` names a session of
noxfile.py (read with ast: nox is not imported), with a real image where it takes one;
every command's --help ends with its page of the manual; and mkdocs.yml keeps the site
offline and strict.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
import yaml

from bench import cli, registry
from bench.commands import run_options, suite
from bench.commands.options import own_options
from bench.util.errors import BenchError
from tests.conftest import ROOT

DOCS = ROOT / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL = {"bash", "sh", "shell", "console"}
ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# What the pages show in code that is not a line to type, and why: a form to fill in
# (words in capitals, `...`), or a command named in prose with one of its options.
PLACEHOLDERS = {
    "bench WORKLOAD ...": "a form: WORKLOAD",
    "bench run WORKLOAD ...": "a form: WORKLOAD",
    "bench run a,b": "a form: a and b stand for workloads",
    "bench suite NAME [RUN OPTIONS]": "a form: NAME, RUN OPTIONS",
    "bench compare --format json": "names the option whose outputs folder scans skip",
    "bench fleet down": "the action named in prose (docs/security.md)",
    "bench fleet collect": "the action named in prose (docs/security.md)",
    "BENCH_VENDOR_ARCHIVE=dist/ARCHIVE BENCH_ARCHIVE_SHA256=<hash> "
    "nox -s \"build(image='IMAGE')\"": "a form: IMAGE, ARCHIVE (docs/security.md)",
}
# Every bench command these pages show, at least: a collector that finds none checks nothing.
FEWEST_COMMANDS = 60


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def code_of(text: str) -> list[str]:
    """Each command line of the shell code blocks (continuations joined, `$ ` prompts
    dropped), then each inline code span of three words or more outside them."""
    lines = []
    for language, body in FENCE.findall(text):
        if language in SHELL:
            for line in body.replace("\\\n", " ").splitlines():
                lines.append(line.strip().removeprefix("$ "))
    prose = FENCE.sub("", text)
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    # In prose, `bench compare` names a command; a command line has arguments after it.
    lines += [span for span in spans if len(span.split()) >= 3]
    return [line for line in lines if line]


def simple_commands(line: str) -> list[list[str]]:
    """A line's commands as argv lists: comments dropped, split at && || ; |, without the
    NAME=VALUE prefixes. A line shlex cannot split (prose in backticks) has none."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return []
    commands, current = [], []
    for word in [*words, ";"]:
        if word in ("&&", "||", ";", "|"):
            while current and ENV.match(current[0]):
                current.pop(0)
            if current:
                commands.append(current)
            current = []
        else:
            current.append(word)
    return commands


def bench_args(argv: list[str]) -> list[str] | None:
    """The arguments bench receives from this command, or None where it runs no bench."""
    if argv[0] == "bench":
        return argv[1:]
    if argv[:3] in (["python", "-m", "bench"], ["python3", "-m", "bench"]):
        return argv[3:]
    if argv[:2] == ["docker", "run"]:
        image = next((i for i, w in enumerate(argv) if w.startswith("bench:")), None)
        return None if image is None else argv[image + 1 :]
    if argv[0] == "nox" and "--" in argv and any(w.startswith("run(") for w in argv):
        return argv[argv.index("--") + 1 :]
    return None


def nox_sessions_named(argv: list[str]) -> list[str]:
    """The sessions `nox -s A B` names: every word after -s up to the next option."""
    if argv[0] != "nox" or "-s" not in argv:
        return []
    named = []
    for word in argv[argv.index("-s") + 1 :]:
        if word.startswith("-"):
            break
        named.append(word)
    return named


def parse_like_bench(args: list[str]) -> None:
    """Parse ARGS as `bench ARGS` would, up to running anything: raises what bench would
    print as its one-line error (BenchError), or SystemExit."""
    parser = cli.build_parser()
    names = cli.commands(parser)
    if args and args[0] not in names and not args[0].startswith("-"):
        args = ["run", *args]  # `bench resnet50 ...` == `bench run resnet50 ...`
    parsed = parser.parse_args(args)
    if parsed.command == "run":
        run_options.workload_list(parsed.workload)  # each workload is one bench has
    elif parsed.command in ("ladder", "tune"):
        own = ("--budget", "--resume") if parsed.command == "tune" else ("--resume",)
        _, rest = own_options(f"bench {parsed.command}", parsed, *own)
        registry.workload(parsed.workload)
        run_options.parse_run([parsed.workload, *rest])
    elif parsed.command == "suite" and parsed.name != "list":
        if parsed.name not in suite.suites():
            raise BenchError(f"no suite named {parsed.name!r}")
        run_options.parse_run(["tiny", *parsed.options])


def commands_in(path: Path) -> list[tuple[str, list[str]]]:
    """(the line as the page shows it, bench's arguments) for each bench command in it."""
    found = []
    for line in code_of(path.read_text()):
        if line in PLACEHOLDERS:
            continue
        for argv in simple_commands(line):
            args = bench_args(argv)
            if args is not None:
                found.append((line, args))
    return found


def why_it_does_not_parse(args: list[str]) -> str | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parse_like_bench(args)
    except SystemExit as stop:  # --help, --version (0), or an exit bench does not catch
        return None if stop.code == 0 else f"exits {stop.code} while parsing"
    except BenchError as error:
        return str(error)
    return None


def test_every_bench_command_in_the_docs_parses_with_benchs_own_parser(capsys):
    failures, parsed = [], 0
    for path in doc_files():
        for line, args in commands_in(path):
            why = why_it_does_not_parse(args)
            parsed += 1
            if why is not None:
                failures.append(f"{path.relative_to(ROOT)}: `{line}`: {why}")
    assert not failures, "commands in the docs that bench refuses:\n" + "\n".join(failures)
    assert parsed >= FEWEST_COMMANDS, f"only {parsed} bench commands found in the docs"
    with capsys.disabled():
        print(f"\n{parsed} bench commands in README.md and docs/ parsed")


def test_a_renamed_option_in_a_page_fails_the_check(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\nbench resnet50 --batch-sizes 16   # not an option\n```\n")
    [(_, args)] = commands_in(page)
    assert "--batch-sizes" in (why_it_does_not_parse(args) or "")
    page.write_text("Run `docker run --rm bench:xeon resnet50 --precison bf16` then.\n")
    [(_, args)] = commands_in(page)
    assert why_it_does_not_parse(args) is not None


def test_the_collector_reads_continuations_prompts_variables_and_images(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\n"
        "$ bench resnet50 --device cpu \\\n    --steps 3   # a comment\n"
        "BENCH_UID=1 XLA_FLAGS=x bench tiny && bench list\n"
        'docker run --rm -v "$PWD/r:/results" bench:cuda cnn-s --epochs 2\n'
        "nox -s \"run(image='xeon')\" -- resnet50 --batch-size 16\n"
        "pip install nox\n"
        "```\n"
        "and `bench ladder resnet50 --device cpu` inline.\n"
    )
    assert [args for _, args in commands_in(page)] == [
        ["resnet50", "--device", "cpu", "--steps", "3"],
        ["tiny"],
        ["list"],
        ["cnn-s", "--epochs", "2"],
        ["resnet50", "--batch-size", "16"],
        ["ladder", "resnet50", "--device", "cpu"],
    ]


def noxfile_sessions() -> dict[str, set[str]]:
    """Each session of noxfile.py and the arguments it is parametrized by, from its source."""
    sessions: dict[str, set[str]] = {}
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        if not any(ast.unparse(d) == "nox.session" for d in decorators):
            continue
        sessions[node.name] = {
            d.args[0].value
            for d in node.decorator_list
            if isinstance(d, ast.Call)
            and ast.unparse(d.func) == "nox.parametrize"
            and isinstance(d.args[0], ast.Constant)
        }
    return sessions


def why_not_a_session(word: str, sessions: dict[str, set[str]]) -> str | None:
    match = re.fullmatch(r"([\w-]+)(?:\((\w+)='([\w-]+)'\))?", word)
    if match is None:
        return "not a session name"
    name, argument, value = match.groups()
    if name not in sessions:
        return f"noxfile.py has no session {name!r} (it has: {', '.join(sorted(sessions))})"
    if argument is not None and argument not in sessions[name]:
        return f"{name} takes no {argument!r}"
    if argument == "image" and not (ROOT / "images" / value / "image.toml").is_file():
        return f"no image {value!r} (images/{value}/image.toml)"
    return None


def test_every_nox_session_in_the_docs_is_one_of_the_noxfile():
    sessions = noxfile_sessions()
    assert {"tests", "lint", "docs", "run", "rerun"} <= set(sessions), sessions
    failures, named = [], 0
    for path in doc_files():
        for line in code_of(path.read_text()):
            if line in PLACEHOLDERS:
                continue
            for argv in simple_commands(line):
                for word in nox_sessions_named(argv):
                    named += 1
                    why = why_not_a_session(word, sessions)
                    if why is not None:
                        failures.append(f"{path.relative_to(ROOT)}: `{line}`: {why}")
    assert not failures, "\n".join(failures)
    assert named >= 20, named
    assert why_not_a_session("test", sessions) is not None  # the check can fail
    assert why_not_a_session("build(image='cuda13')", sessions) is not None


def test_every_command_help_ends_with_its_page_of_the_manual():
    parser = cli.build_parser()
    pages = {"bench": parser}
    for name in cli.commands(parser):
        assert name in cli.MANUAL_PAGES, f"bench {name}: no page in cli.MANUAL_PAGES"
        command = cli._subparsers(parser)[name]
        pages[f"bench {name}"] = command
        for action, sub in cli._subparsers(command).items():
            pages[f"bench {name} {action}"] = sub
    assert "bench fleet plan" in pages
    listed = set(_nav_pages())
    for words, command in pages.items():
        last = command.format_help().rstrip().splitlines()[-1]
        match = re.fullmatch(r"Manual: docs/([\w-]+\.md) \(or site/([\w-]+)\.html, .*\)", last)
        assert match, f"{words} --help ends with {last!r}, not its page of the manual"
        assert (DOCS / match[1]).is_file() and match[1] in listed, f"{words}: {match[1]}"
        assert match[2] == match[1].removesuffix(".md")


def _nav_pages() -> list[str]:
    def walk(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in walk(value)]
        return []

    return walk(_mkdocs()["nav"])


def _mkdocs() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_the_site_is_built_offline_and_strict_from_every_page():
    config = _mkdocs()
    assert config["theme"] == {**config["theme"], "name": "material", "font": False}
    assert config.get("plugins", []) == ["search"], "a plug-in may fetch at build or view time"
    assert config["strict"] is True
    for check in ("not_found", "anchors", "absolute_links", "unrecognized_links"):
        assert config["validation"][check] == "warn", check  # strict: a warning fails
    excluded = set(config.get("exclude_docs", "").split())  # generated: the example report
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - excluded
    assert sorted(_nav_pages()) == sorted(pages), "a page missing from mkdocs.yml's nav"
    assert {"security.md", "architecture.md", "performance.md"} <= pages


@pytest.mark.parametrize("line", sorted(PLACEHOLDERS))
def test_each_placeholder_is_still_shown_somewhere(line):
    """A form listed above that no page shows any more is taken off the list."""
    shown = {code for path in doc_files() for code in code_of(path.read_text())}
    assert line in shown, f"{line!r} is in PLACEHOLDERS but no page shows it"
