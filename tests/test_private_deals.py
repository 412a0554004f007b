"""Benchmark deals an agent cannot rebuild: a ``py:`` agent's seeds are keyed with a secret
of the run (it cannot match them against the seeds of the public deals), the package's bots
keep their seeds (their results do not change), and ``--private-deals`` deals from the
operating system's randomness behind a commitment that the scorecard's revealed seed opens."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from benchmark_helpers import tiny_protocol

from keltis_env.benchmark import score
from keltis_env.cli import main
from keltis_env.evaluation.play import deal_commitment, deal_seeds, derive_seed, keyed_seed, make_tasks

#: a py: agent that writes down every seed it is given (what a cheating agent would match)
SPY = '''
from pathlib import Path

import numpy as np

LOG = Path(__file__).with_suffix(".seeds")


class SeedSpy:
    def __init__(self, seed=None):
        self.reset(seed)

    def reset(self, seed):
        with LOG.open("a") as f:
            f.write(f"{seed}\\n")

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])
'''


@pytest.fixture
def spy(tmp_path: Path) -> tuple[str, Path]:
    code = tmp_path / "spy.py"
    code.write_text(SPY)
    return f"py:{code}:SeedSpy", code.with_suffix(".seeds")


def _public_seeds(seed: int, deals: int, players: int) -> set[int]:
    """Every seed an agent could compute from public facts: bots' and deals'."""
    bots = {derive_seed(seed, "bot", d, r, i) for d in range(deals) for r in range(players) for i in range(players)}
    return bots | set(deal_seeds(seed, deals))


def test_package_bots_keep_their_seeds_and_py_agents_get_keyed_ones(spy: tuple[str, Path]) -> None:
    spec, _ = spy
    key = b"k" * 32
    plain = make_tasks([spec, "heuristic"], 3, 11, "dice", {}, None)
    keyed = make_tasks([spec, "heuristic"], 3, 11, "dice", {}, None, agent_key=key)
    for a, b in zip(plain, keyed, strict=True):
        assert (a.seed, a.seats) == (b.seed, b.seats)  # the same deals and seating
        assert b.bot_seeds[1] == a.bot_seeds[1] == derive_seed(11, "bot", a.deal, a.rotation, 1)
        assert b.bot_seeds[0] == keyed_seed(key, 11, "bot", a.deal, a.rotation, 0) != a.bot_seeds[0]
    assert {t.bot_seeds[0] for t in keyed}.isdisjoint(_public_seeds(11, 3, 2))


def test_ladder_py_agent_cannot_rebuild_its_deals_from_its_seeds(tmp_path: Path, spy: tuple[str, Path]) -> None:
    spec, log = spy
    folder = tiny_protocol(tmp_path / "p", deals=3)
    card = score(spec, "dice-2p", rungs=["random"], protocol=folder, workers=1, out=tmp_path / "run", progress=False)
    seen = [int(line) for line in log.read_text().split() if line not in ("None", "0")]  # 0: when made
    assert len(seen) >= 6  # one reset per game at least
    assert set(seen).isdisjoint(_public_seeds(7, 3, 2)), "a seed matched a public deal's"
    # reproducible from the run's seed and the key the scorecard reveals
    assert card.agent_seed_key is not None
    key = bytes.fromhex(card.agent_seed_key)
    expected = {keyed_seed(key, 7, "bot", d, r, 0) for d in range(3) for r in range(2)}
    assert set(seen) <= expected
    assert card.to_dict()["agent_seed_key"] == card.agent_seed_key
    # a resumed run keeps its key: the finished games are its own
    again = score(spec, "dice-2p", rungs=["random"], protocol=folder, workers=1, out=tmp_path / "run", resume=True,
                  progress=False)
    assert again.agent_seed_key == card.agent_seed_key and again.rungs[0].games == 6


def test_package_bot_scorecard_has_no_key_and_is_unchanged(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=2)
    card = score("heuristic", "dice-2p", protocol=folder, workers=1, progress=False).to_dict()
    assert "agent_seed_key" not in card and "private_deals" not in card and card["seed"] == 7


def _ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, dict]:
    folder = tiny_protocol(tmp_path / "p", deals=3)
    out = tmp_path / "card.json"
    out.unlink(missing_ok=True)
    code = main(["ladder", "heuristic", "--track", "dice-2p", "--protocol", str(folder), "--workers", "1",
                 "--quiet", "--json", str(out), *extra])
    text = capsys.readouterr().out
    return code, text, json.loads(out.read_text()) if out.is_file() else {}


def test_ladder_private_deals_print_a_commitment_first_and_reveal_the_seed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, card = _ladder(tmp_path, capsys, "--private-deals")
    assert code == 0
    commitment = re.search(r"commitment (sha256:[0-9a-f]{64})", out)
    assert commitment is not None and out.index("commitment") < out.index("rating:")
    private = card["private_deals"]
    assert private["commitment"] == commitment.group(1) == deal_commitment(private["seed"], 3)
    assert private["deal_seeds"] == deal_seeds(private["seed"], 3)
    assert card["seed"] == private["seed"] and set(private["deal_seeds"]).isdisjoint(deal_seeds(7, 3))
    assert "private deals, now revealed: seed" in out and "--private-deals" in card["command"]
    *_, card2 = _ladder(tmp_path, capsys, "--private-deals")
    assert card2["private_deals"]["seed"] != private["seed"]  # drawn anew for each run


def test_private_ladder_resumes_with_its_own_deals(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=2)
    run = tmp_path / "run"
    first = score("heuristic", "dice-2p", protocol=folder, workers=1, out=run, private_deals=True, progress=False)
    (run / "random.jsonl").write_text("")  # as if stopped before that rung
    announced: list[dict] = []
    again = score("heuristic", "dice-2p", protocol=folder, workers=1, out=run, resume=True, progress=False,
                  started=announced.append)
    assert again.private_deals == first.private_deals
    assert [(a["deals"], a["games"], a["commitment"]) for a in announced] == [
        (2, 4, first.private_deals["commitment"])]  # the games still to play: the random rung's


def test_evaluate_private_deals_commitment_opens_with_the_revealed_seed(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "random", "random", "--games", "6", "--private-deals", "--workers", "1",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    commitment = re.search(r"commitment (sha256:[0-9a-f]{64})", out)
    revealed = re.search(r"private deals revealed: seed (\d+)", out)
    assert commitment and revealed and out.index("commitment") < out.index("revealed")
    assert deal_commitment(int(revealed.group(1)), 3) == commitment.group(1)


def test_evaluate_private_deals_with_a_seed_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "random", "random", "--seed", "3", "--private-deals"]) == 2
    assert "--private-deals draws the seed of the deals; leave out --seed" in capsys.readouterr().err


def test_evaluate_private_deals_resume_with_their_own_seed(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    common = ["evaluate", "random", "random", "--games", "4", "--private-deals", "--workers", "1", "--quiet"]
    assert main([*common, "--out", str(run)]) == 0
    first = re.search(r"commitment (sha256:[0-9a-f]{64})", capsys.readouterr().out)
    assert main([*common, "--resume", str(run)]) == 0
    again = capsys.readouterr().out
    assert first is not None and f"commitment {first.group(1)}" in again
