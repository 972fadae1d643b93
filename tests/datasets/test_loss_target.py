"""Training a decoder to a validation loss: the options and their refusals,
token shards, the evaluation over ranks, the to_loss block of a result, and (slow) the
tiny llama reaching a target over two gloo ranks."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import datasets, result
from bench.commands.run_options import config_from_args, parse_run
from bench.config.run_config import PointConfig, RunConfig
from bench.datasets import DatasetError, loss_target, tokens
from bench.datasets.recipe import DECODER_RECIPES, LLMC_GPT2
from bench.result import Point
from bench.util.errors import UsageError
from tests.conftest import DATA
from tests.fake_data import periodic_tokens, write_tokens

SEQ = 16  # windows of 17 tokens


def _files(tmp_path: Path, val_windows: int = 64) -> tuple[Path, Path]:
    train = write_tokens(tmp_path / "train.bin", periodic_tokens(17 * 200), "gpt-2")
    val = write_tokens(tmp_path / "val.bin", periodic_tokens(17 * val_windows + 3)[3:], "gpt-2")
    return train, val


def _config(train: Path | str, val: Path | str, **more: object) -> RunConfig:
    fields: dict = {"batch_sizes": (4,), "seq_len": SEQ, "train_to_loss": 3.0, "steps": 10}
    fields.update(more)
    return RunConfig("llama3-tiny", data=f"tokens:{train}", val_data=f"tokens:{val}", **fields)


def _refusal(config: RunConfig) -> str:
    with pytest.raises(DatasetError) as caught:
        datasets.check(config)
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- options and refusals, before any point runs ----------------------------------------


def test_the_options_parse_into_the_config():
    args = parse_run([
        "llama3-tiny", "--device", "cpu", "--data", "tokens:/t.bin", "--val-data", "tokens:/v.bin",
        "--train-to-loss", "3.28", "--max-tokens", "10B", "--eval-every", "12288seq",
        "--eval-sequences", "1024", "--recipe", "llmc-gpt2-124m", "--batch-size", "8",
    ])  # fmt: skip
    config = config_from_args(args)
    assert config.train_to_loss == 3.28 and config.max_tokens == 10**10
    assert (config.eval_every, config.eval_every_unit) == (12288, "sequences")
    assert config.eval_sequences == 1024 and config.recipe == "llmc-gpt2-124m"
    assert config.warmup_steps == 0  # every step counts toward the target
    assert parse_run(["gpt2", "--eval-every", "50M"]).eval_every == (5 * 10**7, "tokens")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"val_data": "tokens:/v.bin"}, "val_data: only applies with train_to_loss"),
        ({"train_to_loss": 3.0}, "val_data: None is not allowed"),
        ({"train_to_loss": 3.0, "val_data": "tokens:/v.bin", "data": "synthetic"},
         "train_to_loss: needs a token file to train on"),
        ({"train_to_loss": -1.0, "val_data": "tokens:/v.bin"},
         "train_to_loss: -1.0 is not allowed"),
        ({"train_to_loss": 3.0, "val_data": "tokens:/v.bin", "framework": "jax"},
         "train_to_loss: jax has no validation loss over a token file yet"),
        ({"train_to_loss": 3.0, "val_data": "tokens:/v.bin", "recipe": "nope"},
         "recipe: 'nope' is not allowed"),
        ({"train_to_loss": 3.0, "val_data": "tokens:/v.bin", "warmup_steps": 3},
         "warmup_steps: with train_to_loss every step trains toward the target"),
        ({"train_to_loss": 3.0, "val_data": "tokens:/v.bin", "devices": (2,),
          "eval_sequences": 5}, "eval_sequences: 5 does not split evenly over 2 ranks"),
    ],
)  # fmt: skip
def test_a_config_that_cannot_train_to_a_loss_is_one_line(fields, message):
    base = {"workload": "llama3-tiny", "data": "tokens:/t.bin", "batch_sizes": (4,)}
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RunConfig(**{**base, **fields})


def test_a_missing_validation_file_is_named(tmp_path):
    train, _ = _files(tmp_path)
    message = _refusal(_config(train, tmp_path / "nowhere.bin"))
    assert message.startswith("val_data: ") and "nowhere.bin" in message


def test_a_validation_file_too_small_for_one_evaluation_is_refused(tmp_path):
    train, val = _files(tmp_path, val_windows=10)
    message = _refusal(_config(train, val, eval_sequences=32))
    assert message.startswith("val_data: ") and "10 windows of 17" in message
    assert "one evaluation takes 32" in message


def test_a_validation_file_of_another_vocabulary_is_refused(tmp_path):
    train, _ = _files(tmp_path)
    val = write_tokens(tmp_path / "llama.bin", periodic_tokens(17 * 64), "llama-3")
    message = _refusal(_config(train, val))
    assert message.startswith("val_data: ") and "llm.c magic 20240801" in message
    assert "uint32" in message and "uint16" in message


@pytest.mark.parametrize("how", ["same path", "hard link", "copy"])
def test_the_training_file_as_validation_file_is_refused(tmp_path, how):
    train, _ = _files(tmp_path)
    val = {"same path": train, "hard link": tmp_path / "link.bin", "copy": tmp_path / "copy.bin"}[
        how
    ]
    if how == "hard link":
        os.link(train, val)
    elif how == "copy":
        shutil.copy(train, val)
    message = _refusal(_config(train, val))
    expected = "begins with the same 17 tokens as" if how == "copy" else "is the same file as"
    assert message.startswith("val_data: ") and expected in message


def test_a_held_out_validation_file_passes(tmp_path):
    train, val = _files(tmp_path)
    datasets.check(_config(train, val))  # no refusal


def test_a_validation_token_past_the_vocabulary_is_refused_before_any_point(tmp_path):
    train, _ = _files(tmp_path)
    bad = periodic_tokens(17 * 64 + 3)[3:]  # held out as _files's: no training window
    bad[20] = 600  # llama3-tiny's vocabulary is 512
    val = write_tokens(tmp_path / "val.bin", bad, "gpt-2")
    message = _refusal(_config(train, val))
    assert message.startswith("val_data: ") and "token 600" in message


# --- shards -------------------------------------------------------------------------------


def test_a_glob_reads_every_shard_in_order_as_one_run_of_windows(tmp_path):
    first = write_tokens(tmp_path / "s_000001.bin", np.arange(17 * 3) % 500, "gpt-2")
    write_tokens(tmp_path / "s_000002.bin", np.arange(17 * 2) % 500 + 1, "gpt-2")
    ref = datasets.DataRef("tokens", str(tmp_path / "s_*.bin"))
    file = tokens.TokenFile(ref, 17, 0, shuffle=False)
    spec = PointConfig("llama3-tiny", seq_len=SEQ).spec
    try:
        assert file.windows == 5 and len(file.shards) == 2
        rows = file.read(0, 5, spec)
        assert rows[0, 0] == 0 and rows[3, 0] == 1  # the second shard's first window
        facts = file.describe()
        assert facts["file"] == "s_*.bin (2 shards)" and facts["tokens"] == 17 * 5
        assert [s["file"] for s in facts["shards"]] == ["s_000001.bin", "s_000002.bin"]
        assert facts["shards"][0]["sha256"] is not None
    finally:
        file.close()
    # Each shard is checked as one file is: a second shard of another format is named.
    write_tokens(tmp_path / "s_000003.bin", np.arange(17), "llama-3")
    with pytest.raises(DatasetError, match=r"s_000003\.bin is llm\.c magic 20240801"):
        tokens.TokenFile(ref, 17, 0)
    assert first.exists()
    with pytest.raises(DatasetError, match="matches no file"):
        tokens.TokenFile(datasets.DataRef("tokens", str(tmp_path / "none_*.bin")), 17, 0)


# --- the recipe ---------------------------------------------------------------------------


def test_the_llmc_recipe_warms_up_in_tokens_then_decays_to_zero_at_the_budget():
    warmup, end = LLMC_GPT2.steps(524_288, 19_073)
    assert (warmup, end) == (700, 19_073)
    assert LLMC_GPT2.lr_factor(0, warmup, end) == pytest.approx(1 / 700)
    assert LLMC_GPT2.lr_factor(699, warmup, end) == pytest.approx(1.0)
    assert LLMC_GPT2.lr_factor(end, warmup, end) == pytest.approx(0.0)
    mlperf = DECODER_RECIPES["mlperf-llama31-8b"]
    assert mlperf.steps(32 * 8192, 10_000) == (512, 1_200_000)
    assert mlperf.lr_factor(10**7, 512, 1_200_000) == pytest.approx(0.1)


# --- the result block ---------------------------------------------------------------------


def _record(losses: list[float], train_s: float = 1.0, eval_s: float = 0.25) -> dict:
    curve = [
        {"step": 10 * (i + 1), "tokens": 640 * (i + 1), "sequences": 40 * (i + 1), "loss": loss,
         "train_s": train_s, "eval_s": eval_s, "train_loss": loss}
        for i, loss in enumerate(losses)
    ]  # fmt: skip
    return {"metric": "val_loss", "target": 3.0, "curve": curve, "stopped": None}


def test_to_loss_counts_training_and_evaluation_time_tokens_and_energy_to_the_target():
    energy = {"window_s": 5.0, "per_device_j": {"cpu": 50.0}, "sources": {"cpu": "rapl"},
              "epoch_j": [10.0, 10.0, 10.0, 10.0]}  # fmt: skip
    point = Point(
        batch_size=4, precision="fp32", step_times_s=((0.1,) * 40,),
        loss=(_record([4.0, 3.5, 2.9, 2.5]),), energy=(energy,),
    )  # fmt: skip
    reached = point.to_loss
    assert reached is not None and reached.reached == 1 and reached.repeats == 1
    assert reached.tokens_to_target == 1920 and reached.steps_to_target == 30
    assert reached.time_to_target_s == pytest.approx(3 * 1.25)
    assert reached.eval_s_to_target == pytest.approx(0.75) and reached.eval_share == 0.2
    assert reached.energy_to_target_j == pytest.approx(30.0)
    assert reached.cost_to_target(3.6) == pytest.approx(3.75 / 3600 * 3.6)
    assert reached.best_loss == 2.5 and reached.best_at_tokens == 2560
    assert [c["wall_s"] for c in reached.curve] == pytest.approx([1.25, 2.5, 3.75, 5.0])
    assert point.to_json()["to_loss"]["tokens_to_target"] == 1920


def test_a_target_never_reached_is_reported_with_the_best_loss_and_where():
    point = Point(batch_size=4, precision="fp32", loss=(_record([4.0, 3.2, 3.4]),))
    missed = point.to_loss
    assert missed is not None and missed.reached == 0 and missed.time_to_target_s is None
    assert missed.best_loss == 3.2 and missed.best_at_tokens == 1280
    assert missed.best_at_s == pytest.approx(2.5) and missed.tokens_trained == 1920


def test_an_older_result_loads_without_a_loss_block_and_the_v12_fixture_with_one():
    old = result.load(DATA / "result-v11.json")
    assert all(p.loss == () and p.to_loss is None for p in old.points)
    assert old.config.eval_every_unit == "tokens" and old.config.train_to_loss is None
    new = result.load(DATA / "result-v12.json")
    (point,) = new.points
    assert point.to_loss is not None and point.to_loss.reached == 2
    assert new.config.train_to_loss == 5.0 and new.config.eval_every_unit == "sequences"


def _rendered(table: object) -> str:
    from rich.console import Console

    out = Console(width=250, file=io.StringIO())
    out.print(table)
    return out.file.getvalue()


def test_the_terminal_shows_time_tokens_energy_and_cost_to_the_loss_or_that_it_was_missed():
    """`bench run --train-to-loss` and `bench show`: beside the throughput table, one row
    per point with its loss curve, best loss, and tokens, time, energy and cost to the
    target; 'not reached' (and why: the budget, or a signal) where it was missed."""
    from bench.report.table import loss_table, tables

    energy = {"window_s": 5.0, "per_device_j": {"cpu": 50.0}, "sources": {"cpu": "rapl"},
              "epoch_j": [360.0, 360.0, 360.0, 360.0]}  # fmt: skip
    reached = Point(batch_size=4, precision="fp32", step_times_s=((0.1,) * 40,),
                    loss=(_record([4.0, 3.5, 2.9, 2.5]),), energy=(energy,))  # fmt: skip
    long = [4.0, 3.9, 3.8, 3.7, 3.6, 3.5]
    missed = Point(batch_size=8, precision="fp32", step_times_s=((0.1,) * 60,),
                   loss=(_record(long),))  # fmt: skip
    stopped = Point(batch_size=16, precision="fp32", step_times_s=((0.1,) * 20,),
                    loss=({**_record([4.0, 3.4]), "stopped": "SIGTERM"},))  # fmt: skip
    config = _config("train.bin", "val.bin")
    run = result.Result(config=config, points=[reached, missed, stopped],
                        pricing={"usd_per_hour": 36.0})  # fmt: skip
    assert any(str(t.title).startswith("loss:") for t in tables(run))
    text = _rendered(loss_table(run))
    assert "to 3 nats/token" in text and "val.bin" in text
    row = next(line for line in text.splitlines() if "batch 4 fp32" in line)
    for cell in ("4.000 → 3.500 → 2.900 → 2.500", "2.500 at 2,560", "1,920 (30 steps)",
                 "3.8 s (evaluation 20%)", "0.0003 kWh", "$0.0375"):  # fmt: skip
        assert cell in row, (cell, row)
    row = next(line for line in text.splitlines() if "batch 8 fp32" in line)
    assert "4.000 → 3.500 (6 evaluations)" in row and "3.500 at 3,840" in row
    assert row.count("not reached") == 3 and "n/a" in row  # tokens, time, cost; no energy
    assert "budget spent" in row
    row = next(line for line in text.splitlines() if "batch 16 fp32" in line)
    assert "not reached" in row and "stopped (SIGTERM) after 1,280 tokens" in row
    unpriced = _rendered(loss_table(dataclasses.replace(run, pricing=None)))
    assert "n/a (no price)" in unpriced
    plain_run = result.Result(config=RunConfig("llama3-tiny"), points=[Point(4, "fp32")])
    assert not any(str(t.title).startswith("loss:") for t in tables(plain_run))


# --- the evaluation over ranks ------------------------------------------------------------

_EVALUATE = """
import json, sys, torch, torch.distributed as dist
from types import SimpleNamespace
from bench.config.run_config import PointConfig
from bench.datasets import loss_target
rank, world, store, val = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if world > 1:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
point = PointConfig("llama3-tiny", batch_size=4, seq_len=16, data="tokens:" + val,
                    val_data="tokens:" + val, train_to_loss=1.0, eval_sequences=24, warmup_steps=0,
                    devices=world if world > 1 else None)
impl = point.spec.implementation("torch")
torch.manual_seed(0)
session = SimpleNamespace(
    impl=impl, eager_model=impl.build_model(point.spec, point), device=torch.device("cpu"),
    amp_dtype=None, train_loss=lambda m, x, y: impl.loss(m(x), y), _to_device=lambda t: t,
    rank=SimpleNamespace(rank=rank, world_size=world) if world > 1 else None)
file = loss_target.open_val(point)
made = loss_target.plan(point, file.windows)
result = loss_target.TorchEvaluator(session, point, file, made).evaluate(stop=rank == 1)
print(json.dumps([result.loss, result.tokens, result.stop]), flush=True)
# Out at once, as bench's ranks leave their group to the process's end: gloo's group torn
# down at interpreter exit can abort ('terminate called without an active exception').
import os

os._exit(0)
"""


def _evaluate(tmp_path: Path, val: Path, world: int) -> list:
    store = tmp_path / f"store{world}"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _EVALUATE, str(r), str(world), str(store), str(val)],
            stdout=subprocess.PIPE, text=True,
        )
        for r in range(world)
    ]  # fmt: skip
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    return outs


@pytest.mark.slow
def test_the_evaluation_gives_the_same_loss_on_one_and_two_ranks(tmp_path):
    """Rank r evaluates its half of the 24 windows (3 micro-batches of 2 each); the sums
    and counts added over the ranks give the loss one process gives over all 24, on
    every rank, and a stop asked on one rank reaches both."""
    _, val = _files(tmp_path)
    (alone,) = _evaluate(tmp_path, val, 1)
    both = _evaluate(tmp_path, val, 2)
    assert alone[1] == 24 * SEQ and alone[2] is False
    for loss, counted, stop in both:
        assert counted == 24 * SEQ and stop is True
        assert loss == pytest.approx(alone[0], rel=1e-6)
    assert both[0][0] == both[1][0]  # the very same value on every rank
    assert math.isfinite(alone[0]) and alone[0] > 5  # untrained: about ln(512)


# --- end to end over two gloo ranks -------------------------------------------------------


@pytest.mark.slow
def test_two_gloo_ranks_train_the_tiny_llama_to_a_target_loss(tmp_path):
    from tests.conftest import only_result, run_bench

    # A cycle of 13 tokens: each training window of 65 (five cycles) starts at its first
    # token, each validation window 5 tokens in, so none is a window the run trains on
    # (with the 17-token cycle the windows of 65 came round to every start: shared).
    cycle = periodic_tokens(13)
    train = write_tokens(tmp_path / "train.bin", np.resize(cycle, 65 * 400), "gpt-2")
    val = write_tokens(tmp_path / "val.bin", np.resize(cycle, 65 * 64 + 5)[5:], "gpt-2")
    done = run_bench(
        "llama3-tiny", "--device", "cpu", "--devices", "2", "--data", f"tokens:{train}",
        "--val-data", f"tokens:{val}", "--train-to-loss", "2.0", "--max-tokens", "200K",
        "--batch-size", "8", "--seq-len", "64", "--eval-every", "2K", "--eval-sequences", "32",
        "--price-per-hour", "3.6", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (point,) = only_result(tmp_path / "out")["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    reached = point["to_loss"]
    assert reached["reached"] == 1 and reached["target"] == 2.0
    assert 0 < reached["tokens_to_target"] < 200_000 and reached["tokens_to_target"] % 2048 == 0
    assert reached["time_to_target_s"] > reached["eval_s_to_target"] > 0
    assert reached["best_loss"] <= 2.0 and reached["curve"][-1]["loss"] <= 2.0
    assert all(c["loss"] > 2.0 for c in reached["curve"][:-1])
    (record,) = point["loss"]
    assert record["eval_sequences"] == 32 and record["tokens_per_step"] == 512
    assert record["recipe"]["name"] == "default" and record["val"]["file"] == "val.bin"
    assert len(point["step_times_s"][0]) == reached["steps_to_target"]


# --- the presets --------------------------------------------------------------------------


def test_the_presets_hold_their_references_recipe_cadence_and_target():
    from bench.commands import suite

    presets = suite.suites()
    (gpt2,) = presets["speedrun-gpt2"].runs
    config = config_from_args(parse_run([*gpt2, "--device", "cpu"]))
    (point,) = config.points()
    assert config.train_to_loss == 3.28 and config.recipe == "llmc-gpt2-124m"
    assert point.tokens_per_step == 524_288 and config.max_tokens == 10**10
    assert loss_target.plan(point, 10**6).eval_every_steps == 250
    assert config.eval_sequences == 10_240
    (llama,) = presets["mlperf-llama31-8b"].runs
    config = config_from_args(parse_run([*llama, "--device", "cpu"]))
    (point,) = config.points()
    made = loss_target.plan(point, 10**6)
    assert config.train_to_loss == 3.3 and point.tokens_per_step == 32 * 8192
    assert made.eval_every_steps == 12_288 // 32 and made.eval_sequences == 1024
    assert made.recipe.describe(point.tokens_per_step, made.budget_steps)["warmup_steps"] == 512


@pytest.mark.slow
def test_a_stopped_child_answers_with_the_curve_it_measured(tmp_path):
    """SIGTERM (or SIGINT) while training to a loss: the child finishes the interval it
    is in, evaluates, and answers with its curve and why it stopped (it died with
    nothing before). The parent still kills its child at once on Ctrl-C: see the report."""
    import signal
    import time

    train, val = _files(tmp_path)
    point = PointConfig(
        "llama3-tiny", batch_size=4, seq_len=SEQ, data=f"tokens:{train}",
        val_data=f"tokens:{val}", train_to_loss=0.001, max_tokens=10**7, eval_every=64,
        eval_sequences=8, warmup_steps=0,
    )  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.child.worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    child.stdin.write(json.dumps({"point": point.to_dict(), "job": "measure"}))  # type: ignore[union-attr]
    child.stdin.close()  # type: ignore[union-attr]
    # Past its start-up (importing torch, building the model: seconds, more on a busy
    # machine), into training: a signal before the child's handler is set ends it bare.
    time.sleep(20)
    child.send_signal(signal.SIGTERM)
    response = json.loads(child.stdout.read())  # type: ignore[union-attr]
    child.wait(timeout=60)
    assert response["status"] == "ok", response.get("error")
    record = response["loss"]
    assert record["stopped"] == "SIGTERM" and record["curve"]
    assert len(response["step_times_s"]) == record["curve"][-1]["step"]


def test_the_config_declares_the_evaluators_and_recipes_the_datasets_implement():
    from bench.config import run_config
    from bench.datasets import loss_target, recipe

    assert tuple(loss_target.EVALUATORS) == run_config.LOSS_FRAMEWORKS
    assert tuple(recipe.DECODER_RECIPES) == run_config.DECODER_RECIPES
