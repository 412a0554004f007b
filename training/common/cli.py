"""What the training entry commands share (``training.train``, ``training.exit``,
``training.rllib``, ``training.budget``): their command-line arguments, and Ctrl-C and
SIGTERM as an interrupt (:func:`stop_on_signals`)."""

from __future__ import annotations

import argparse
import signal


def add_run_source(p: argparse.ArgumentParser, config_help: str, resume_help: str, required: bool = True) -> None:
    """``--config YAML | --resume RUN_DIR | --describe``, one of them."""
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument("--config", metavar="YAML", help=config_help)
    src.add_argument("--resume", metavar="RUN_DIR", help=resume_help)
    src.add_argument("--describe", action="store_true", help="print every config key with its default and exit")


def add_overrides(p: argparse.ArgumentParser, example: str, what: str = "a config key") -> None:
    """``--set KEY=VALUE`` (repeatable), collected in ``args.overrides``."""
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help=f"override {what}, e.g. --set {example} (repeatable)")


def stop_on_signals() -> None:
    """Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` in the main thread, so that they stop a
    run with a checkpoint to resume from, also when the run was started in the background
    (where a shell makes processes ignore SIGINT)."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


__all__ = ["add_overrides", "add_run_source", "stop_on_signals"]
