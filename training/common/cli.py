"""What the training entry commands share (``training.train``, ``training.exit``,
``training.zero``, ``training.rllib``, ``training.budget``): their command-line arguments,
Ctrl-C and SIGTERM as an interrupt (:func:`stop_on_signals`, :func:`sigterm_stops`), and the
run folder of a new or resumed run (:func:`open_run`, :func:`run_in_folder`)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def add_run_source(p: argparse.ArgumentParser, config_help: str, resume_help: str, required: bool = True) -> None:
    """``--config YAML | --resume RUN_DIR | --describe``, one of them."""
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument("--config", metavar="YAML", help=config_help)
    src.add_argument("--resume", metavar="RUN_DIR", help=resume_help)
    src.add_argument("--describe", action="store_true", help="print every config key with its default and exit")


def add_run_folder(p: argparse.ArgumentParser) -> None:
    """``--out DIR`` (a new run's folder) and ``--quiet``."""
    p.add_argument("--out", metavar="DIR", help="run folder (default runs/<name>-<time>); a folder of an earlier run "
                   "of the same config goes on like --resume")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


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




class Stopped(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a run stops as with Ctrl-C."""


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM raises :class:`Stopped` meanwhile (then is ignored: stopping is not cut short)."""
    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def open_run(args: argparse.Namespace, load_config: Callable[..., Any], load_resume_config: Callable[..., Any]
             ) -> tuple[Any, Path]:
    """The config and run folder of ``--config YAML [--out DIR]`` (default
    ``runs/<name>-<time>``; a folder of an earlier run of the same config goes on) or of
    ``--resume RUN_DIR``, both with ``--set``; a
    :class:`~training.common.config.ConfigError` or
    :class:`~keltis_env.core.output_files.OutputPathError` says what is wrong."""
    import time

    from keltis_env.core.output_files import check_output_dir

    from .config import ConfigError

    if args.resume:
        run_dir = Path(args.resume)
        config = load_resume_config(run_dir, args.overrides)
    else:
        config = load_config(args.config, args.overrides)
        run_dir = Path(args.out) if args.out else Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        if (run_dir / "config.yaml").is_file() and (run_dir / "config.yaml").read_text() != config.to_yaml():
            raise ConfigError(f"{run_dir} holds a run of another config; resume it with --resume {run_dir}, or "
                              "give another --out")
    check_output_dir(run_dir, "the run folder")
    return config, run_dir


def run_in_folder(prog: str, run_dir: Path, what: str, body: Callable[[], Any]) -> Any:
    """``body()`` holding the run folder (a second process is refused) with SIGTERM as
    Ctrl-C; its result, or the exit status of a refusal (2) or of a stop (128 + the signal,
    after a line that says how to go on)."""
    from keltis_env.core.output_files import FolderInUseError, claim_folder

    try:
        with claim_folder(run_dir, what), sigterm_stops():
            return body()
    except FolderInUseError as exc:  # another process runs it: refused, nothing written
        print_error_line(f"{prog}: {exc}")
        return 2
    except KeyboardInterrupt as stop:
        print(f"stopped; go on with: {prog} --resume {run_dir}", file=sys.stderr, flush=True)
        return 128 + (signal.SIGTERM if isinstance(stop, Stopped) or getattr(stop, "signum", None) == signal.SIGTERM
                      else signal.SIGINT)


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
