"""The board picture (keltis_env.games.keltis.render_image) and the environment's render modes."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL")

from keltis_env import keltis_v0
from keltis_env.cli import main
from keltis_env.core.render_image import ImageWindow, RenderUnavailableError
from keltis_env.envs.aec import TurnBasedAECEnv
from keltis_env.games.keltis import GameConfig, GameState, action_to_string
from keltis_env.games.keltis.actions import PLAY_LARGE
from keltis_env.games.keltis.render_image import DEFAULT_LAYOUT, DEFAULT_PALETTE, Layout, board_image


def _opening(seed: int = 3) -> tuple[GameState, int]:
    """A new game and a card of the player to act that opens a path (small or large)."""
    state = GameState.new_game(GameConfig(num_players=2), seed=seed)
    play = next(a for a in state.legal_actions() if a < PLAY_LARGE)
    return state, play


def _crop(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return image[y0:y1, x0:x1]


def _slot_box(state: GameState, path: int, row: int, player: int) -> tuple[int, int, int, int]:
    """The part of a stone where ``player``'s figure stands (tiles are drawn elsewhere)."""
    lay = DEFAULT_LAYOUT
    x = lay.figure_slot_x(path, row, player, state.num_players)
    _, y0, _, y1 = lay.stone_box(path, row)
    half = lay.slot_w // 2 + lay.large_ring
    return x - half, y0, x + half, y1


def _near(pixels: np.ndarray, color: tuple[int, int, int], tolerance: float = 40.0) -> int:
    distance = np.linalg.norm(pixels.astype(float) - np.array(color, dtype=float), axis=-1)
    return int((distance < tolerance).sum())


# ---------------------------------------------------------------- the picture
def test_rgb_array_shape_and_dtype_are_fixed_per_player_count() -> None:
    env = keltis_v0.env(num_players=2, render_mode="rgb_array")
    env.reset(seed=1)
    width, height = DEFAULT_LAYOUT.size(2)
    first = env.render()
    assert isinstance(first, np.ndarray)
    assert first.dtype == np.uint8 and first.shape == (height, width, 3)
    for _ in range(6):  # a few decisions: same shape, every frame
        obs, *_ = env.last()
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert env.render().shape == first.shape
    env.close()
    four = board_image(GameState.new_game(GameConfig(num_players=4), seed=0))
    assert four.shape == (DEFAULT_LAYOUT.size(4)[1], DEFAULT_LAYOUT.size(4)[0], 3)
    assert four.shape[0] > first.shape[0]  # a taller side panel, same width


def test_picture_changes_where_a_figure_moves_and_nowhere_else_on_the_board() -> None:
    state, play = _opening()
    player = state.current
    path = play // 11
    before = board_image(state, show_hands=None)
    state.apply(play)
    after = board_image(state, show_hands=None)
    lay = DEFAULT_LAYOUT
    slot = _slot_box(state, path, 1, player)
    assert not np.array_equal(_crop(before, slot), _crop(after, slot)), "the figure should appear on row 1"
    assert not np.array_equal(_crop(before, lay.start_box()), _crop(after, lay.start_box())), "one fewer at start"
    other = (path + 1) % 5
    for row in range(1, 10):  # stones of another path are untouched
        box = lay.stone_box(other, row)
        assert np.array_equal(_crop(before, box), _crop(after, box))


def test_large_figure_is_drawn_differently_from_a_small_one() -> None:
    state, play = _opening()
    player = state.current
    path = play // 11
    small, large = state.clone(), state.clone()
    small.apply(play)
    large.apply(PLAY_LARGE + play)
    assert action_to_string(PLAY_LARGE + play).endswith("large")
    slot = _slot_box(state, path, 1, player)
    small_px = _crop(board_image(small, show_hands=None), slot)
    large_px = _crop(board_image(large, show_hands=None), slot)
    ink = DEFAULT_PALETTE.players[player]
    assert _near(large_px, ink) > 1.5 * _near(small_px, ink), "the large figure is bigger"
    assert _near(large_px, DEFAULT_PALETTE.large_ring) > 20, "the large figure has a gold ring"
    assert _near(small_px, DEFAULT_PALETTE.large_ring) == 0


def test_hands_are_shown_only_where_asked() -> None:
    state = GameState.new_game(GameConfig(num_players=2), seed=5)
    hidden = board_image(state, show_hands=None)
    own = board_image(state, show_hands=state.current)
    assert np.array_equal(board_image(state, show_hands="current"), own)
    assert not np.array_equal(hidden, own)
    assert not np.array_equal(board_image(state, show_hands="all"), own)


def test_layout_scales_lengths_but_not_counts_or_proportions() -> None:
    double = Layout().scaled(2)
    assert double.cell_w == 2 * Layout().cell_w
    assert double.rows_lines == Layout().rows_lines and double.supersample == Layout().supersample
    assert double.pawn_head_r == Layout().pawn_head_r


def test_missing_pillow_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    state = GameState.new_game(GameConfig(), seed=0)
    with pytest.raises(RenderUnavailableError, match="pip install"):
        board_image(state)


# ---------------------------------------------------------------- environment render modes
def test_render_modes_in_metadata_follow_the_game_descriptor() -> None:
    assert "rgb_array" in keltis_v0.raw_env.metadata["render_modes"]

    class NoPicture(TurnBasedAECEnv):
        game = dataclasses.replace(keltis_v0.GAME, name="nopicture", painter=None)

    assert NoPicture.metadata["render_modes"] == ["ansi", "human"]
    with pytest.raises(ValueError, match="render_mode"):
        NoPicture(render_mode="rgb_array")


def test_ansi_still_returns_the_text_board() -> None:
    env = keltis_v0.env(render_mode="ansi")
    env.reset(seed=2)
    text = env.render()
    assert isinstance(text, str) and text.startswith("Keltis, 2 players")


def test_render_without_a_render_mode_warns() -> None:
    env = keltis_v0.env()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def test_human_mode_shows_the_picture_in_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[np.ndarray] = []
    monkeypatch.setattr(ImageWindow, "show", lambda self, image: shown.append(image))
    monkeypatch.setattr(ImageWindow, "close", lambda self: None)
    env = keltis_v0.env(render_mode="human")
    env.reset(seed=0)
    for _ in range(3):  # human mode renders after every step
        obs, *_ = env.last()
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert len(shown) == 3 and all(img.dtype == np.uint8 and img.ndim == 3 for img in shown)
    assert not np.array_equal(shown[0], shown[-1])
    env.close()


def test_human_mode_without_a_display_prints_text_and_warns_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_display(self: ImageWindow, image: np.ndarray) -> None:
        raise RenderUnavailableError("no display")

    monkeypatch.setattr(ImageWindow, "show", no_display)
    env = keltis_v0.env(render_mode="human")
    env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            obs, *_ = env.last()
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    messages = [str(w.message) for w in caught if "text board instead" in str(w.message)]
    assert len(messages) == 1 and "no display" in messages[0]
    assert capsys.readouterr().out.count("Keltis, 2 players") == 2
    env.close()


def test_pettingzoo_render_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from pettingzoo.test import render_test

    monkeypatch.setattr(ImageWindow, "show", lambda self, image: None)  # no window pops up in tests
    render_test(keltis_v0.env)


# ---------------------------------------------------------------- keltis render
def test_render_command_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    out = tmp_path / "docs" / "board.png"
    assert main(["render", "--seed", "4", "--turns", "5", "--out", str(out)]) == 0
    with Image.open(out) as img:
        assert img.size == DEFAULT_LAYOUT.size(2) and img.mode == "RGB"
    again = tmp_path / "again.png"
    assert main(["render", "--seed", "4", "--turns", "5", "--out", str(again)]) == 0
    assert out.read_bytes() == again.read_bytes(), "the same command draws the same picture"
    assert main(["render", "--players", "3", "--bots", "random", "--out", str(again)]) == 2
    assert "--bots needs 3" in capsys.readouterr().err


# ---------------------------------------------------------------- the dice game's picture
def test_dice_picture_size_depends_only_on_the_number_of_players() -> None:
    from keltis_env.games import dice
    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT as DICE_LAYOUT
    from keltis_env.games.dice.render_image import board_image as dice_image

    for n in (2, 3, 4):
        width, height = DICE_LAYOUT.size(n)
        state = dice.GameState.new_game(dice.GameConfig(num_players=n), seed=n)
        frames = []
        decisions = 0
        while not state.is_over:  # the start, two positions during the game, the end
            if decisions in (0, 5, 30):
                frames.append(dice_image(state))
            state.apply(state.legal_actions()[-1])
            decisions += 1
        frames.append(dice_image(state))
        assert len(frames) == 4
        assert all(f.dtype == np.uint8 and f.shape == (height, width, 3) for f in frames)
        assert len({f.tobytes() for f in frames}) == len(frames), "every position draws differently"


def test_dice_picture_changes_where_a_marker_moves_and_nowhere_else_on_the_board() -> None:
    from dice_helpers import position

    from keltis_env.games.dice.constants import COLORS as DICE_COLORS
    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT as DICE_LAYOUT
    from keltis_env.games.dice.render_image import board_image as dice_image

    state = position(3, markers={1: {"blue": 2}, 2: {"red": 5}}, current=2)
    before = dice_image(state)
    moved = position(3, markers={1: {"blue": 4}, 2: {"red": 5}}, current=2)  # blue marker: row 2 -> row 4
    after = dice_image(moved)
    blue = DICE_COLORS.index("blue")
    lay = DICE_LAYOUT
    for row in (2, 4):
        box = lay.square_box(blue, row)
        assert not np.array_equal(_crop(before, box), _crop(after, box)), f"row {row} of blue changes"
    for column in range(5):
        for row in range(1, 10):
            if (column, row) not in ((blue, 2), (blue, 4)):
                box = lay.square_box(column, row)
                assert np.array_equal(_crop(before, box), _crop(after, box)), (column, row)
    assert np.array_equal(_crop(before, lay.supply_box()), _crop(after, lay.supply_box()))
    entered = dice_image(position(3, markers={1: {"blue": 2}, 2: {"red": 5, "pink": 1}}, current=2))
    assert not np.array_equal(_crop(before, lay.supply_box()), _crop(entered, lay.supply_box())), "one fewer to enter"


def test_dice_picture_draws_each_seat_in_its_own_colour_and_the_dice() -> None:
    from dice_helpers import position

    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT as DICE_LAYOUT
    from keltis_env.games.dice.render_image import DEFAULT_PALETTE as DICE_PALETTE
    from keltis_env.games.dice.render_image import board_image as dice_image

    lay, pal = DICE_LAYOUT, DICE_PALETTE
    image = dice_image(position(4, markers={p: {"green": 8} for p in range(4)}))
    for p in range(4):
        x, y = lay.marker_xy(2, 8, p, 4)
        r = lay.marker_r // 2
        box = (round(x - r), round(y - r), round(x + r), round(y + r))
        assert _near(_crop(image, box), pal.players[p]) > r * r, f"seat {p}'s marker in its colour"
    dice = position(2, dice=("red", "red", "blue", "stone", "stone"))
    drawn = dice_image(dice)
    for i, face in enumerate(dice.dice):
        colour = pal.die_stone if face == 5 else pal.columns[face]
        assert _near(_crop(drawn, lay.die_box(i)), colour) > lay.die * lay.die // 2, f"die {i + 1} shows face {face}"


def test_dice_picture_names_and_bad_options() -> None:
    from dice_helpers import position

    from keltis_env.games.dice.render_image import board_image as dice_image

    state = position(2)
    plain = dice_image(state)
    assert not np.array_equal(plain, dice_image(state, names=["heuristic", "you"]))
    assert np.array_equal(plain, dice_image(state, show_hands="all")), "no hidden hands: nothing to show"
    with pytest.raises(ValueError, match="show_hands must be"):
        dice_image(state, show_hands="everyone")
    with pytest.raises(ValueError, match=r"seat 0\.\.1"):
        dice_image(state, show_hands=2)


def test_dice_missing_pillow_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from keltis_env.games import dice
    from keltis_env.games.dice.render_image import board_image as dice_image

    state = dice.GameState.new_game(seed=0)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(RenderUnavailableError, match="pip install"):
        dice_image(state)


def test_dice_env_render_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    from keltis_env import keltis_dice_v0
    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT as DICE_LAYOUT

    assert keltis_dice_v0.raw_env.metadata["render_modes"] == ["ansi", "human", "rgb_array"]
    env = keltis_dice_v0.env(num_players=3, render_mode="rgb_array")
    env.reset(seed=4)
    width, height = DICE_LAYOUT.size(3)
    first = env.render()
    assert isinstance(first, np.ndarray) and first.shape == (height, width, 3)
    shown: list[np.ndarray] = []
    monkeypatch.setattr(ImageWindow, "show", lambda self, image: shown.append(image))
    monkeypatch.setattr(ImageWindow, "close", lambda self: None)
    human = keltis_dice_v0.env(num_players=2, render_mode="human")
    human.reset(seed=4)
    for _ in range(3):  # human mode renders after every step
        obs, *_ = human.last()
        human.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    two = DICE_LAYOUT.size(2)
    assert len(shown) == 3 and all(img.dtype == np.uint8 and img.shape == (two[1], two[0], 3) for img in shown)
    assert not np.array_equal(shown[0], shown[-1])
    human.close()
    env.close()


def test_dice_pettingzoo_render_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from pettingzoo.test import render_test

    from keltis_env import keltis_dice_v0

    monkeypatch.setattr(ImageWindow, "show", lambda self, image: None)
    render_test(keltis_dice_v0.env)
