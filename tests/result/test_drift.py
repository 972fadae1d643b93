"""Drift between two results (bench diff, bench rerun) and result checksums (bench verify)."""

import hashlib
import importlib.util
import json
import random
import re

import pytest

from bench import result
from bench.cli import main
from bench.commands.diff import EXIT_DRIFT
from bench.result import Point, archive, drift, integrity
from bench.util.errors import UsageError
from tests.conftest import DATA, run_bench
from tests.report.test_compare import machine

needs_scipy = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None, reason="bench[report] (scipy) is not installed"
)


def noisy_point(batch, mean_step_s, *, repeats=1, steps=30, seed=0, spread=0.01):
    """Steps around mean_step_s with a 1% spread, as a quiet machine gives."""
    rng = random.Random(seed)
    rows = tuple(
        tuple(mean_step_s * (1 + rng.gauss(0, spread)) for _ in range(steps))
        for _ in range(repeats)
    )
    return Point(batch_size=batch, precision="fp32", step_times_s=rows)


@needs_scipy
def test_the_same_machine_twice_is_the_same_within_noise():
    old = machine("Tesla V100-SXM2-16GB", [noisy_point(64, 0.1, seed=1)])
    new = machine("Tesla V100-SXM2-16GB", [noisy_point(64, 0.1, seed=2)])
    [d] = drift.compare(old, new)
    assert d.verdict == drift.SAME and not d.drifted
    assert d.basis == "steps (30 vs 30)"
    assert d.ci95[0] < 0 < d.ci95[1]


@needs_scipy
def test_steps_made_ten_percent_slower_are_named_slower_by_about_nine_percent():
    old = machine("A", [noisy_point(64, 0.100, seed=1)])
    new = machine("A", [noisy_point(64, 0.110, seed=2)])  # 10% longer steps
    [d] = drift.compare(old, new)
    assert d.verdict == drift.SLOWER and d.drifted
    assert d.change == pytest.approx(1 / 1.1 - 1, abs=0.01)  # -9.1% throughput
    assert d.ci95[0] < d.change < d.ci95[1] < 0
    assert d.p_value < 1e-6


@needs_scipy
def test_repeats_are_the_basis_when_both_sides_have_them():
    old = machine("A", [noisy_point(64, 0.1, repeats=3, seed=1)])
    new = machine("A", [noisy_point(64, 0.08, repeats=3, seed=2)])
    [d] = drift.compare(old, new)
    assert d.basis == "repeats (3 vs 3)" and d.verdict == drift.FASTER
    assert d.change == pytest.approx(0.25, abs=0.02)


@needs_scipy
def test_a_significant_change_under_the_threshold_is_not_drift():
    old = machine("A", [noisy_point(64, 0.100, steps=2000, seed=1, spread=0.001)])
    new = machine("A", [noisy_point(64, 0.101, steps=2000, seed=2, spread=0.001)])
    [d] = drift.compare(old, new, threshold=0.02)
    assert d.p_value < 0.05 and d.verdict == drift.SAME
    assert d.reason.startswith("the same within ±2% (95% CI 0.990x to 0.990x)")
    [d] = drift.compare(old, new, threshold=0.005)
    assert d.verdict == drift.SLOWER


@needs_scipy
def test_missing_failed_and_new_points_are_said():
    old = machine("A", [noisy_point(64, 0.1), noisy_point(128, 0.2)])
    failed = Point(batch_size=64, precision="fp32", status="oom", error="CUDA out of memory")
    new = machine("A", [failed, noisy_point(256, 0.4)])
    verdicts = {d.label: d.verdict for d in drift.compare(old, new)}
    assert verdicts == {
        "batch 64 fp32": drift.FAILED,
        "batch 128 fp32": drift.MISSING_NEW,
        "batch 256 fp32": drift.MISSING_OLD,
    }


@needs_scipy
def test_different_benchmarks_are_refused_in_one_line():
    from dataclasses import replace

    old = machine("A", [noisy_point(64, 0.1)])
    new = machine("A", [noisy_point(64, 0.1)])
    new.config = replace(new.config, workload="bert-base")
    with pytest.raises(UsageError, match="differ in workload"):
        drift.compare(old, new)


def test_environment_changes_name_the_field_and_skip_volatile_readings():
    old = machine("A", [])
    new = machine("A", [])
    old.environment["framework"] = {"torch": "2.11.0"}
    new.environment["framework"] = {"torch": "2.14.1"}
    old.environment["accelerator"]["nvml"] = {"temperature_c_at_start": [31]}
    new.environment["accelerator"]["nvml"] = {"temperature_c_at_start": [36]}
    assert drift.environment_changes(old, new) == [("framework.torch", "2.11.0", "2.14.1")]


def write(res, path):
    path.write_text(result.dumps(res))
    return path


@needs_scipy
def test_bench_diff_exit_status_says_whether_anything_drifted(tmp_path, capsys):
    old = write(machine("A", [noisy_point(64, 0.100, seed=1)]), tmp_path / "old.json")
    same = write(machine("A", [noisy_point(64, 0.100, seed=2)]), tmp_path / "same.json")
    slow = write(machine("A", [noisy_point(64, 0.125, seed=3)]), tmp_path / "slow.json")
    assert main(["diff", str(old), str(same)]) == 0
    assert "no drift" in capsys.readouterr().out
    assert main(["diff", str(old), str(slow)]) == EXIT_DRIFT
    shown = capsys.readouterr().out
    # 25% longer steps
    assert re.search(r"│ -(19|20)\.\d% │ .* │ 1\.2\d+x slower: 0\.8\d+x \(95% CI", shown)
    assert main(["diff", str(old), str(slow), "--format", "json"]) == EXIT_DRIFT
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "bench-diff"
    assert document["points"][0]["verdict"] == "slower"
    assert document["points"][0]["change"] == pytest.approx(-0.2, abs=0.01)


@needs_scipy
def test_every_step_half_as_slow_again_on_a_busy_machine_is_cannot_tell_not_the_same(
    tmp_path, capsys
):
    # Three repeats whose step times spread by half (a busy shared machine), and a copy
    # of the file with every step 1.5x slower: the interval of the ratio is 0.39x to
    # 1.13x. Read as 'same: within noise' and 'no drift' before.
    rows = ((0.10,) * 10, (0.15,) * 10, (0.12,) * 10)
    old = machine("A", [Point(batch_size=64, precision="fp32", step_times_s=rows)])
    slow_rows = tuple(tuple(t * 1.5 for t in row) for row in rows)
    new = machine("A", [Point(batch_size=64, precision="fp32", step_times_s=slow_rows)])
    [d] = drift.compare(old, new)
    assert d.basis == "repeats (3 vs 3)"
    assert d.verdict == drift.CANNOT_TELL and not d.drifted
    assert d.ci95[0] < -0.5 and d.ci95[1] > 0
    # Its repeats lie 1.5x apart with steady steps within each: more than the machine's
    # own noise, so no number of repeats is promised; the verdict says why.
    assert d.reason == (
        "cannot tell (95% CI 0.39x to 1.13x): the old point's repeats disagree: 426.7 to 640 "
        "samples/s (repeat 1 fastest, repeat 2 slowest; their steps do not overlap)"
    )
    old_file, new_file = write(old, tmp_path / "old.json"), write(new, tmp_path / "new.json")
    assert main(["diff", str(old_file), str(new_file)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("cannot tell: 1 of 1 points too noisy") and "no drift" not in last


@needs_scipy
def test_a_change_whose_interval_straddles_the_threshold_is_faster_but_not_drift():
    old = machine("A", [noisy_point(64, 0.100, steps=400, seed=1, spread=0.02)])
    new = machine("A", [noisy_point(64, 0.0985, steps=400, seed=2, spread=0.02)])
    [d] = drift.compare(old, new, threshold=0.02)
    assert d.ci95[0] > 0 and d.ci95[1] > 0.02 and d.change < 0.02
    assert d.verdict == drift.FASTER and not d.drifted
    assert d.reason == (
        "1.018x faster (95% CI 1.015x to 1.021x); by less than the 2% threshold: not drift"
    )


def test_bad_threshold_is_one_line():
    done = run_bench("diff", "a.json", "b.json", "--threshold", "150%")
    assert done.returncode == 2
    assert "threshold: '150%' is not a fraction" in done.stderr.strip().splitlines()[-1]


# --- checksums -------------------------------------------------------------------------


def test_a_written_result_carries_the_sha256_of_its_content(tmp_path):
    path = write(machine("A", [noisy_point(64, 0.1)]), tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert list(data)[-1] == "integrity"
    assert data["integrity"]["sha256"] == integrity.digest(data)
    assert integrity.check(data) == integrity.OK
    assert result.load(path).integrity == integrity.OK
    # re-indenting does not change the content
    path.write_text(json.dumps(data, indent=4))
    assert result.load(path).integrity == integrity.OK


def test_bench_verify_on_untouched_edited_truncated_and_old_files(tmp_path, capsys):
    good = write(machine("A", [noisy_point(64, 0.1)]), tmp_path / "good.json")
    data = json.loads(good.read_text())
    data["points"][0]["step_times_s"][0][0] /= 2  # a faster step than was measured
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:500])
    assert main(["verify", str(good)]) == 0
    assert capsys.readouterr().out.strip().endswith("good.json: ok")
    assert (
        main(["verify", str(good), str(edited), str(truncated), str(DATA / "result-v2.json")]) == 1
    )
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[1].endswith("edited.json: EDITED: its sha256 does not match its content")
    assert "truncated.json: UNREADABLE" in lines[2] and "invalid JSON" in lines[2]
    assert lines[3].endswith("result-v2.json: unverified: written before bench wrote checksums")
    # an edited file still loads, with a warning
    assert result.load(edited).integrity == integrity.EDITED
    assert "was changed after bench wrote it" in capsys.readouterr().err


def _sealed_archive(folder, name, content):
    """An archive as nox -s save / vendor leave it: the file, ARCHIVE.sha256, a manifest."""
    path = folder / name
    path.write_bytes(content)
    digest = hashlib.sha256(content).hexdigest()
    (folder / f"{name}.sha256").write_text(f"{digest}  {name}\n")
    manifest = {"archive": name, "archive_sha256": digest, "image": "bench:xeon"}
    manifest["lock_sha256"] = "9fa7ed450327ff39"
    archive.manifest_path(path).write_text(json.dumps(manifest))
    return path


def test_bench_verify_on_image_archives(tmp_path, capsys):
    good = _sealed_archive(tmp_path, "bench-xeon-0.1.0-abc.tar.gz", b"layers" * 1000)
    edited = _sealed_archive(tmp_path, "bench-xeon-vendor-9fa7ed450327.tar", b"wheels" * 1000)
    edited.write_bytes(b"wheels" * 999)  # truncated copy
    bare = tmp_path / "bench-cuda-0.1.0-def.tar.gz"
    bare.write_bytes(b"no manifest")
    manifest = tmp_path / "bench-xeon-0.1.0-abc.manifest.json"
    assert main(["verify", str(good), str(manifest)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith(
        "abc.tar.gz: ok (bench:xeon, bench-xeon-0.1.0-abc.tar.gz, lock 9fa7ed450327)"
    )
    assert lines[1].endswith(
        "abc.manifest.json: ok (bench:xeon, bench-xeon-0.1.0-abc.tar.gz, lock 9fa7ed450327)"
    )
    assert main(["verify", str(edited), str(bare)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith(
        "9fa7ed450327.tar: EDITED: bench-xeon-vendor-9fa7ed450327.tar's sha256"
        " is not the one its manifest gives"
    )
    assert lines[1].endswith(
        "def.tar.gz: UNREADABLE: no manifest bench-cuda-0.1.0-def.manifest.json beside it"
    )
    # the sidecar alone changed: also reported
    (tmp_path / f"{good.name}.sha256").write_text("0" * 64)
    assert main(["verify", str(good)]) == 1
    assert "EDITED" in capsys.readouterr().out
