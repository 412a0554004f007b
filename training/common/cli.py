"""The command-line arguments every training entry command shares (``training.train``,
``training.exit``, ``training.rllib``, ``training.budget``)."""

from __future__ import annotations

import argparse


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


__all__ = ["add_overrides", "add_run_source"]
