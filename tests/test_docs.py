"""The documentation's tables are generated from the code and kept current."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from keltis_env import keltis_v0
from keltis_env.cli import docs
from keltis_env.games.keltis import ACTION_RANGES, NUM_ACTIONS
from keltis_env.games.keltis.encoding import observation_segments, observation_table

ROOT = Path(__file__).resolve().parents[1]


def test_readme_generated_blocks_are_current() -> None:
    text = (ROOT / "README.md").read_text()
    assert docs.regenerate(text) == text, "README tables are stale: run `keltis docs`"


def test_readme_contains_every_generated_block() -> None:
    text = (ROOT / "README.md").read_text()
    for name in docs.generators():
        assert f"<!-- generated:{name} -->" in text and f"<!-- /generated:{name} -->" in text, name


def test_env_docstring_quotes_the_generated_tables() -> None:
    assert observation_table(2) in keltis_v0.__doc__
    assert keltis_v0.action_table() in keltis_v0.__doc__


def test_observation_table_lists_every_segment_contiguously() -> None:
    for n in (2, 3, 4):
        segments = observation_segments(n)
        assert segments[0].start == 0
        for before, after in pairwise(segments):
            assert before.stop == after.start
        assert len(observation_table(n).splitlines()) == len(segments) + 2
        assert keltis_v0.raw_env(n).observation_space("player_0")["observation"].shape == (segments[-1].stop,)


def test_action_table_covers_every_id_once() -> None:
    covered = [i for start, stop in ACTION_RANGES.values() for i in range(start, stop)]
    assert covered == list(range(NUM_ACTIONS))
    assert len(keltis_v0.action_table().splitlines()) == len(ACTION_RANGES) + 2
