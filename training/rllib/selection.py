"""The RLlib trainer's policy files and its choice of the best checkpoint.

:func:`export_policy` writes ``main``'s weights as a policy file (``ppo:PATH`` plays it): a
MaskablePPO zip with the project's metadata, the module's ``pi`` as SB3's actor
(``mlp_extractor.policy_net`` then ``action_net``) and its ``vf`` as SB3's critic, the
relabellings it plays averaged over (``model.symmetry``, or the warm start's) and the reward its
value head learned (``env.reward``). The warm start's sharpening stays in the logits, as the
module samples them.

:class:`Selection` runs the SB3 trainer's periodic evaluations (``eval.every`` learner steps of
``main``; ``eval.select_games`` games against each of ``eval.opponents`` on the selection
deals, seeds ``seed * 1000 + i``, which the final evaluation does not play) on the policy file
of the moment: every result goes to ``eval.csv``, and the best policy against ``eval.best_by``
(the last opponent when empty; ties go to the later) to ``checkpoints/best.zip``, with
``checkpoints/best.json`` saying when. The start competes too (a warm start included), and so
does the end of the run. The run's ``policy.zip`` is then the best one, and the final evaluation
plays it; ``final_policy.zip`` holds the weights at the end of the run (what the learning-budget
track scores).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.core.output_files import atomic_path, atomic_write_text

from ..common.files import EVAL_FIELDS, append_csv, copy_file
from .config import RLlibConfig

MAIN = "main"


def sb3_state(weights: dict[str, Any]) -> dict[str, np.ndarray]:
    """The module's weights (``pi.<2i>.weight`` ..., ``vf.*``) under SB3's MlpPolicy names."""
    out: dict[str, np.ndarray] = {}
    for head, hidden, last in (("pi", "mlp_extractor.policy_net", "action_net"),
                               ("vf", "mlp_extractor.value_net", "value_net")):
        layers = sorted({int(k.split(".")[1]) for k in weights if k.startswith(head + ".")})
        for n, index in enumerate(layers):
            name = last if n == len(layers) - 1 else f"{hidden}.{index}"
            for kind in ("weight", "bias"):
                value = weights[f"{head}.{index}.{kind}"]
                out[f"{name}.{kind}"] = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    return out


def export_policy(weights: dict[str, Any], config: RLlibConfig, path: Path) -> None:
    """Write ``weights`` (``main``'s) as a policy file at ``path`` (atomically)."""
    import torch
    from sb3_contrib import MaskablePPO

    from keltis_env.envs.learner import KeltisLearnerEnv
    from keltis_env.policy import write_policy_info

    from .warm_start import play_symmetry

    env = KeltisLearnerEnv(num_players=config.env.num_players, opponents=["random"], reward=config.env.reward,
                           game=config.env.game, **dict(config.env.options))
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.model.activation]
    hidden = list(config.model.hidden)
    model = MaskablePPO("MlpPolicy", env, device="cpu", verbose=0, policy_kwargs={
        "net_arch": {"pi": hidden, "vf": hidden}, "activation_fn": activation})
    state = model.policy.state_dict()
    new = sb3_state(weights)
    missing = sorted(set(new) ^ {k for k in state if k.startswith(("mlp_extractor.", "action_net", "value_net"))})
    if missing:
        raise ValueError(f"the module's weights do not make SB3's MlpPolicy {hidden}: {', '.join(missing)}")
    model.policy.load_state_dict({**state, **{k: torch.as_tensor(v) for k, v in new.items()}})
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        model.save(tmp)
        write_policy_info(tmp, config.env.game, config.env.num_players, (), value_reward=config.env.reward,
                          symmetry=play_symmetry(config))


def main_weights(algo: Any) -> dict[str, Any]:
    return dict(algo.learner_group.get_weights(module_ids=[MAIN])[MAIN])


class Selection:
    """The periodic evaluations of a run in ``run_dir`` (see the module doc)."""

    def __init__(self, config: RLlibConfig, run_dir: Path, progress: bool) -> None:
        self.config, self.run_dir, self.progress = config, run_dir, progress
        self.checkpoints = run_dir / "checkpoints"
        self.best_file = self.checkpoints / "best.json"
        done = self._evaluated()
        self.last = max(done) if done else -1  # main's steps at the newest evaluation
        every = config.eval.every
        self.next = (self.last // every + 1) * every if every and self.last >= 0 else 0

    @property
    def on(self) -> bool:
        return self.config.eval.every > 0

    def _evaluated(self) -> list[int]:
        path = self.run_dir / "eval.csv"
        if not path.is_file():
            return []
        with open(path, newline="") as f:
            return [int(float(row["timesteps"])) for row in csv.DictReader(f)]

    def due(self, steps: int) -> bool:
        return self.on and steps >= self.next and steps > self.last

    def evaluate(self, algo: Any, steps: int, seconds: float) -> None:
        """Evaluate ``main`` now (at ``steps`` learner steps); keep it if it is the best."""
        from keltis_env.evaluation import evaluate

        cfg = self.config.eval
        current = self.checkpoints / "current.zip"
        export_policy(main_weights(algo), self.config, current)
        rows, rates = [], {}
        for i, opponent in enumerate(cfg.opponents):
            specs = [f"ppo:{current}"] + [opponent] * (self.config.env.num_players - 1)
            result = evaluate(specs, games=cfg.select_games, seed=self.config.seed * 1000 + i, workers=cfg.workers,
                              game=self.config.env.game, progress=False, options=dict(self.config.env.options))
            a = result.agents[0]
            others = [x.mean_score for x in result.agents[1:]]
            rates[opponent] = a.win_rate
            rows.append({"timesteps": steps, "learning_s": round(seconds, 1), "opponent": opponent, "games": a.games,
                         "win_rate": a.win_rate, "ci_low": a.win_rate_ci[0], "ci_high": a.win_rate_ci[1],
                         "mean_score": a.mean_score, "opponent_mean_score": float(np.mean(others)),
                         "mean_turns": result.mean_turns, "truncation_rate": result.truncation_rate})
        key = cfg.best_by or cfg.opponents[-1]
        best = json.loads(self.best_file.read_text()) if self.best_file.is_file() else None
        if best is None or best.get("opponent") != key or rates[key] >= best["win_rate"]:
            copy_file(current, self.checkpoints / "best.zip")
            atomic_write_text(self.best_file, json.dumps({"timesteps": steps, "opponent": key,
                                                          "win_rate": rates[key]}) + "\n")
        current.unlink()
        append_csv(self.run_dir / "eval.csv", EVAL_FIELDS, rows)
        self.last = steps
        every = cfg.every
        self.next = (steps // every + 1) * every
        if self.progress:
            said = ", ".join(f"vs {o} {r:.1%}" for o, r in rates.items())
            print(f"selection at {steps:,} learner steps ({cfg.select_games} games each): {said}", flush=True)

    def policy(self, algo: Any) -> Path:
        """The run's policy files: ``final_policy.zip``, ``main`` now (the end of the run), and
        ``policy.zip``, the best checkpoint where the run has one, else the final one; returns
        the latter."""
        final, out = self.run_dir / "final_policy.zip", self.run_dir / "policy.zip"
        export_policy(main_weights(algo), self.config, final)
        best = self.checkpoints / "best.zip"
        copy_file(best if best.is_file() else final, out)
        return out


__all__ = ["EVAL_FIELDS", "Selection", "export_policy", "sb3_state"]
