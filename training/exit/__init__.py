"""Expert iteration (``python -m training.exit``): the search guided by a network labels
its games, the network is fitted to the labels, and the new network is kept only if it
beats the one it came from; round after round, every stage resumable.

Modules: :mod:`.config` (the run's config and its checks), :mod:`.label` (the search's
games and their labels, in shards, in worker processes), :mod:`.fit` (the warm-started
fit to the replay window's labels), :mod:`.loop` (the rounds and their stages: label,
fit, gate, evaluate) and :mod:`.report` (``report.md``, ``report.json``, ``curve.png``).
It builds on the imitation (its label files and its fit) and on the SB3 trainer's policy
export; see training/README.md.
"""
