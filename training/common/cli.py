"""What the training entry commands share (``training.train``, ``training.exit``,
``training.rllib``, ``training.budget``): their command-line arguments, and Ctrl-C and
SIGTERM as an interrupt (:func:`stop_on_signals`)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator


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


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Meanwhile, Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` in the main thread, so that
    they stop a run with a checkpoint to resume from, also when the run was started in the
    background (where a shell makes processes ignore SIGINT). It is a
    :class:`~keltis_env.core.errors.StopRequest`, which an evaluation inside the run tells
    apart from a ``KeyboardInterrupt`` raised by an agent's own code. The handlers found
    are put back at the end, so that a command's ``main`` called from Python (a test, a
    notebook) leaves the process as it was."""
    from keltis_env.core.errors import StopRequest

    def stop(signum: int, frame: object) -> None:
        raise StopRequest

    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous[0] if previous[0] is not None else signal.default_int_handler)
        signal.signal(signal.SIGTERM, previous[1] if previous[1] is not None else signal.SIG_DFL)




def print_error_line(text: str) -> None:
    """``text`` on standard error, its control characters escaped
    (:func:`keltis_env.core.text.terminal_text`): an error quoting a config file's keys or a
    path cannot command the terminal. The package is imported here, not before
    :func:`quiet_threads` has run."""
    from keltis_env.core.text import terminal_text

    print(terminal_text(text), file=sys.stderr)


def quiet_threads() -> None:
    """Thread settings of a training process, before numpy or torch is imported: one thread
    per process for their kernels (the machine's cores go to the environment workers, and tiny
    matrix products only lose time to thread hand-offs), and threads that wait for work sleep
    instead of spinning (spinning torch threads on a machine whose cores are busy with other
    processes made the updates many times slower). A value set in the environment is kept."""
    import os

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


__all__ = ["add_overrides", "add_run_source", "print_error_line", "quiet_threads", "stop_on_signals"]


def check_json_out(p: argparse.ArgumentParser, path: str | None, what: str) -> None:
    """Refuse (``p.error``, exit 2) a ``--json`` file that cannot be written, before any work;
    ``what`` names its contents in the message. ``None``: no file asked for."""
    from keltis_env.core.output_files import OutputPathError, check_output_file

    if path is not None:
        try:
            check_output_file(path, what)
        except OutputPathError as exc:
            p.error(f"--json: {exc}")
