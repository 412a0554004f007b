"""Expert iteration from zero (``python -m training.zero``): self-play with a search that
knows only the rules and a network (:class:`keltis_env.bots.gumbel.GumbelSearch`), the
network fitted to the search's improved policies and to the games' outcomes; see
:mod:`.loop`."""
