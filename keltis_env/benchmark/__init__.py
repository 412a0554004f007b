"""The Keltis benchmark: a frozen protocol, an opponent ladder per track, a scorecard with
a rating on a fixed scale, and a leaderboard.

``score("ppo:my_policy.zip", "keltis-2p")`` plays the agent against every rung of the
track's ladder under protocol v1 (``benchmarks/v1/``) and returns a :class:`Scorecard`;
``keltis ladder AGENT --track TRACK`` does the same from the command line. The protocol's
rung ratings come from ``python -m keltis_env.benchmark.calibrate``; ``LEADERBOARD.md`` from
``python -m keltis_env.benchmark.leaderboard``. See ``docs/benchmark.md``.
"""

from .ladder import LadderInterrupted, agent_file, make_scorecard, score
from .protocol import (
    BENCHMARKS_DIR,
    DEFAULT_VERSION,
    BenchmarkError,
    Protocol,
    Track,
    load_protocol,
    protocol_folder,
    sha256_file,
)
from .rating import Outcome, Rating, RatingError, fit_rating, fit_ratings, win_probability
from .scorecard import RungResult, Scorecard, comparable

__all__ = [
    "BENCHMARKS_DIR",
    "DEFAULT_VERSION",
    "BenchmarkError",
    "LadderInterrupted",
    "Outcome",
    "Protocol",
    "Rating",
    "RatingError",
    "RungResult",
    "Scorecard",
    "Track",
    "agent_file",
    "comparable",
    "fit_rating",
    "fit_ratings",
    "load_protocol",
    "make_scorecard",
    "protocol_folder",
    "score",
    "sha256_file",
    "win_probability",
]
