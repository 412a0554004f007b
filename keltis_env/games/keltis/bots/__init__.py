"""The card game's bots: ``heuristic`` and the searching ``ismcts`` (registered by name in
the game's descriptor and loaded on demand)."""
