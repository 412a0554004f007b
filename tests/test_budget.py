"""The learning-budget track (``python -m training.budget``): seeds trained for exactly the
budget, each policy scored with its interval, the spread across seeds, resuming, and the
errors of bad arguments. Scored on a protocol of two deals per rung (``--protocol``), so
that a run takes seconds."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import signal
import statistics
from pathlib import Path

import pytest
from benchmark_helpers import budget_protocol

from keltis_env.core.recorded_paths import recorded_path
from training.budget.__main__ import main
from training.budget.runs import read_training_config, sb3_config, sb3_overrides, train_seed
from training.budget.track import BudgetRequest, run_budget
from training.common.config import ConfigError

SMOKE = "configs/train/smoke.yaml"
DECISIONS = 1000  # smoke.yaml's rollouts are 256 decisions: 1,024 are used


@pytest.fixture(autouse=True)
def keep_signal_handlers():
    """The command installs Ctrl-C and SIGTERM handlers: give the test process its own back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def request(tmp: Path, **changes) -> BudgetRequest:
    protocol = budget_protocol(tmp / "protocol")  # the shipped protocol's shape, two deals per rung
    fields = dict(config=SMOKE, decisions=DECISIONS, seeds=2, out=tmp / "out", runs=tmp / "runs", workers=1,
                  protocol=protocol, overrides=("eval.games=2",), progress=False)
    fields.update(changes)
    return BudgetRequest(**fields)


@pytest.fixture(scope="module")
def budget(tmp_path_factory):
    """One budget of two seeds on the smoke config: (request, result, its file)."""
    tmp = tmp_path_factory.mktemp("budget")
    req = request(tmp)
    data, path = run_budget(req, "python -m training.budget (test)")
    return req, data, path


def test_two_seeds_give_each_seeds_interval_and_the_spread(budget):
    _, data, path = budget
    assert json.loads(path.read_text()) == data and path.name == "smoke-1k.json"
    assert (data["kind"], data["schema"]) == ("keltis-budget-result", 2)
    assert data["config"] == recorded_path(SMOKE) and data["config_name"] == "smoke" and "recipe" not in data
    assert data["track"] == "keltis-2p" and data["protocol"] == "tiny" and data["algorithm"] == "sb3-ppo"
    assert data["budget_decisions"] == DECISIONS and [s["seed"] for s in data["seeds"]] == [0, 1]
    assert data["rungs"] == ["heuristic", "planner"]
    for run, seed in zip(data["seeds"], [0, 1], strict=True):
        assert run["seed"] == seed and run["teacher"] is None and run["teacher_decisions"] == 0  # no teacher
        assert DECISIONS <= run["decisions"] < DECISIONS + 256, "the budget, to the next whole rollout"
        assert run["agent"].startswith("ppo:") and run["agent"].endswith("final_policy.zip")
        card = run["scorecard"]
        assert card["agent"] == run["agent"] and card["protocol"] == "tiny" and not card["partial"]
        assert run["policy_sha256"] == card["agent_sha256"] == hashlib.sha256(
            Path(run["agent"][len("ppo:"):]).read_bytes()).hexdigest()
        for rung in data["rungs"]:
            s = run["scores"][rung]
            assert s["games"] == 4
            assert s["interval"][0] <= s["win_rate"] <= s["interval"][1]
            assert s["interval"][1] - s["interval"][0] > 0.3, "four games say little, and the interval shows it"
        # the run's periodic evaluations (smoke.yaml: every 512 decisions), made more frequent for the curve
        points = run["learning_curve"]["points"]["random"]
        assert [p[0] for p in points] == [256, 512, 768, 1024]
    for rung in data["rungs"]:
        rates = [run["scores"][rung]["win_rate"] for run in data["seeds"]]
        assert rates == [run["scorecard"]["rungs"][data["rungs"].index(rung)]["win_rate"] for run in data["seeds"]]
        spread = data["spread"][rung]
        assert spread["mean"] == pytest.approx(statistics.fmean(rates))
        assert spread["std"] == pytest.approx(statistics.stdev(rates))
        assert (spread["min"], spread["max"]) == (min(rates), max(rates))
    assert (path.parent / data["curves"]).stat().st_size > 1000
    # the seeds' runs are different runs: their own seeds, folders and weights
    folders = [Path(run["agent"][len("ppo:"):]).parent for run in data["seeds"]]
    assert folders[0] != folders[1]
    assert [json.loads((f / "run.json").read_text())["seed"] for f in folders] == [0, 1]
    assert (folders[0] / "final_policy.zip").read_bytes() != (folders[1] / "final_policy.zip").read_bytes()


def test_the_markdown_shows_each_seed_and_the_spread(budget):
    from training.budget.results import markdown

    text = markdown(budget[1])
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 2 + 1  # header, a row per seed, the spread
    assert rows[1].startswith("| 0 | 1,024 |") and rows[3].startswith("| mean ± std")
    first = budget[1]["seeds"][0]["scores"]["heuristic"]
    assert f"{first['win_rate']:.1%} [{first['interval'][0]:.1%}, {first['interval'][1]:.1%}]" in rows[1]


def test_resume_keeps_finished_seeds_and_their_scores(budget, capsys):
    req, data, path = budget
    runs = Path(req.runs)
    kept = {p: p.stat().st_mtime_ns for p in runs.rglob("*") if p.is_file()}
    code = main(["--config", SMOKE, "--decisions", str(DECISIONS), "--seeds", "2", "--resume", "--workers", "1",
                 "--out", str(req.out), "--runs", str(runs), "--protocol", str(req.protocol),
                 "--set", "eval.games=2", "--no-progress"])
    assert code == 0
    assert {p: p.stat().st_mtime_ns for p in runs.rglob("*") if p.is_file() and p.name != "budget.json"} == \
        {p: t for p, t in kept.items() if p.name != "budget.json"}, "no run trained or scored again"
    again = json.loads(path.read_text())
    assert again["seeds"] == data["seeds"] and again["spread"] == data["spread"]
    # the command that reproduces the result, without where the runs are and how many workers play, its
    # paths relative to the repository
    assert again["command"] == (f"python -m training.budget --config {recorded_path(SMOKE)} --decisions {DECISIONS} "
                                f"--seeds 2 --protocol {recorded_path(req.protocol)} --set eval.games=2 "
                                f"--out {recorded_path(req.out)}")
    assert not str(again["command"]).count(" /")
    assert "mean ± std" in capsys.readouterr().out


def test_an_interrupted_seed_goes_on_from_its_checkpoint(tmp_path, monkeypatch):
    from training.sb3.trainer import Trainer

    req = request(tmp_path, seeds=1)
    from training.budget.runs import read_training_config

    trained = read_training_config(SMOKE, req.overrides)
    evaluate = Trainer.evaluate_now

    def stop_after_the_second_evaluation(self):
        results = evaluate(self)
        if self.model.num_timesteps >= 512:
            raise KeyboardInterrupt  # as Ctrl-C there: the trainer saves a checkpoint and stops
        return results

    monkeypatch.setattr(Trainer, "evaluate_now", stop_after_the_second_evaluation)
    with pytest.raises(KeyboardInterrupt):
        train_seed(trained, DECISIONS, 0, tmp_path / "runs", list(req.overrides), "first", 4, progress=False)
    monkeypatch.undo()
    seed = tmp_path / "runs" / "seed-0"
    assert not (seed / "trained.json").exists()
    [run_dir] = [p for p in seed.iterdir() if p.is_dir()]
    state = json.loads((run_dir / "checkpoints" / "state.json").read_text())
    assert state["timesteps"] == 512
    run = train_seed(trained, DECISIONS, 0, tmp_path / "runs", list(req.overrides), "second", 4, progress=False)
    assert [p for p in seed.iterdir() if p.is_dir()] == [run_dir], "the same run, resumed"
    assert run.decisions_used == 1024 and (seed / "trained.json").is_file()
    assert "(resume)\nsecond" in (run_dir / "command.txt").read_text()
    assert [p[0] for p in run.curve["points"]["random"]] == [256, 512, 768, 1024]


def test_an_evaluation_stopped_by_ctrl_c_is_played_when_the_run_resumes(tmp_path, monkeypatch):
    """Ctrl-C in the middle of the evaluation at 512 decisions: the checkpoint is at 512, and
    the resumed run plays that evaluation before it learns on (the curve keeps its point)."""
    from training.sb3.trainer import Trainer

    req = request(tmp_path, seeds=1)
    from training.budget.runs import read_training_config

    trained = read_training_config(SMOKE, req.overrides)
    evaluate = Trainer.evaluate_now

    def interrupted_at_512(self):
        if self.model.num_timesteps >= 512:
            raise KeyboardInterrupt  # as Ctrl-C while the evaluation games are played
        return evaluate(self)

    monkeypatch.setattr(Trainer, "evaluate_now", interrupted_at_512)
    with pytest.raises(KeyboardInterrupt):
        train_seed(trained, DECISIONS, 0, tmp_path / "runs", list(req.overrides), "first", 4, progress=False)
    monkeypatch.undo()
    [run_dir] = [p for p in (tmp_path / "runs" / "seed-0").iterdir() if p.is_dir()]
    state = json.loads((run_dir / "checkpoints" / "state.json").read_text())
    assert state["timesteps"] == 512 and state["last_eval"] == 256
    run = train_seed(trained, DECISIONS, 0, tmp_path / "runs", list(req.overrides), "second", 4, progress=False)
    assert [p[0] for p in run.curve["points"]["random"]] == [256, 512, 768, 1024]


@pytest.mark.parametrize(("args", "message"), [
    (["--decisions", "0"], "--decisions must be a positive number of the learning policy's decisions, got 0"),
    (["--decisions", "-5"], "--decisions must be a positive number"),
    (["--decisions", "2.5"], "--decisions must be an integer, got '2.5'"),
    (["--decisions", "lots"], "--decisions must be an integer (e.g. 3000000, 3_000_000 or 3e6), got 'lots'"),
    (["--seeds", "0"], "--seeds must be from 1 to 100, got 0"),
    (["--seeds", "101"], "--seeds must be from 1 to 100, got 101"),
    (["--config", "configs/no_such.yaml"], "config file 'configs/no_such.yaml' not found"),
    (["--set", "ppo.n_steps=0"], "ppo.n_steps"),
    (["--workers", "0"], "--workers must be >= 1, got 0"),
])
def test_bad_arguments_are_refused_naming_what_is_allowed(tmp_path, capsys, args, message):
    base = {"--config": SMOKE, "--decisions": "1000", "--seeds": "2"}
    argv = []
    for key, value in base.items():
        if key not in args:
            argv += [key, value]
    argv += [*args, "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "runs")]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [], "a refused budget writes nothing"


def test_a_runs_folder_is_kept_for_its_own_budget(budget, capsys):
    req = budget[0]
    common = ["--config", SMOKE, "--seeds", "2", "--out", str(req.out), "--runs", str(req.runs), "--protocol",
              str(req.protocol), "--set", "eval.games=2"]
    assert main([*common, "--decisions", str(DECISIONS)]) == 2
    assert "already holds the runs of a budget: pass --resume" in capsys.readouterr().err
    assert main([*common, "--decisions", "2000", "--resume"]) == 2
    assert "holds the runs of another budget (decisions: 1000 there, 2000 now)" in capsys.readouterr().err


def test_an_rllib_config_needs_ray(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    try:
        import ray  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("Ray is installed here (tests/test_budget_rllib.py runs the RLlib trainer)")
    assert main(["--config", "configs/rllib/rllib_2p.yaml", "--decisions", "1000", "--out", str(tmp_path / "o")]) == 2
    assert "is an RLlib config, which needs Ray RLlib" in capsys.readouterr().err


def test_the_budget_label_names_the_file():
    from training.budget.results import budget_label

    assert [budget_label(n) for n in (2_000_000, 300_000, 1000, 2500, 1_500_000)] == ["2M", "300k", "1k", "2500",
                                                                                      "1500k"]


def test_every_shipped_sb3_config_resolves_under_the_budget(tmp_path):
    """The budget drops a config's final evaluation; a config that plays its warm start there
    (configs/train/default.yaml) must still resolve, without it."""
    for name in ("default", "scratch"):
        trained = read_training_config(f"configs/train/{name}.yaml")
        config = sb3_config(trained.path, sb3_overrides(trained, 100_000, 1, tmp_path, [], 3))
        assert config.eval.final_games == 0 and not config.eval.warm_start
        assert config.total_timesteps == 100_000 and config.seed == 1


def test_an_rllib_config_is_budgeted_by_its_learner_steps():
    """An RLlib config is budgeted by the track as an RLlib run, its budget the RLlib run's
    learner steps, with no time limit and no final evaluation; its selection evaluations make
    at least the curve's points."""
    from training.budget.runs import rllib_config

    no_file = ["warm_start.file=", "warm_start.anchor=0", "eval.warm_start=false"]  # its warm start: made by a run
    trained = read_training_config("configs/rllib/rllib_warm_2p.yaml", no_file)
    assert trained.algorithm == "rllib" and trained.name == "rllib_warm_2p"
    config = rllib_config(trained, 300_000, 2, no_file, 10)
    assert (config.stop.learner_steps, config.stop.minutes, config.stop.env_steps) == (300_000, 0, 0)
    assert config.seed == 2 and config.eval.games == 0 and not config.eval.warm_start
    assert config.eval.every == 30_000  # 250,000 in the file: ten points of the curve need more


def test_a_config_that_starts_from_a_policy_file_names_it_as_its_warm_start():
    """The file was made before the runs: the result names it (and the leaderboard says so)
    rather than counting its decisions as the config's."""
    start = "policies/keltis_2p_scratch.zip"
    assert read_training_config("configs/rllib/rllib_warm_2p.yaml", [f"warm_start.file={start}"]).warm_start == start
    assert read_training_config("configs/train/default.yaml").warm_start == ""
    data = json.loads(Path("benchmarks/results/budget/rllib_warm_2p-1M.json").read_text())
    assert data["warm_start"]["file"] == "runs/warm_start_2p.zip" and len(data["warm_start"]["sha256"]) == 64
    board = Path("LEADERBOARD.md").read_text()
    assert "| `configs/rllib/rllib_warm_2p.yaml` | 3 | – (a warm start: `runs/warm_start_2p.zip`) |" in board
    assert "- warm start: the policy file `runs/warm_start_2p.zip` (SHA-256 3705db699104…)" in board


def test_a_runs_folder_of_the_version_that_called_the_config_a_recipe_resumes(tmp_path):
    from training.budget.track import check_runs_folder

    wanted = {"config_sha256": "abc", "algorithm": "sb3", "decisions": 1000}
    (tmp_path / "budget.json").write_text(json.dumps({"recipe_sha256": "abc", "algorithm": "sb3", "decisions": 1000}))
    check_runs_folder(tmp_path, wanted, resume=True)
    with pytest.raises(ConfigError, match=r"config_sha256: 'abc' there, 'abd' now"):
        check_runs_folder(tmp_path, {**wanted, "config_sha256": "abd"}, resume=True)


def test_the_option_of_an_earlier_version_is_refused_naming_the_one_it_is_now(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--recipe", SMOKE, "--decisions", "1000"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith("error: --recipe is now --config (a training config, or a recipe "
                                                    "of configs/recipes/ with a train stage)")


def test_a_zero_config_is_budgeted_by_its_self_play_decisions(tmp_path):
    """A config of training.zero runs as an expert-iteration run (tiny.yaml: about 500 decisions a
    generation, evaluations every 300): stopped by its self-play
    decisions alone (whole generations), no time limit, its selection evaluations made often
    enough for the curve; the network at the end of the budget is scored, and a finished seed
    is kept by --resume."""
    req = request(tmp_path, config="configs/zero/tiny.yaml", decisions=700, seeds=1, overrides=(), curve_points=3)
    data, path = run_budget(req, "python -m training.budget (test)")
    assert data["algorithm"] == "gumbel-expert-iteration" and data["config_name"] == "zero_tiny"
    assert path.name == "zero_tiny-700.json" and "warm_start" not in data
    [run] = data["seeds"]
    assert run["teacher"] is None and run["teacher_decisions"] == 0
    folder = tmp_path / "runs" / "seed-0" / "run"
    curve = [json.loads(line) for line in (folder / "curve.jsonl").read_text().splitlines()]
    assert run["decisions"] == curve[-1]["decisions"] >= 700 > curve[-2]["decisions"], "to the next whole generation"
    config = (folder / "config.yaml").read_text()
    assert "minutes: 0" in config and "decisions: 700" in config and "every: 234" in config
    assert run["agent"].startswith("ppo:") and run["agent"].endswith("seed-0/run/network.zip")
    assert run["policy_sha256"] == hashlib.sha256((folder / "network.zip").read_bytes()).hexdigest()
    points = run["learning_curve"]["points"]["random"]
    assert points[0][0] == 0 and points[-1][0] == run["decisions"] and len(points) >= 3
    assert run["learning_curve"]["source"] == "evals.jsonl: selection evaluations, 4 games per opponent"
    again, _ = run_budget(dataclasses.replace(req, resume=True), "python -m training.budget (test, resumed)")
    assert again["seeds"][0]["decisions"] == run["decisions"] and again["seeds"][0]["learning_curve"] == run[
        "learning_curve"]


def test_an_expert_iteration_config_of_training_exit_is_refused_naming_what_is_allowed(tmp_path, capsys):
    assert main(["--config", "configs/exit/exit_tiny.yaml", "--decisions", "1000", "--out", str(tmp_path / "o"),
                 "--runs", str(tmp_path / "r")]) == 2
    assert "is a config of training.exit" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
