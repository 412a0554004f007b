"""``python -m training.bench.board``: how an agent builds its board against an opponent."""

from __future__ import annotations

import pytest

from training.bench.board import COLUMNS, board_stats, main


def test_board_stats_counts_each_sides_board_at_the_end_of_its_games() -> None:
    mine, theirs = board_stats("heuristic", "random", games=4, seed=3)
    assert len(mine) == len(theirs) == len(COLUMNS)
    for side in (mine, theirs):
        _, opened, minus, goal, cards, _ = side
        assert 0 <= minus <= opened <= 5 and 0 <= goal <= opened
        assert cards >= opened  # every opened path holds a card
    assert mine[0] > theirs[0]  # the heuristic outscores random play
    assert board_stats("heuristic", "random", games=4, seed=3) == (mine, theirs)  # seeded


def test_the_command_prints_both_sides_and_refuses_no_games(capsys) -> None:
    main(["heuristic", "random", "--games", "2"])
    out = capsys.readouterr().out
    assert "heuristic  against  random" in out and all(name in out for name in COLUMNS)
    with pytest.raises(SystemExit):
        main(["heuristic", "random", "--games", "0"])
    assert "--games must be at least 1, got 0" in capsys.readouterr().err
