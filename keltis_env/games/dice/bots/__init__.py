"""The dice game's bots: ``heuristic`` (greedy in points, exact re-roll expectations) and
the searching ``ismcts`` (registered by name in the game's descriptor and loaded on
demand)."""
