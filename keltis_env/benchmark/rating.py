"""The benchmark's rating: one number on a fixed scale, fitted by maximum likelihood.

The model
    Every player has a strength ``gamma = 10 ** (rating / 400)``. At a table the winner is
    drawn with probability proportional to strength (Luce's choice axiom, the first stage
    of the Plackett-Luce model). So a player of rating ``R`` playing against ``n - 1``
    copies of a rung of rating ``r`` wins with probability::

        p = gamma(R) / (gamma(R) + (n - 1) gamma(r)) = sigmoid(c (R - r) - ln(n - 1)),   c = ln(10) / 400

    Why this model: an equal player wins ``1/n`` of the games, as symmetry demands; in a
    two-player game it is the Bradley-Terry model on the Elo scale (400 points = 10:1
    odds), which readers know; it uses only what every game of every track has, the winner
    (with the evaluation's counting: a k-way tie for the highest score gives each tied
    player 1/k win, taken as a fractional outcome); and for the benchmark's tables, one
    agent against copies of one rung, it is a logistic regression with a known offset, so
    the log-likelihood is concave and its maximum unique and found reliably. Scores beyond
    the winner (margins, places) are reported, not rated: their scale differs between the
    games and player counts.

The scale
    Each track has its own scale, anchored on ``random`` = 0. The rungs' ratings are
    frozen in the protocol, fitted jointly (:func:`fit_ratings`) from a calibration run in
    which the rungs play each other. An agent's rating is then fitted alone
    (:func:`fit_rating`) to its results against the rungs, whose ratings are held fixed;
    its 95% interval is the likelihood-ratio interval (the ratings where the
    log-likelihood is within ``3.841 / 2`` of its maximum), which stays sensible near
    100% or 0% win rates where a normal approximation does not. It reflects the agent's
    games only, not the uncertainty of the frozen rung ratings (which is the same for
    every agent scored on the protocol, so comparisons between agents are not affected).
    An agent that wins (or loses) every game has no finite maximum: its rating is then
    ``None`` with ``bound`` ``"above"`` (``"below"``) and the interval is open on that side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: rating points per factor 10 in strength (the Elo scale)
SCALE = 400.0
_C = math.log(10.0) / SCALE
#: half the 95% quantile of chi-square with one degree of freedom: the likelihood-ratio drop
_LR_DROP = 3.841458820694124 / 2
#: how far beyond the rungs' ratings an agent's rating is searched for
SPAN = 3000.0


class RatingError(ValueError):
    """Results that do not determine a rating (no games, a rung that never loses, ...)."""


@dataclass(frozen=True)
class Outcome:
    """Games of one player (rating unknown, or ``player``) against a table of
    ``players - 1`` copies of one opponent: ``wins`` (fractional for shared wins) of ``games``."""

    opponent: str
    players: int
    wins: float
    games: int
    player: str = "agent"


def win_probability(rating: float, opponent: float, players: int) -> float:
    """The chance that a player of ``rating`` wins against ``players - 1`` copies of a
    player of rating ``opponent``."""
    return _sigmoid(_C * (rating - opponent) - math.log(players - 1))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


@dataclass(frozen=True)
class Rating:
    """A fitted rating: ``value`` (``None`` when unbounded, see ``bound``) and its 95%
    interval ``low``/``high`` (``None`` on an open side)."""

    value: float | None
    low: float | None
    high: float | None
    bound: str | None = None  # "above": won every game; "below": lost every game

    def __post_init__(self) -> None:
        """Refuse what no JSON file may hold: a rating or bound that is not a finite number
        (NaN, an infinity, a bool, a string), or a ``bound`` other than "above" or "below"."""
        for name in ("value", "low", "high"):
            x = getattr(self, name)
            if x is not None and (isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x)):
                raise ValueError(f"a rating's {name} must be a finite number or null, got {x!r}")
        if self.bound not in (None, "above", "below"):
            raise ValueError(f"a rating's bound must be 'above', 'below' or null, got {self.bound!r}")
        if self.value is None and self.bound is None:
            raise ValueError("a rating without a value must say its bound ('above' or 'below')")

    def to_dict(self) -> dict[str, Any]:
        return {"value": _round(self.value), "ci": [_round(self.low), _round(self.high)], "bound": self.bound}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rating:
        """The rating of :meth:`to_dict`; ``ValueError`` (see ``__post_init__``) for a value that is not finite."""
        low, high = data["ci"]
        return cls(data["value"], low, high, data.get("bound"))

    def text(self) -> str:
        """``"812 [771, 853]"``, ``"> 1520"`` (won every game), ``"< -310"``."""
        if self.bound == "above":
            return f"> {self.low:.0f}" if self.low is not None else "unbounded"
        if self.bound == "below":
            return f"< {self.high:.0f}" if self.high is not None else "unbounded"
        low = "-inf" if self.low is None else f"{self.low:.0f}"
        high = "inf" if self.high is None else f"{self.high:.0f}"
        return f"{self.value:.0f} [{low}, {high}]"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def fit_rating(outcomes: Sequence[Outcome], ratings: dict[str, float]) -> Rating:
    """The maximum-likelihood rating of one player from its ``outcomes`` against
    opponents of known ``ratings`` (see the module doc); :class:`RatingError` when there
    are no games or an opponent has no rating."""
    rows = []
    for o in outcomes:
        rated = ratings.get(o.opponent)
        if rated is not None and (isinstance(rated, bool) or not isinstance(rated, int | float)
                                  or not math.isfinite(rated)):
            raise ValueError(f"the rating of {o.opponent!r} must be a finite number, got {rated!r}")
        if o.opponent not in ratings:
            raise RatingError(f"no rating for {o.opponent!r}; rated: {', '.join(ratings) or 'none'}")
        if o.games > 0:
            rows.append((ratings[o.opponent], o.players, float(o.wins), float(o.games)))
    if not rows:
        raise RatingError("no games to fit a rating to")

    def loglik(r: float) -> float:
        total = 0.0
        for opp, n, w, g in rows:
            x = _C * (r - opp) - math.log(n - 1)
            total += w * _log_sigmoid(x) + (g - w) * _log_sigmoid(-x)
        return total

    def slope(r: float) -> float:  # decreasing in r: the log-likelihood is concave
        return sum(w - g * _sigmoid(_C * (r - opp) - math.log(n - 1)) for opp, n, w, g in rows)

    lo = min(row[0] for row in rows) - SPAN
    hi = max(row[0] for row in rows) + SPAN
    wins = sum(row[2] for row in rows)
    games = sum(row[3] for row in rows)
    if wins >= games:  # increasing everywhere: the supremum 0 is approached as r -> inf
        return Rating(None, _crossing(loglik, 0.0 - _LR_DROP, lo, hi, rising=True), None, "above")
    if wins <= 0:
        return Rating(None, None, _crossing(loglik, 0.0 - _LR_DROP, lo, hi, rising=False), "below")
    a, b = lo, hi
    if slope(a) <= 0:
        best = a
    elif slope(b) >= 0:
        best = b
    else:
        for _ in range(200):
            mid = (a + b) / 2
            if slope(mid) > 0:
                a = mid
            else:
                b = mid
        best = (a + b) / 2
    level = loglik(best) - _LR_DROP
    return Rating(best, _crossing(loglik, level, lo, best, rising=True),
                  _crossing(loglik, level, best, hi, rising=False))


def _crossing(f: Any, level: float, a: float, b: float, rising: bool) -> float | None:
    """Where the monotone (on [a, b]) ``f`` crosses ``level``; ``None`` when it does not."""
    fa, fb = f(a) - level, f(b) - level
    if (fa > 0) == (fb > 0):
        return None
    for _ in range(200):
        mid = (a + b) / 2
        if (f(mid) - level < 0) == rising:
            a = mid
        else:
            b = mid
    return (a + b) / 2


@dataclass(frozen=True)
class JointFit:
    """The ratings of a joint fit (:func:`fit_joint`), with the anchor at 0, and their
    covariance (from the observed information; the anchor's row and column are 0)."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    covariance: tuple[tuple[float, ...], ...]

    def rating(self, name: str, offset: float = 0.0) -> tuple[float, float]:
        """(rating + ``offset``, standard error) of ``name``."""
        i = self.names.index(name)
        return self.values[i] + offset, math.sqrt(max(self.covariance[i][i], 0.0))

    def difference_se(self, a: str, b: str) -> float:
        """The standard error of ``rating(a) - rating(b)``: ``sqrt(var a + var b - 2 cov(a, b))``."""
        i, j = self.names.index(a), self.names.index(b)
        c = self.covariance
        return math.sqrt(max(c[i][i] + c[j][j] - 2 * c[i][j], 0.0))


def fit_ratings(outcomes: Sequence[Outcome], anchor: str = "random",
                prior_games: float = 0.0) -> dict[str, tuple[float, float]]:
    """:func:`fit_joint`'s ratings as name -> (rating, standard error), the anchor at 0."""
    fit = fit_joint(outcomes, anchor, prior_games)
    return {anchor: (0.0, 0.0)} | {n: fit.rating(n) for n in fit.names if n != anchor}


def fit_joint(outcomes: Sequence[Outcome], anchor: str = "random", prior_games: float = 0.0) -> JointFit:
    """Ratings of every player named in ``outcomes`` (as ``player`` or ``opponent``),
    fitted jointly by maximum likelihood with ``anchor`` fixed at 0: name -> (rating,
    standard error from the observed information). Newton's method on the concave
    log-likelihood. :class:`RatingError` when the results do not determine the ratings:
    the anchor missing, players not connected by games, or a player that never loses
    (or never wins) against the others.

    ``prior_games`` > 0 adds that many virtual games to every table, won in the share an
    equal player wins (``1/n`` at a table of ``n``): a prior pulling each pair towards
    equal ratings, as BayesElo's virtual draws do. It gives a finite rating to a player
    that never wins a game (``random`` against every other rung of the card game), at the
    price of a bias towards equality that is large only for such a player: with hundreds
    of real games at a table and win rates away from 0 and 1, one virtual game moves a
    rating by a point or two."""
    if not (math.isfinite(prior_games) and prior_games >= 0):
        raise RatingError(f"prior_games must be a finite number >= 0, got {prior_games!r}")
    names = sorted({o.player for o in outcomes} | {o.opponent for o in outcomes})
    if anchor not in names:
        raise RatingError(f"the anchor {anchor!r} played no games; players: {', '.join(names)}")
    free = [n for n in names if n != anchor]
    index = {n: i for i, n in enumerate(free)}
    rows = [(index.get(o.player), index.get(o.opponent), o.players, float(o.wins), float(o.games))
            for o in outcomes if o.games > 0]
    if prior_games > 0:  # one set of virtual games per table (see above)
        tables = dict.fromkeys((i, j, n) for i, j, n, _, _ in rows)
        rows += [(i, j, n, prior_games / n, prior_games) for i, j, n in tables]
    k = len(free)
    x = np.zeros(k)

    def terms(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        ll, grad, hess = 0.0, np.zeros(k), np.zeros((k, k))
        for i, j, n, w, g in rows:
            ri = x[i] if i is not None else 0.0
            rj = x[j] if j is not None else 0.0
            z = _C * (ri - rj) - math.log(n - 1)
            p = _sigmoid(z)
            ll += w * _log_sigmoid(z) + (g - w) * _log_sigmoid(-z)
            d = _C * (w - g * p)
            h = _C * _C * g * p * (1 - p)
            for a, sign in ((i, 1.0), (j, -1.0)):
                if a is None:
                    continue
                grad[a] += sign * d
                for b, sign_b in ((i, 1.0), (j, -1.0)):
                    if b is not None:
                        hess[a, b] -= sign * sign_b * h
        return ll, grad, hess

    for _ in range(100):
        ll, grad, hess = terms(x)
        try:
            step = np.linalg.solve(hess, -grad)
        except np.linalg.LinAlgError:
            raise RatingError("the games do not connect every player to the anchor; "
                              "play more pairs of players") from None
        t = 1.0
        while terms(x + t * step)[0] < ll - 1e-12 and t > 1e-6:
            t /= 2
        x = x + t * step
        if np.max(np.abs(t * step)) < 1e-9 or np.max(np.abs(x)) > 10 * SPAN:
            break
    if k and np.max(np.abs(x)) > SPAN:  # the likelihood grows without end: no finite maximum
        worst = free[int(np.argmax(np.abs(x)))]
        raise RatingError(f"{worst!r} never loses (or never wins) against the players it met, so its rating has no "
                          "finite maximum; play more games or pairs")
    _, _, hess = terms(x)
    cov = np.zeros((k + 1, k + 1))
    cov[:k, :k] = np.linalg.inv(-hess)
    return JointFit((*free, anchor), (*(float(v) for v in x), 0.0),
                    tuple(tuple(float(v) for v in row) for row in cov))


__all__ = ["SCALE", "JointFit", "Outcome", "Rating", "RatingError", "fit_joint", "fit_rating", "fit_ratings",
           "win_probability"]
