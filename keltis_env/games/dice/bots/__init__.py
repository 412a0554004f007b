"""The dice game's bots: ``heuristic`` (registered by name in the game's descriptor and
loaded on demand)."""
