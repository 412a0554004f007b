"""Recipes: the one file that makes a shipped policy (``configs/recipes/NAME.yaml``), and
``python -m training.recipe`` to rebuild it, stage by stage, each stage resumable
(:mod:`training.recipe.recipe` for the format, :mod:`training.recipe.run` for the runner)."""
