"""The same seed deals the same game on every path: the compiled deal kernels draw as the
Python engines draw (``random.Random``'s Mersenne Twister), and game ``g`` of a batch reset
with seed ``s`` is the Python engine's deal from ``s + g`` on the vector environment, SB3's
VecEnv, the training collector (both backends) and the learner view, for both games and
2-4 players."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("numba")

from keltis_env.compiled import core_module
from keltis_env.core import kernels as kern
from keltis_env.core.game import get_game
from keltis_env.envs.learner import KeltisLearnerEnv
from keltis_env.envs.vector import KeltisVectorEnv

GAMES = ("keltis", "dice")
PLAYERS = (2, 3, 4)
LAYOUT = {"keltis": "tile_layout", "dice": "bonus_layout"}


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31, 2**32 - 1, 2**32, 2**40 + 3, 2**63 - 1])
def test_the_kernels_generator_draws_what_pythons_random_draws(seed: int) -> None:
    mt = kern.mt_scratch()
    kern.mt_seed(mt, seed)
    rng = random.Random(seed)
    assert [int(kern.mt_next(mt)) for _ in range(700)] == [rng.getrandbits(32) for _ in range(700)]
    values = np.arange(110)
    listed = list(range(110))
    kern.mt_shuffle(values, 110, mt)
    rng.shuffle(listed)
    assert values.tolist() == listed
    assert [kern.mt_below(mt, n) for n in (2, 3, 4, 5, 1000)] == [rng.randrange(n) for n in (2, 3, 4, 5, 1000)]
    out = np.zeros(3, np.int64)
    kern.mt_sample(np.arange(2, 9), 3, mt, out)
    assert out.tolist() == rng.sample(range(2, 9), 3)


def deal_rows(game: str, config, seeds: list[int]) -> np.ndarray:
    batch = core_module(game)
    pairs = np.zeros((len(seeds), 2), np.int64)
    pairs[:, 1] = seeds
    return batch.new_games(config, len(seeds), kern.seed_generators(0, len(seeds)), pairs)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("num_players", PLAYERS)
@pytest.mark.parametrize("layout", ["default", "random"])
def test_a_compiled_deal_is_the_python_engines_deal_from_the_same_seed(game: str, num_players: int,
                                                                     layout: str) -> None:
    descriptor = get_game(game)
    config = descriptor.make_config(num_players, **{LAYOUT[game]: layout})
    seeds = [0, 1, 2, 99, 12345, 2**32 + 5, 2**62 + 11, *range(1000, 1030)]
    rows = deal_rows(game, config, seeds)
    kernels = core_module(game, "kernels")
    for row, seed in zip(rows, seeds, strict=True):
        assert kernels.unpack(row, config).to_dict() == descriptor.new_state(config, seed).to_dict(), seed


def learner_first_games(positions, seeds, config, game):
    """The games of ``positions`` whose learner moves first: their position is the deal itself."""
    descriptor = get_game(game)
    for g, (position, seed) in enumerate(zip(positions, seeds, strict=True)):
        deal = descriptor.new_state(config, int(seed))
        if deal.first_player == g % config.num_players:
            yield position, deal


def same_deal(position, deal) -> None:
    assert position.to_dict() == deal.to_dict()


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("num_players", PLAYERS)
def test_game_g_of_the_vector_env_reset_with_seed_s_is_the_python_deal_from_s_plus_g(game: str,
                                                                                    num_players: int) -> None:
    env = KeltisVectorEnv(12, game=game, num_players=num_players)
    _obs, info = env.reset(seed=500)
    assert info["deal_seed"].tolist() == list(range(500, 512))
    positions = [env.position(g) for g in range(12)]
    checked = list(learner_first_games(positions, range(500, 512), env.config, game))
    assert checked, "no game with the learner first: choose other seeds"
    for position, deal in checked:
        same_deal(position, deal)
    # the first player of every game is the deal's, moved or not
    for g, position in enumerate(positions):
        assert position.first_player == get_game(game).new_state(env.config, 500 + g).first_player


@pytest.mark.parametrize("game", GAMES)
def test_later_games_of_a_slot_are_python_deals_from_the_seeds_it_reports(game: str) -> None:
    env = KeltisVectorEnv(4, game=game, copy=False)
    _obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    replaced = 0
    for _ in range(600):
        masks = info["action_mask"].copy()  # the buffer itself is rewritten by the step (copy=False)
        actions = np.argmax(masks * rng.random(masks.shape), axis=1)
        _obs, _r, _terminated, _truncated, info = env.step(actions)
        for g in np.flatnonzero(~masks.any(axis=1)):  # a slot dealt again at this step
            seed = int(info["deal_seed"][g])
            assert seed not in range(3, 7)
            position = env.position(int(g))
            assert position.first_player == get_game(game).new_state(env.config, seed).first_player
            replaced += 1
    assert replaced > 0


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("num_players", [2, 3])
def test_the_learner_view_reset_with_seed_s_deals_the_python_deal_from_s(game: str, num_players: int) -> None:
    for seed in range(20):
        env = KeltisLearnerEnv(game=game, num_players=num_players)
        env.reset(seed=seed)
        deal = get_game(game).new_state(env.config, seed)
        state = env.episode.state
        assert state.first_player == deal.first_player
        if state.current_player == deal.first_player and env.episode.seat == deal.first_player:
            same_deal(state, deal)


@pytest.mark.parametrize("game", GAMES)
def test_the_sb3_vecenv_and_the_collector_deal_the_python_deal_from_seed_plus_g(game: str) -> None:
    pytest.importorskip("stable_baselines3")
    from keltis_env.envs.vector_sb3 import KeltisSB3VecEnv
    from training.sb3.compiled_batch import make_game_batch

    env = KeltisSB3VecEnv(6, game=game)
    env.seed(40)
    env.reset()
    assert env.deal_seeds.tolist() == list(range(40, 46))
    for g in range(6):
        assert env.position(g).first_player == get_game(game).new_state(env.config, 40 + g).first_player
    for backend in ("python", "compiled"):
        games = make_game_batch(6, backend=backend, opponents=["random"], game=game)
        games.reset(seeds=list(range(40, 46)))
        for g in range(6):
            state = games.position(g) if hasattr(games, "position") else games.games[g].state
            assert state.first_player == get_game(game).new_state(env.config, 40 + g).first_player, backend
