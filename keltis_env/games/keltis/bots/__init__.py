"""The card game's bots: ``heuristic`` (rules of thumb), ``planner`` (the plan model's best
action, :mod:`.plan` and :mod:`.planner`) and the searching ``ismcts`` (registered by name
in the game's descriptor and loaded on demand)."""
