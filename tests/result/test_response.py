"""The child's answer as one type (bench/result/response.py): what the child writes is
what the parent reads, and anything else is refused in one line naming the field."""

import json

import pytest

from bench.result import Point
from bench.result.response import FIELDS, InvalidResponse, Response
from bench.run import launchers

MEASURED = {
    "status": "ok",
    "warmup_times_s": [0.5],
    "step_times_s": [0.1, 0.1, 0.1],
    "epoch_times_s": None,
    "peak_memory_bytes": 1000,
    "memory_kind": "host_peak_rss",
    "loss_first": 2.0,
    "loss_last": float("nan"),  # a diverged loss is data
    "parameters": 5354,
    "devices": 2,
    "details": {"step_clock": "host"},
    "environment": {"host": {"hostname": "fake"}},
    "energy": {"window_s": 0.3, "per_device_j": {"cpu": 3.0}, "sources": {"cpu": "rapl"},
               "epoch_j": None},
    "ranks": {"world_size": 2, "mean_step_s": [0.1, 0.1], "slowest_rank": 1},
}  # fmt: skip


def test_an_answer_goes_over_the_pipe_and_comes_back_the_same():
    answer = Response.from_json(MEASURED)
    assert answer.step_times_s == (0.1, 0.1, 0.1) and answer.devices == 2
    line = json.dumps(answer.to_json())  # as ParentPipe.respond writes it
    again = Response.from_json(json.loads(line))
    assert again.to_json().keys() == answer.to_json().keys()
    assert again.step_times_s == answer.step_times_s and again.energy == answer.energy
    # fields at their default are left off the pipe, as the child left them out before
    assert Response(status="error", error="boom").to_json() == {"status": "error", "error": "boom"}


def test_every_field_has_a_check_and_says_what_it_allows():
    assert all(f.check is not None and f.expected for f in FIELDS)


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"step_time_s": [0.1]}, "response: unknown field 'step_time_s' (did you mean "
                                 "'step_times_s'?)"),
        ({"step_times_s": [0.1, "fast"]},
         'response.step_times_s[1]: expected a list of seconds from 1e-12 to 1e21, found "fast"'),
        ({"step_times_s": 0.1}, "response.step_times_s: expected a list of seconds"),
        ({"status": "fine"}, 'response.status: expected one of ok, oom, error, found "fine"'),
        ({"devices": "2"}, "response.devices: expected a whole number from 1 to"),
        ({"peak_memory_bytes": -1}, "response.peak_memory_bytes: expected a byte count or null"),
        ({"energy": {"window_s": 0.3}}, "response.energy: missing field 'per_device_j'"),
        ({"busy": {"window_s": "long"}}, "response.busy: expected a busy-machine record or null"),
    ],
)  # fmt: skip
def test_a_misspelt_key_or_a_wrong_type_is_refused_in_one_line(change, line):
    with pytest.raises(InvalidResponse) as refused:
        Response.from_json({**MEASURED, **change})
    said = str(refused.value)
    assert said.startswith(line) and "\n" not in said


def test_an_answer_without_a_status_or_not_an_object_is_refused():
    with pytest.raises(InvalidResponse, match=r"^response: missing field 'status'$"):
        Response.from_json({"step_times_s": [0.1]})
    with pytest.raises(InvalidResponse, match=r"^response: expected a JSON object, found list$"):
        Response.from_json([MEASURED])


def test_the_child_cannot_build_an_answer_its_parent_would_refuse():
    with pytest.raises(InvalidResponse, match=r"response.step_times_s\[0\]"):
        Response(status="ok", step_times_s=(0.0,))
    assert Response(status="ok").with_json({"step_times_s": [0.2]}).step_times_s == (0.2,)


def test_a_refused_answer_is_the_point_s_error_and_the_others_are_kept():
    refused = launchers.read({**MEASURED, "step_time_s": [0.1]})
    assert refused.status == "error"
    assert refused.error == (
        "bench refused the child's answer: response: unknown field 'step_time_s' "
        "(did you mean 'step_times_s'?)"
    )
    good = launchers.read(MEASURED)
    point = Point.from_responses({"batch_size": 8, "precision": "fp32"}, [good, refused], None)
    assert point.status == "error" and point.step_times_s == ((0.1, 0.1, 0.1),)
    assert point.error.startswith("bench refused the child's answer")


def test_a_point_of_answers_saves_as_a_result_file_loads_it():
    from bench.config.run_config import RunConfig
    from bench.result import Result, dumps, from_document

    answers = [Response.from_json(MEASURED), Response.from_json({**MEASURED, "loss_last": 1.0})]
    point = Point.from_responses({"batch_size": 8, "precision": "fp32"}, answers, 2e6)
    assert point.devices == 2 and point.loss_last[1] == 1.0 and point.parameters == 5354
    document = Result(config=RunConfig(workload="tiny"), command=["bench"], points=[point])
    loaded = from_document("r.json", json.loads(dumps(document)), warn_edited=False)
    assert loaded.points[0].step_times_s == point.step_times_s
