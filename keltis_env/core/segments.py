"""Observation layouts as ordered lists of named segments (standard library only).

A game's encoder declares its layout as ``(name, size, description)`` triples;
:func:`build_segments` turns them into contiguous :class:`Segment` s, so every index range
is derived from that one list, and the documentation's tables are generated from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    """A named, contiguous part of the observation vector."""

    name: str
    size: int
    description: str
    start: int = 0

    @property
    def stop(self) -> int:
        return self.start + self.size

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)


def build_segments(spec: list[tuple[str, int, str]]) -> list[Segment]:
    """``(name, size, description)`` triples, in order -> contiguous :class:`Segment` s
    (any game's layout is built this way)."""
    segments, at = [], 0
    for name, size, description in spec:
        segments.append(Segment(name, size, description, at))
        at += size
    return segments


def segments_table(segments: list[Segment]) -> str:
    """Any observation layout as a Markdown table (the documentation quotes this)."""
    lines = ["| index | size | segment | meaning |", "|---|---|---|---|"]
    for seg in segments:
        lines.append(f"| {seg.start}..{seg.stop - 1} | {seg.size} | `{seg.name}` | {seg.description} |")
    return "\n".join(lines)


def action_ranges_table(ranges: Mapping[str, tuple[int, int]], to_string: Callable[[int], str]) -> str:
    """Any game's named action-id ranges as a Markdown table (the documentation quotes this)."""
    lines = ["| ids | range | first | last |", "|---|---|---|---|"]
    for name, (start, stop) in ranges.items():
        lines.append(f"| {start}..{stop - 1} | `{name}` | `{to_string(start)}` | `{to_string(stop - 1)}` |")
    return "\n".join(lines)


class SegmentEncoder:
    """What every game's observation encoder starts from: the layout of a
    ``num_players`` game's observation (its segments, found by name) and its size. A
    game's encoder adds how a view fills it (numpy lives there, not here)."""

    def __init__(self, num_players: int, segments: list[Segment]) -> None:
        self.num_players = num_players
        self.segments = segments
        self.index = {seg.name: seg for seg in segments}
        self.size = segments[-1].stop


__all__ = ["Segment", "SegmentEncoder", "action_ranges_table", "build_segments", "segments_table"]
