"""The collector's relabelled games (training's ``relabel``): the learner sees every game under
the relabelling drawn at its deal and its actions are mapped back, so the games themselves
are those of a collector without relabelling played with the mapped actions."""

from __future__ import annotations

import numpy as np
import pytest

from keltis_env.core.game import get_game
from training.sb3.collector import BatchedSelfPlayVecEnv


def _pair(workers: int, n: int = 4) -> tuple[BatchedSelfPlayVecEnv, BatchedSelfPlayVecEnv]:
    kwargs = {"workers": workers, "reward": "score", "turn_cap": "end", "game_options": {"max_turns": 40}}
    plain = BatchedSelfPlayVecEnv(n, ["random"], **kwargs)
    seen = BatchedSelfPlayVecEnv(n, ["random"], relabel="colours_affine", relabel_seed=5, **kwargs)
    return plain, seen


@pytest.mark.parametrize("workers", [0, 1])
def test_relabelled_games_are_the_plain_games_seen_through_each_games_relabelling(workers: int) -> None:
    plain, seen = _pair(workers)
    sym = seen.relabel
    try:
        plain.seed(3)
        seen.seed(3)
        o1, o2 = plain.reset(), seen.reset()
        rng = np.random.default_rng(0)
        ended = drawn = 0
        for step in range(120):
            which = seen._which.copy()
            drawn |= int((which != 0).any())
            assert np.array_equal(o2, sym.relabel(which, o1)[0]), step
            m1 = np.stack(plain.env_method("action_masks"))
            m2 = np.stack(seen.env_method("action_masks"))
            assert np.array_equal(m2, sym.relabel(which, o1, masks=m1)[1]), step
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in m1])
            # the learner, seeing the relabelled game, picks the relabelled action
            o1, r1, d1, i1 = plain.step(actions)
            o2, r2, d2, i2 = seen.step(sym.action_target[which, actions])
            assert np.array_equal(r1, r2) and np.array_equal(d1, d2), step
            for k in np.flatnonzero(d1):
                ended += 1
                t1, t2 = i1[k]["terminal_observation"], i2[k]["terminal_observation"]
                assert np.array_equal(t2, sym.relabel(which[k : k + 1], t1[None])[0][0]), step
        assert ended > 0 and drawn
    finally:
        plain.close()
        seen.close()


def test_each_deal_draws_a_relabelling_and_a_seed_repeats_them() -> None:
    runs = []
    for _ in range(2):
        _, seen = _pair(0, n=8)
        seen.seed(1)
        seen.reset()
        runs.append(seen._which.copy())
        seen.close()
    assert np.array_equal(runs[0], runs[1])
    assert len(set(runs[0].tolist())) > 1


def test_a_pipelined_part_is_relabelled_like_a_whole_step() -> None:
    plain, seen = _pair(1, n=4)
    sym = seen.relabel
    try:
        plain.seed(2)
        seen.seed(2)
        o1, o2 = plain.reset(), seen.reset()
        assert np.array_equal(o2, sym.relabel(seen._which, o1)[0])
        idx = seen.parts[0]
        which = seen._which[idx].copy()
        masks = np.stack(plain.env_method("action_masks"))[idx]
        actions = masks.argmax(1)
        plain.step_part_async(0, actions)
        seen.step_part_async(0, sym.action_target[which, actions])
        p1, p2 = plain.step_part_wait(0), seen.step_part_wait(0)
        which = seen._which[idx]
        assert np.array_equal(p2[0], sym.relabel(which, p1[0])[0])
        assert np.array_equal(p2[1], sym.relabel(which, p1[0], masks=p1[1])[1])
        assert np.array_equal(p1[2], p2[2]) and np.array_equal(p1[3], p2[3])
    finally:
        plain.close()
        seen.close()


def test_an_unknown_relabelling_is_refused_naming_the_games_ones() -> None:
    with pytest.raises(ValueError, match=r"relabel must be one of none, .*colours_affine.*got 'mirror'"):
        BatchedSelfPlayVecEnv(2, ["random"], workers=0, relabel="mirror")
    assert "colours_affine" in get_game("keltis").symmetries
