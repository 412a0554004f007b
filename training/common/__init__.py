"""What every training job shares: the one config loader and error (``config``), the game
section and the checks of games, agent specs and policy files (``sections``), the entry
commands' shared arguments and signal handling (``cli``), the kinds of run folder and the
check that ``--resume`` got the right one (``folders``), the JSON of finite figures that
the jobs write (``jsonfile``) and the masked policy math of
imitation and PPO (``masked``). Imports nothing else of ``training``."""
