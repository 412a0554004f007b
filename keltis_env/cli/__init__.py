"""The ``keltis`` command. Each subcommand is a module of this package that defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``; modules are
discovered, so adding a command means adding a module (a module without ``HELP`` is a
helper of the commands, e.g. :mod:`keltis_env.cli.arguments`). Heavy imports belong inside
``run`` so that ``keltis --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


def _commands() -> dict[str, object]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            if hasattr(module, "HELP"):  # the others are helpers of the commands (e.g. arguments)
                found[info.name] = module
    return found


def build_parser() -> argparse.ArgumentParser:
    from keltis_env import __version__

    parser = argparse.ArgumentParser(prog="keltis", description="Keltis for reinforcement learning.")
    parser.add_argument("--version", action="version", version=f"keltis {__version__}",
                        help="print the package's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in _commands().items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)  # type: ignore[attr-defined]
        module.add_arguments(p)  # type: ignore[attr-defined]
        p.set_defaults(_run=module.run)  # type: ignore[attr-defined]
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `keltis demo | head`: the reader left, stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
