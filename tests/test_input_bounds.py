"""Numbers and repeated keys from the user are checked where they are read: agent-spec
options, the commands' counts and durations, and training configs. A value that would hang
a command (a search budget of ``nan`` seconds), run away with memory (a task list of 10**20
games) or leave nothing to do (a negative search margin) is refused with a one-line message
naming the option and what is allowed; so is a key given twice, where the last one would
otherwise win silently. Commands that used to hang run in a subprocess with a timeout, so
that a regression fails instead of stalling the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from keltis_env.bots import make_bot, parse_spec
from keltis_env.evaluation import MAX_GAMES, EvaluationError, evaluate
from keltis_env.evaluation.play import make_tasks
from training.common.config import ConfigError, apply_override
from training.sb3.config import MAX_SEED, load_config

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "train" / "smoke.yaml"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A command of this checkout (``-m keltis_env ...``, ``-m training.bench ...``), with a timeout."""
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          check=False)


# ---------------------------------------------------------------------- agent specs
@pytest.mark.parametrize("spec", ["ismcts:seconds=nan", "ismcts:seconds=inf", "ismcts:prior=nan",
                                  "ismcts:win_bonus=nan", "ismcts:margin=-inf", "ismcts:seconds=1e999",
                                  "heuristic:win_value=nan"])
def test_agent_spec_non_finite_numbers_are_refused(spec: str) -> None:
    game = "dice" if "win_value" in spec else "keltis"
    key = spec.split(":")[1].split("=")[0]
    with pytest.raises(ValueError, match=rf"option {key}=\S+ in agent spec .* is not a finite number"):
        make_bot(spec, game=game)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ismcts:margin=-5", r"ismcts option margin must be a finite number >= 0, got -5"),
        ("ismcts:prior=-1", r"ismcts option prior must be a finite number >= 0, got -1"),
        ("ismcts:win_bonus=-0.5", r"ismcts option win_bonus must be a finite number >= 0"),
        ("ismcts:seconds=0", r"ismcts option seconds must be a finite number > 0 and <= 3600, got 0"),
        ("ismcts:seconds=5000", r"ismcts option seconds must be a finite number > 0 and <= 3600"),
        ("ismcts:iterations=99999999999999999999", r"ismcts option iterations must be an integer 0..10000000"),
        ("ismcts:iterations=-1", r"ismcts option iterations must be an integer 0..10000000"),
        ("ismcts:top_k=0", r"ismcts option top_k must be an integer >= 1"),
        ("ismcts:stage=0", r"ismcts option stage must be an integer >= 1"),
    ],
)
@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_agent_spec_out_of_range_search_options_are_refused(game: str, spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_bot(spec, game=game)


def test_agent_spec_duplicate_keys_are_refused() -> None:
    with pytest.raises(ValueError, match=r"gives option 'iterations' twice; give each option once"):
        parse_spec("ismcts:iterations=8,iterations=9")
    with pytest.raises(ValueError, match=r"gives option 'iterations' twice"):
        parse_spec("ismcts:iterations=8, iterations =8")
    with pytest.raises(ValueError, match=r"gives the file twice"):
        parse_spec("ppo:a.zip,path=b.zip")
    assert parse_spec("ismcts:iterations=8,depth=1") == ("ismcts", {"iterations": 8, "depth": 1})


def test_ismcts_seconds_nan_and_margin_below_zero_do_not_hang_an_evaluation() -> None:
    for spec in ("ismcts:seconds=nan", "ismcts:seconds=inf", "ismcts:margin=-5"):
        done = run("keltis_env", "evaluate", spec, "random", "--games", "2", "--workers", "1", "--quiet")
        assert done.returncode == 2, done.stderr
        assert spec.split(":")[1].split("=")[0] in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------------- commands
@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1", "1e999", "forever"])
def test_bench_seconds_that_never_end_are_refused_when_parsing(value: str) -> None:
    done = run("keltis_env", "bench", "--seconds", value, "--loops", "engine", "--players", "2")
    assert done.returncode == 2
    assert f"argument --seconds: must be a number of seconds > 0 and <= 3600, got '{value}'" in done.stderr


@pytest.mark.parametrize("value", ["0", "-3", "nan", "100000"])
def test_bench_repeats_out_of_range_are_refused_when_parsing(value: str) -> None:
    done = run("keltis_env", "bench", "--repeats", value, "--loops", "engine", "--players", "2")
    assert done.returncode == 2 and "argument --repeats: must be an integer from 1 to 1,000" in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_training_bench_seconds_that_never_end_are_refused_when_parsing(value: str) -> None:
    done = run("training.bench", "--config", str(SMOKE), "--seconds", value)
    assert done.returncode == 2
    assert "argument --seconds: must be a number of seconds > 0 and <= 86400" in done.stderr


def test_evaluate_games_beyond_the_bound_is_refused_before_any_task_is_made() -> None:
    done = run("keltis_env", "evaluate", "heuristic", "random", "--games", "99999999999999999999", timeout=30)
    assert done.returncode == 2
    assert "games must be at most 1,000,000, got 99999999999999999999" in done.stderr
    with pytest.raises(EvaluationError, match=r"games must be at most 1,000,000"):
        evaluate(["random", "random"], games=MAX_GAMES + 1, seed=0, workers=1, progress=False)
    with pytest.raises(EvaluationError, match=r"workers must be at most 256"):
        evaluate(["random", "random"], games=2, seed=0, workers=10**9, progress=False)


def test_evaluation_tasks_are_made_lazily_in_order() -> None:
    tasks = make_tasks(["a", "b", "c"], 10**12, 5, "keltis", {}, None)  # holds nothing per game
    assert len(tasks) == 3 * 10**12
    first = list(make_tasks(["a", "b", "c"], 2, 5, "keltis", {}, None))
    assert [(t.index, t.deal, t.rotation, t.seats) for t in first] == [
        (0, 0, 0, (0, 1, 2)), (1, 0, 1, (2, 0, 1)), (2, 0, 2, (1, 2, 0)),
        (3, 1, 0, (0, 1, 2)), (4, 1, 1, (2, 0, 1)), (5, 1, 2, (1, 2, 0)),
    ]
    assert tasks[4] == first[4] and tasks[-1].index == len(tasks) - 1
    with pytest.raises(IndexError):
        tasks[len(tasks)]


def test_evaluate_repeated_option_keys_are_refused() -> None:
    done = run("keltis_env", "evaluate", "heuristic", "random", "--games", "2", "--option", "tile_layout=random",
               "--option", "tile_layout=fixed")
    assert done.returncode == 2
    assert "--option tile_layout is given twice" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------------- training configs
@pytest.mark.parametrize("key", ["ppo.learning_rate", "ppo.ent_coef", "ppo.clip_range", "ppo.vf_coef", "ppo.gamma",
                                 "ppo.gae_lambda", "ppo.max_grad_norm", "fit.learning_rate",
                                 "pretrain.sharpen", "max_minutes", "pool.prioritize"])
@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf", "1e999"])
def test_config_non_finite_floats_are_refused(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{key} must be a finite number, got .* \(nan and infinite values"):
        load_config(SMOKE, [f"{key}={value}"])


def test_config_non_finite_pool_weights_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"pool.weights.random must be a finite number"):
        load_config(SMOKE, ["pool.weights={self: 1.0, random: .inf}"])


@pytest.mark.parametrize("seed", [2**32, 2**64, -1])
def test_config_seed_beyond_32_bits_is_refused_before_the_run_folder_is_made(tmp_path: Path, seed: int) -> None:
    runs = tmp_path / "runs"
    done = run("training.train", "--config", str(SMOKE), "--set", f"seed={seed}", "--set", f"runs_dir={runs}")
    assert done.returncode == 2 and "config error: seed must be" in done.stderr
    assert not runs.exists()
    assert load_config(SMOKE, [f"seed={MAX_SEED}"]).seed == 2**32 - 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("n_envs=100000000000", r"n_envs must be <= 4096"),
        ("workers=100000", r"workers must be <= 256"),
        ("eval.games=99999999999", r"eval.games must be <= 1000000"),
        ("record.games=99999999999", r"record.games must be <= 1000000"),
        ("ppo.n_steps=1000000000", r"ppo.n_steps must be <= 1000000"),
    ],
)
def test_config_runaway_counts_are_refused(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, [override])
    with pytest.raises(ConfigError, match=r"ppo.n_steps x n_envs \(100000 x 4096 = 409600000\) must be at most"):
        load_config(SMOKE, ["n_envs=4096", "ppo.n_steps=100000", "ppo.batch_size=64"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("record.teacher=ismcts:seconds=nan", r"record.teacher: .*option seconds=nan .* is not a finite number"),
        ("record.teacher=ismcts:margin=-5", r"record.teacher: agent spec 'ismcts:margin=-5': ismcts option "
                                              r"margin must be a finite number >= 0"),
        ("record.teacher=ismcts:iterations=8,iterations=9", r"record.teacher: .*gives option 'iterations' twice"),
        ("eval.opponents=[ismcts:seconds=inf]", r"eval.opponents: .*option seconds=inf .* is not a finite number"),
        ("eval.opponents=[heuristic:paths=0]", r"eval.opponents: agent spec 'heuristic:paths=0': heuristic option "
                                               r"paths must be an integer >= 1"),
        ("pool.weights={self: 1, 'ismcts:prior=-2': 1}", r"pool.weights: agent spec 'ismcts:prior=-2': ismcts option "
                                                         r"prior must be"),
    ],
)
def test_config_agent_specs_are_checked_like_the_bots_check_them(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, [override])


def test_config_yaml_duplicate_keys_are_refused_naming_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("name: dup\nppo:\n  learning_rate: 1.0e-4\n  learning_rate: 3.0e-4\n")
    with pytest.raises(ConfigError, match=r"key 'learning_rate' is given twice \(line 4\); give each key once"):
        load_config(path)
    path.write_text("name: a\nseed: 1\nname: b\n")
    with pytest.raises(ConfigError, match=r"key 'name' is given twice \(line 3\)"):
        load_config(path)
    data: dict[str, object] = {}
    with pytest.raises(ConfigError, match=r"override pool.weights: .*key 'self' is given twice"):
        apply_override(data, "pool.weights={self: 1, self: 2}")
    assert data == {}
    # a merge key may be overridden, as YAML intends
    path.write_text("name: m\nenv: &e {num_players: 2}\neval: {games: 20}\nppo: {n_steps: 64, batch_size: 64}\n"
                    "n_envs: 2\npool:\n  weights: {<<: {random: 1.0}, random: 2.0}\n")
    assert load_config(path).pool.weights == {"random": 2.0}


@pytest.mark.parametrize("text", ["", "\n\n", "   \n", "# only a comment\n", "---\n"])
def test_config_empty_file_is_refused_with_exit_status_2(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"config '.*empty.yaml' is empty \(no keys\)"):
        load_config(path)
    done = run("training.train", "--config", str(path), "--set", f"runs_dir={tmp_path / 'runs'}")
    assert done.returncode == 2 and "empty.yaml' is empty" in done.stderr
    assert not (tmp_path / "runs").exists()
    path.write_text("{}\n")  # every default, said explicitly
    assert load_config(path).name == "default"
