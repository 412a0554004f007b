"""What every training recipe shares: the one config loader and error (``config``), the run
config of SB3 training and imitation (``run_config``), evaluation during training
(``opponent_eval``), the end-of-run report (``report``), the entry commands' shared
arguments (``cli``) and the masked policy math of imitation and PPO (``masked``). Imports
nothing else of ``training``."""
