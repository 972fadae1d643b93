"""A run's end as bench says it: a search stopped after some of its probes finished says
they are saved ("no point had finished" though the probe was saved)."""

from bench import result
from bench.cli import main
from bench.run import launchers
from tests.run.test_runner import ok_response


def test_a_tune_interrupted_after_a_probe_says_the_probe_is_saved(tmp_path, monkeypatch, capsys):
    measured = []

    def child(point, job, on_progress, timeout_s=None):
        if job == "count_flops":
            return {"status": "ok", "flops_per_sample": 2e6, "environment": {"host": {}}}
        measured.append(point)
        if len(measured) == 4:
            raise KeyboardInterrupt  # Ctrl-C during the second probe (3 repeats each)
        return ok_response(step_s=point.batch_size / 100.0)

    monkeypatch.setattr(launchers, "spawn", child)
    grid = [
        "--batch-size",
        "32,64",
        "--precision",
        "fp32",
        "--memory-format",
        "contiguous",
        "--compile",
        "none",
        "--openmp",
        "gnu",
        "--allocator",
        "system",
        "--threads",
        "1",
    ]
    code = main(["tune", "tiny", "--device", "cpu", *grid, "--output-dir", str(tmp_path)])
    said = " ".join(capsys.readouterr().out.split())
    [path] = tmp_path.glob("*.json")
    assert code == 130
    assert [len(r["points"]) for r in result.load(path).tune["rounds"]] == [1]
    assert (
        f"bench: interrupted (SIGINT); no point of its own had finished; the 1 probe that "
        f"finished is saved in {path}"
    ) in said, said
    assert "no point had finished" not in said
