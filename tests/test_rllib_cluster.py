"""The RLlib trainer (``python -m training.rllib``) on a real multi-node Ray cluster: a head
and a worker node started on this machine with the commands of docs/rllib-cluster.md
(``ray start --head`` and ``ray start --address``, token authentication), each node with
one CPU, so that the two env runners (one CPU each) must run one on each node. The recipe
joins with ``--address``, checkpoints every iteration, is stopped with SIGTERM and goes on
with ``--resume`` on the same cluster, its counters continuing.

The cluster is the test's own: free ports, a temporary folder, ``ray start --block`` in a
process group of its own, stopped by its process ids. It never uses the default port
6379 or ``/tmp/ray`` and never runs ``ray stop`` (which would stop every Ray of the
machine). The test process itself never connects to Ray: what the cluster holds (its
nodes, the env runners' nodes) is asked by a short probe in a subprocess. Needs the
``distributed`` extra (``make test-distributed``); skipped without Ray."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.rllib")

ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).with_name("ray")  # the ray command of this virtualenv
#: a few quick iterations with two env runners of one CPU each
SMOKE = ["stop.minutes=0", "resources.env_runners=2", "resources.envs_per_runner=2", "ppo.train_batch=400",
         "ppo.minibatch=200", "ppo.epochs=1", "model.hidden=[32]", "league.snapshot_every=1", "checkpoint_every=1",
         "keep_checkpoints=1", "eval.games=0"]
#: seconds that a node, a probe or one session of the recipe may take before the test fails
NODE_START_S, PROBE_S, SESSION_S = 120, 90, 300
#: what the probe prints: the alive nodes and every env runner actor the cluster has seen (from
#: the GCS's actor table, which keeps dead actors too; Ray's state API would need the dashboard)
PROBE = """
import json, sys
import ray
from ray._private.state import actors
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
runners = [{"node": a["Address"]["NodeID"], "job": a["JobID"]} for a in actors().values()
           if "EnvRunner" in a["ActorClassName"]]
print("PROBE " + json.dumps({"nodes": nodes, "runners": runners}))
ray.shutdown()
"""


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that are free on this machine now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class LocalCluster:
    """A Ray head and a worker node on this machine, each ``ray start --block`` in a process
    group of its own, on free ports, with its logs and sessions under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        self.env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), RAY_USAGE_STATS_ENABLED="0",
                        PYTHONPATH=str(ROOT))
        self.port = free_ports(1)[0]
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen[bytes]] = []

    def _node_ports(self) -> list[str]:
        names = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                 "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"]
        return [item for name, port in zip(names, free_ports(len(names)), strict=True) for item in (name, str(port))]

    def _start_node(self, name: str, args: list[str]) -> None:
        """``ray start --block ARGS`` as node ``name``; returns once it says it has started."""
        log = self.folder / f"{name}.log"
        command = [str(RAY), "start", "--block", "--num-cpus", "1", "--temp-dir", str(self.folder / "ray"),
                   "--object-store-memory", str(100 * 2**20), "--min-worker-port", "0", "--max-worker-port", "0",
                   "--disable-usage-stats", *self._node_ports(), *args]
        with open(log, "wb") as out:
            self.nodes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                               start_new_session=True))
        deadline = time.monotonic() + NODE_START_S
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if self.nodes[-1].poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the {name} node did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)

    def start(self) -> None:
        dashboard, client = free_ports(2)  # the head's services that run without the dashboard too
        self._start_node("head", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                                  "--dashboard-port", str(dashboard), "--ray-client-server-port", str(client)])
        self._start_node("worker", ["--address", self.address])

    def probe(self) -> dict[str, Any]:
        """The cluster's alive nodes and the node and job of every env runner it has seen."""
        done = subprocess.run([sys.executable, "-c", PROBE, self.address], env=self.env, capture_output=True,
                              text=True, timeout=PROBE_S, cwd=self.folder)
        lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
        assert done.returncode == 0 and lines, f"the probe failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return dict(json.loads(lines[-1][len("PROBE "):]))

    def stop(self) -> list[int]:
        """SIGTERM to each node's ``ray start`` (it ends its node's processes), then SIGKILL
        to what is left of the process groups this cluster started; nothing else. Returns the
        ids of the processes still left in those groups after 10 s (none, if all went well)."""
        for node in reversed(self.nodes):
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        for node in reversed(self.nodes):
            try:
                node.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        for node in self.nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, signal.SIGKILL)  # the group is the node's own (start_new_session)
        deadline = time.monotonic() + 10
        while (left := self.processes_left()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def processes_left(self) -> list[int]:
        """Ids of processes still in this cluster's process groups."""
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getpgid(int(entry.name)) in {node.pid for node in self.nodes}:
                        left.append(int(entry.name))
                except ProcessLookupError:
                    pass
        return left


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    # a short folder: Ray's socket paths under it must stay below the 107 characters of AF_UNIX
    folder = Path(tempfile.mkdtemp(prefix="krc-", dir="/tmp"))
    made = LocalCluster(folder)
    try:
        made.start()
        yield made
    finally:
        # the logs stay where processes are left; otherwise nothing is
        if not made.stop():
            subprocess.run(["rm", "-rf", str(folder)], check=False)


def recipe(cluster: LocalCluster, args: list[str], settings: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m training.rllib ARGS --set SETTING... --address`` the cluster, its output into ``log``."""
    sets = [item for setting in settings for item in ("--set", setting)]
    command = [sys.executable, "-m", "training.rllib", *args, *sets, "--address", cluster.address]
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=cluster.env, cwd=ROOT)


def wait(process: subprocess.Popen[bytes], log: Path, seconds: float) -> int:
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the recipe ran over {seconds} s:\n{log.read_text(errors='replace')[-4000:]}") from None


def rows(run: Path) -> list[dict[str, str]]:
    with open(run / "progress.csv", newline="") as f:
        return list(csv.DictReader(f))


def checkpoint_iteration(run: Path) -> int:
    """The iteration of the newest checkpoint (``checkpoints/latest.json``; 0 before the first)."""
    try:
        return int(json.loads((run / "checkpoints" / "latest.json").read_text())["iteration"])
    except (OSError, ValueError, KeyError):
        return 0


def runner_nodes(seen: dict[str, Any], job: str) -> list[str]:
    return sorted(r["node"] for r in seen["runners"] if r["job"] == job)


@pytest.mark.slow
def test_on_a_two_node_cluster_the_recipe_samples_on_both_nodes_and_resumes_after_sigterm(cluster, tmp_path):
    run = tmp_path / "run"

    # a session stopped with SIGTERM once it has written a checkpoint: it writes one more and exits 130
    first_log = tmp_path / "first.log"
    first = recipe(cluster, ["--config", "configs/rllib/rllib_2p.yaml", "--out", str(run)],
                   [*SMOKE, "stop.iterations=50"], first_log)
    deadline = time.monotonic() + SESSION_S
    while checkpoint_iteration(run) < 1:
        assert first.poll() is None, f"the recipe ended early:\n{first_log.read_text(errors='replace')[-4000:]}"
        assert time.monotonic() < deadline, f"no checkpoint in {SESSION_S} s:\n{first_log.read_text()[-4000:]}"
        time.sleep(0.5)
    first.send_signal(signal.SIGTERM)
    assert wait(first, first_log, 60) == 130, first_log.read_text(errors="replace")[-4000:]
    output = first_log.read_text(errors="replace")
    stopped_at = checkpoint_iteration(run)
    assert f"interrupted at iteration {stopped_at}: checkpoint" in output, output[-4000:]
    assert (run / "checkpoints" / f"iter_{stopped_at:05d}").is_dir()
    before = rows(run)
    assert [int(r["iteration"]) for r in before] == list(range(1, len(before) + 1))

    seen = cluster.probe()
    nodes = seen["nodes"]
    assert len(nodes) == 2, f"a head and a worker node, got {nodes}"
    jobs = sorted({r["job"] for r in seen["runners"]})
    assert len(jobs) == 1, f"one session's env runners, got {seen['runners']}"
    assert runner_nodes(seen, jobs[0]) == nodes, "one env runner on the head node and one on the worker node"

    # the same run goes on from that checkpoint on the same cluster, its counters continuing
    second_log = tmp_path / "second.log"
    second = recipe(cluster, ["--resume", str(run)], [f"stop.iterations={stopped_at + 1}"], second_log)
    assert wait(second, second_log, SESSION_S) == 0, second_log.read_text(errors="replace")[-4000:]
    output = second_log.read_text(errors="replace")
    restored = run / "checkpoints" / f"iter_{stopped_at:05d}"
    assert f"resumed from {restored} (iteration {stopped_at})" in output, output[-4000:]
    after = rows(run)[len(before):]
    assert [int(r["iteration"]) for r in after] == [stopped_at + 1]
    # the step counters go on from the checkpoint's (one more train batch of 400)
    assert int(after[0]["env_steps"]) >= int(before[-1]["env_steps"]) + 400
    assert int(after[0]["learner_steps"]) > int(before[-1]["learner_steps"])
    assert checkpoint_iteration(run) == stopped_at + 1 and (run / "checkpoints" / "final").is_dir()
    assert len((run / "command.txt").read_text().splitlines()) == 2

    seen = cluster.probe()
    resumed = [job for job in sorted({r["job"] for r in seen["runners"]}) if job not in jobs]
    assert len(resumed) == 1 and runner_nodes(seen, resumed[0]) == nodes, seen["runners"]

    assert cluster.stop() == [], "stopping the cluster ends every process it started"
