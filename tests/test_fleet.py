"""bench fleet: fleet files validated whole, SkyPilot tasks its own parser reads, the
launch path against SkyPilot's SDK with only its cloud calls faked, and collect over
results of real small CPU runs."""

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.commands.fleet import load
from bench.fleet import gather, launch, tasks
from bench.util.errors import UsageError
from tests.conftest import ROOT, run_bench

FLEETS = sorted((ROOT / "fleets").glob("*.toml"))
GOOD = """
[fleet]
name = "pair"
results = "{results}"
baseline = "{baseline}"
commands = ["run tiny --device cpu --steps 3 --warmup-steps 1 --repeats 1 --batch-size 8"]

[[target]]
name = "c7i"
image = "registry.example.com/bench:xeon@sha256:{digest}"
instance_type = "c7i.2xlarge"

[[target]]
name = "m7i"
image = "registry.example.com/bench:xeon"
instance_type = "m7i.2xlarge"
"""


def write(tmp_path, text: str, results: str = "results", baseline: str = "c7i") -> Path:
    path = tmp_path / "pair.toml"
    path.write_text(text.format(results=results, baseline=baseline, digest="a" * 64))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[fleet]", "[fleet]\ncolour = 1"), "fleet: unknown key(s) colour"),
        (('instance_type = "m7i', 'flavour = 1\ninstance_type = "m7i'), "unknown key(s) flavour"),
        (('instance_type = "m7i.2xlarge"', 'accelerators = "V100 x4"'), ".accelerators: 'V100 x4'"),
        (('instance_type = "m7i.2xlarge"', ""), "give accelerators, instance_type or both"),
        (('commands = ["run tiny', 'commands = []\nx = ["'), "unknown key(s) x"),
        (("commands = [", "commands = [] #"), "fleet.commands: give a non-empty list"),
        (("--steps 3", "--steps many"), "fleet.commands[0] ('run tiny --device cpu --steps many"),
        (("--steps 3", "--output-dir /tmp"), "--output-dir is set by the fleet per target"),
        # an abbreviation of an option the fleet sets: argparse took it for the whole name
        (("--steps 3", "--price-per 0.0001"), "unrecognized arguments: --price-per 0.0001"),
        (("run tiny", "run nosuchmodel"), "unknown workload 'nosuchmodel'"),
        (('name = "m7i"', 'name = "c7i"'), "the name 'c7i' is given twice"),
        (('name = "m7i"', 'name = "M7 I"'), "target[1].name: 'M7 I' is not allowed"),
        (('baseline = "c7i"', 'baseline = "h100"'), "fleet.baseline: 'h100' is not a target"),
        (('results = "results"', 'results = "ftp://x/y"'), "fleet.results: 'ftp://x/y'"),
        (("[[target]]", "[[targets]]"), "unknown key(s) targets"),
    ],
)
def test_a_bad_fleet_is_one_line_naming_the_field(tmp_path, edit, message):
    path = write(tmp_path, GOOD)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(UsageError) as error:
        load(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_fleet_without_targets_is_refused(tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text('[fleet]\nname = "x"\nresults = "r"\ncommands = ["run tiny"]\n')
    with pytest.raises(UsageError, match="no targets: add \\[\\[target\\]\\] tables"):
        load(path)


def _sky_parses(spec: dict) -> None:
    """SkyPilot's own reading of a task. Resolving an instance type on a named cloud
    needs that cloud's catalogue (a download): those are checked against SkyPilot's
    task schema whole, then parsed without the cloud."""
    sky = pytest.importorskip("sky")
    from sky.utils import common_utils, schemas

    common_utils.validate_schema(spec, schemas.get_task_schema(), "task: ")
    resources = spec["resources"]
    if "instance_type" in resources and "cloud" in resources:
        spec = {**spec, "resources": {k: v for k, v in resources.items() if k != "cloud"}}
    task = sky.Task.from_yaml_config(copy.deepcopy(spec))  # it takes the dict apart
    assert task.name == spec["name"] and task.num_nodes == spec["num_nodes"]


@pytest.mark.full
@pytest.mark.parametrize("path", FLEETS, ids=lambda p: p.stem)
def test_each_shipped_fleet_plans_tasks_that_skypilot_reads(tmp_path, path):
    yaml = pytest.importorskip("yaml")
    done = run_bench("fleet", "plan", str(path), "--tasks", str(tmp_path))
    assert done.returncode == 0, done.stderr
    fleet = load(path)
    assert "nothing launched" in done.stdout and "USD/hour" in done.stdout
    for target in fleet.targets:
        spec = yaml.safe_load((tmp_path / f"{target.name}.yaml").read_text())
        assert spec == tasks.task(fleet, target)
        _sky_parses(spec)
        # each launch under a name of its own: the task's and a random suffix
        command = f"sky {'jobs launch -n' if fleet.bucket else 'launch -c'} {spec['name']}-"
        assert re.search(re.escape(command) + r"[0-9a-f]{6} ", done.stdout.replace("\n", ""))
        # The image runs as built: its entrypoint is bench.
        assert f"{target.image} run " in spec["run"]


def test_the_price_and_results_folder_reach_each_run(tmp_path):
    fleet = load(write(tmp_path, GOOD, results="gs://bucket/b"))
    c7i, m7i = fleet.targets
    assert c7i.pinned and not m7i.pinned
    assert tasks.price_per_hour(c7i) == (0.357, "catalogue: c7i.2xlarge, 2024-09")
    argv = tasks.bench_arguments(c7i)[0]
    assert argv[-4:] == ["--output-dir", "/results/c7i", "--instance", "c7i.2xlarge"]
    spec = tasks.task(fleet, c7i)
    assert spec["file_mounts"] == {
        "/bench-bucket": {"source": "gs://bucket/b", "mode": "MOUNT_CACHED"}
    }
    assert "cp -a /bench-results/c7i/. /bench-bucket/c7i/" in spec["run"]


def test_several_nodes_take_their_rank_and_rendezvous_from_skypilot(tmp_path):
    """The task's own shell script, run with SkyPilot's variables and a recording
    `sudo`: bench on node 1 of 2 meets the head at its first IP."""
    text = GOOD.replace('instance_type = "c7i.2xlarge"', 'accelerators = "H100:8"\nnodes = 2')
    fleet = load(write(tmp_path, text))
    target = fleet.targets[0]
    spec = tasks.task(fleet, target)
    assert spec["num_nodes"] == 2
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\n')
    (bin_dir / "sudo").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SKYPILOT_NUM_NODES": "2",
           "SKYPILOT_NODE_RANK": "1", "SKYPILOT_NODE_IPS": "10.0.0.7\n10.0.0.8"}  # fmt: skip
    done = subprocess.run(["bash", "-c", spec["run"]], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[:6] == ["docker", "run", "--rm", "--net", "host", "--ipc"]
    # the nodes' secret reaches bench by name, from the task's environment
    assert argv[argv.index("-e") + 1] == "BENCH_RDZV_TOKEN"
    assert "--gpus" in argv and argv[
        argv.index(target.image) + 1 : argv.index(target.image) + 3
    ] == ["run", "tiny"]
    tail = argv[-6:]
    assert tail == ["--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "10.0.0.7:29500"]


class FakeSky:
    """SkyPilot's SDK with its cloud calls replaced: records what bench hands over
    (real sky.Task objects, read by SkyPilot's parser) and answers with states. Its
    clusters are one cloud's, shared by every fleet that launches there."""

    def __init__(self, sky, monkeypatch):
        self.launched, self.cancelled, self.job_state = [], [], {}
        self.job_names: dict[int, str] = {}  # job id -> the name it was launched under
        self.clusters: dict[str, str] = {}  # name -> state
        self.torn_down: list[str] = []
        self.next_id = 1
        monkeypatch.setattr(sky, "get", lambda request: request)
        monkeypatch.setattr(sky.jobs, "launch", self.jobs_launch)
        monkeypatch.setattr(sky.jobs, "queue", self.jobs_queue)
        monkeypatch.setattr(sky.jobs, "cancel", lambda job_ids: self.cancelled.extend(job_ids))
        monkeypatch.setattr(sky, "launch", self.launch)
        monkeypatch.setattr(sky, "status", self.status)
        monkeypatch.setattr(sky, "down", self.down)

    def launch(self, task, cluster_name):
        self.launched.append((task, cluster_name))
        self.clusters[cluster_name] = "UP"  # an existing one is reused, as SkyPilot does

    def status(self, cluster_names):
        return [
            SimpleNamespace(name=n, status=SimpleNamespace(value=self.clusters[n]))
            for n in cluster_names
            if n in self.clusters
        ]

    def down(self, name):
        self.torn_down.append(name)
        del self.clusters[name]

    def jobs_launch(self, task, name):
        self.launched.append((task, name))
        job_id, self.next_id = self.next_id, self.next_id + 1
        self.job_state[job_id], self.job_names[job_id] = "PENDING", name
        return [job_id], None

    def jobs_queue(self, refresh, job_ids):
        assert refresh
        return [
            SimpleNamespace(
                job_id=i,
                job_name=self.job_names.get(i),
                status=SimpleNamespace(value=self.job_state[i]),
            )
            for i in job_ids
            if i in self.job_state
        ]


@pytest.mark.full
def test_launch_never_starts_twice_what_finished_or_runs(tmp_path, monkeypatch):
    sky = pytest.importorskip("sky")
    fake = FakeSky(sky, monkeypatch)
    path = write(tmp_path, GOOD, results="s3://bucket/pair")
    done = run_bench("fleet", "plan", str(path))  # the same tasks launch writes
    assert done.returncode == 0, done.stderr
    fleet = load(path)
    folder = path.with_name("pair.tasks")
    said = []
    assert launch.launch(fleet, folder, said.append) == {"c7i": "launched", "m7i": "launched"}
    task, name = fake.launched[0]
    assert isinstance(task, sky.Task) and re.fullmatch(r"pair-c7i-[0-9a-f]{6}", name)
    assert task.num_nodes == 1 and "run tiny" in task.run and not task.secrets
    names = [n for _, n in fake.launched]
    assert launch.load_state(fleet) == {
        "c7i": {"job_id": 1, "name": names[0], "yaml": str(folder / "c7i.yaml")},
        "m7i": {"job_id": 2, "name": names[1], "yaml": str(folder / "m7i.yaml")},
    }
    fake.job_state.update({1: "SUCCEEDED", 2: "FAILED_SETUP"})
    assert launch.statuses(fleet) == {"c7i": "SUCCEEDED", "m7i": "FAILED_SETUP"}
    done = launch.launch(fleet, folder, said.append)
    assert done == {"c7i": "left alone: SUCCEEDED", "m7i": "launched"}
    assert len(fake.launched) == 3 and fake.launched[2][1].startswith("pair-m7i-")
    assert fake.launched[2][1] != names[1]  # a launch again: a name of its own
    assert launch.load_state(fleet)["m7i"]["job_id"] == 3
    launch.down(fleet, said.append)
    assert fake.cancelled == [1, 3]


@pytest.mark.full
def test_two_fleets_of_one_name_never_share_a_cluster_and_down_stops_only_its_own(
    tmp_path, monkeypatch
):
    """Two people (two folders) with a fleet called 'pair' on one cloud account: each
    launch has a cluster of its own, and `down` of one leaves the other's running."""
    sky = pytest.importorskip("sky")
    fake = FakeSky(sky, monkeypatch)
    fleets = []
    for who in ("alice", "bob"):
        (tmp_path / who).mkdir()
        fleet = load(write(tmp_path / who, GOOD))  # results in a local folder
        folder = tmp_path / who / "pair.tasks"
        assert run_bench("fleet", "plan", str(fleet.path)).returncode == 0
        assert launch.launch(fleet, folder, print) == {"c7i": "launched", "m7i": "launched"}
        fleets.append(fleet)
    alice, bob = (launch.load_state(f) for f in fleets)
    assert (
        len(fake.clusters) == 4
        and len({s["cluster"] for s in (*alice.values(), *bob.values())}) == 4
    )
    launch.down(fleets[0], print)
    assert sorted(fake.torn_down) == sorted(s["cluster"] for s in alice.values())
    assert sorted(fake.clusters) == sorted(s["cluster"] for s in bob.values())
    assert launch.statuses(fleets[1]) == {"c7i": "UP", "m7i": "UP"}
    assert launch.load_state(fleets[0]) == {}  # torn down: launched afresh next time
    said = []
    launch.down(fleets[0], said.append)
    assert said == ["fleet pair: nothing launched"] and len(fake.clusters) == 2


@pytest.mark.full
def test_several_nodes_get_a_secret_that_is_written_nowhere(tmp_path, monkeypatch):
    sky = pytest.importorskip("sky")
    yaml = pytest.importorskip("yaml")
    fake = FakeSky(sky, monkeypatch)
    text = GOOD.replace('instance_type = "c7i.2xlarge"', 'accelerators = "H100:8"\nnodes = 2')
    fleet = load(write(tmp_path, text))
    folder = tmp_path / "pair.tasks"
    done = run_bench("fleet", "plan", str(fleet.path))
    assert done.returncode == 0, done.stderr
    assert "--secret BENCH_RDZV_TOKEN" in done.stdout.replace("\n", "")
    monkeypatch.delenv("BENCH_RDZV_TOKEN", raising=False)
    said = []
    launch.launch(fleet, folder, said.append)
    (two, _), (one, _) = fake.launched
    secret = two.secrets["BENCH_RDZV_TOKEN"].get_secret_value()
    assert re.fullmatch(r"[0-9a-f]{64}", secret) and not one.secrets
    assert "c7i: its 2 nodes share a fresh random BENCH_RDZV_TOKEN" in said
    written = [p.read_text() for p in (*folder.iterdir(), launch.state_path(fleet))]
    assert all(secret not in text for text in written) and secret not in " ".join(said)
    assert yaml.safe_load((folder / "c7i.yaml").read_text()).get("secrets") is None
    # the user's own, when set (and checked)
    mine = "d" * 64
    monkeypatch.setenv("BENCH_RDZV_TOKEN", mine)
    launch.down(fleet, print)
    launch.launch(fleet, folder, said.append)
    assert fake.launched[2][0].secrets["BENCH_RDZV_TOKEN"].get_secret_value() == mine
    monkeypatch.setenv("BENCH_RDZV_TOKEN", "short")
    launch.down(fleet, print)
    with pytest.raises(UsageError, match="BENCH_RDZV_TOKEN: use 32 to 1024"):
        launch.launch(fleet, folder, said.append)


def test_launch_without_skypilot_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sky", None)
    fleet = load(write(tmp_path, GOOD))
    with pytest.raises(UsageError, match=r"pip install 'bench\[fleet\]'"):
        launch.launch(fleet, tmp_path, print)


def test_a_local_fleet_copies_back_from_its_clusters_and_a_bucket_with_its_tool(tmp_path):
    fleet = load(write(tmp_path, GOOD))
    state = {"c7i": {"cluster": "pair-c7i"}}
    folder = tmp_path / "results"
    assert gather.fetch_commands(fleet, state) == [
        ["rsync", "-a", "pair-c7i:/bench-results/c7i/", str(folder / "c7i")]
    ]
    bucket = load(write(tmp_path, GOOD, results="s3://b/p"))
    assert gather.fetch_commands(bucket, {}) == [
        ["aws", "s3", "sync", "s3://b/p", str(tmp_path / "pair-results")]
    ]
    r2 = load(write(tmp_path, GOOD, results="r2://b/p"))
    with pytest.raises(UsageError, match=r"copy r2://b/p into .* then: bench fleet collect"):
        gather.fetch_commands(r2, {})


@pytest.mark.slow
def test_collect_compares_the_targets_and_names_one_without_results(tmp_path):
    """Each 'machine' is a real small CPU run with exactly the bench arguments its
    task runs (the price makes them two machines: c7i and m7i)."""
    fleet = load(write(tmp_path, GOOD))
    (tmp_path / "results").mkdir()
    for target in fleet.targets:
        argv = tasks.bench_arguments(target)[0]
        out = argv.index("--output-dir") + 1
        argv[out] = str(tmp_path / "results" / target.name)
        done = run_bench(*argv)
        assert done.returncode == 0, done.stderr[-2000:]
    done = run_bench("fleet", "collect", str(fleet.path), "--no-fetch")
    assert done.returncode == 0, done.stderr[-2000:]
    text = " ".join(done.stdout.split())
    assert "baseline:" in text and "c7i.2xlarge" in text and "m7i.2xlarge" in text
    assert (tmp_path / "results" / "report" / "report.html").exists()
    for path in (tmp_path / "results" / "m7i").glob("*.json"):
        path.unlink()
    done = run_bench("fleet", "collect", str(fleet.path), "--no-fetch")
    assert done.returncode == 1
    assert f"target m7i has no result in {tmp_path / 'results' / 'm7i'}" in " ".join(
        done.stdout.split()
    )
