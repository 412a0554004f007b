"""``python -m training.train``: an SB3 run (:mod:`training.sb3`), new, resumed or described."""
