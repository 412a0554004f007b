"""Imitation on its own: record a teacher's demonstrations once, fit policies to them.

    python -m training.imitate record --config C.yaml --out demos.npz [--set key=value ...]
    python -m training.imitate fit --config C.yaml --data demos.npz --out clone.zip [--set ...]
    python -m training.imitate value --config C.yaml --data games.npz --held-out held.npz --out net.zip
    python -m training.imitate --describe        # every config key, its default and meaning

The config is :class:`training.imitate.config.ImitateConfig`: ``seed``, ``workers``,
``torch_threads``, ``init``, and the sections ``env``, ``network``, ``record`` and ``fit``
(the same ``record`` and ``fit`` sections as an SB3 run's imitation). With a search as
teacher the recording is nearly all of the cost (``ismcts`` at its default budget: about
2.4 s of a core per game), so trying several fits is cheaper from a saved recording:

* ``record`` plays ``record.games`` games of ``record.teacher`` exactly as an SB3 run with
  the same ``env``, ``record``, ``seed`` and ``workers`` would (same decisions, same order)
  and saves them with what they were recorded for: game, players, observation features,
  reward, teacher, seed and ``record.target_temperature``. With ``--actor SPEC`` it records
  a DAgger round instead: ``record.dagger_games`` games in which that agent plays every
  seat in half of the games and one random seat in the others, the teacher labelling every
  decision, as a run's DAgger round ``--round K`` (default 1) would.
* ``fit`` fits a new network (``network``, initialised from ``seed`` as a run's, or from
  the weights of ``init``: a warm start) to one or more recordings with the ``fit``
  settings and writes a policy file (``ppo:PATH``; an SB3 run starts from it with ``init:
  PATH``). ``fit.target_temperature`` null fits the targets as recorded, 0 the teacher's
  moves alone, ``T > 0`` its values as ``softmax(value / T)`` (re-tempered from the
  recording's). The held-out statistics come from a random 5% of the fitted decisions, or
  with ``--held-out NPZ`` from whole recordings never fitted.
* ``value`` fits the value head of the policy file ``init`` afresh (new weights, the
  ``fit`` section's epochs, batch size and learning rate) to the final rewards of the
  recordings, and writes that policy with the new head, keeping the epoch with the least
  squared error on ``--held-out`` (required: whole games never fitted).

A recording for another game, players, features or reward is refused with what differs.
"""

from __future__ import annotations

import argparse
import sys

from ..common.cli import print_error_line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.imitate", description=__doc__.split("\n\n")[0])
    p.add_argument("--describe", action="store_true", help="print every config key with its default and exit")
    sub = p.add_subparsers(dest="command")
    rec = sub.add_parser("record", help="record record.games games of record.teacher to a file")
    fitp = sub.add_parser("fit", help="fit a policy to recordings and write a policy file")
    valp = sub.add_parser("value", help="fit the value head of init to recordings, its policy unchanged")
    for q in (rec, fitp, valp):
        q.add_argument("--config", metavar="YAML", required=True, help="config file (see configs/)")
        q.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config key (repeatable)")
        q.add_argument("--out", metavar="PATH", required=True,
                       help="the recording (.npz) to write" if q is rec else "the policy file (.zip) to write")
    valp.add_argument("--data", metavar="NPZ", action="append", required=True,
                      help="a recording from `record` (repeatable)")
    valp.add_argument("--held-out", metavar="NPZ", action="append", required=True,
                      help="a recording measured, never fitted (repeatable): the epoch kept is the best on it")
    rec.add_argument("--no-progress", action="store_true", help="no progress bar")
    rec.add_argument("--actor", metavar="SPEC", help="record a DAgger round played by this agent (e.g. ppo:PATH)")
    rec.add_argument("--round", type=int, default=1, metavar="K", help="the DAgger round's number (its games' seeds)")
    fitp.add_argument("--data", metavar="NPZ", action="append", required=True,
                      help="a recording from `record` (repeatable: recordings are fitted together)")
    fitp.add_argument("--held-out", metavar="NPZ", action="append", default=[],
                      help="a recording measured, never fitted (repeatable): the held-out statistics come from "
                           "its whole games, instead of a random 5%% of the fitted decisions")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from keltis_env.core.output_files import OutputPathError, check_output_file

    from ..common.config import ConfigError
    from .config import describe, load_config
    from .network import fit_policy, fit_value
    from .record import record

    if args.describe:
        print(describe())
        return 0
    if args.command is None:
        parser.error("give a command: record, fit or value (or --describe)")
    try:
        config = load_config(args.config, args.overrides)
        try:
            check_output_file(args.out, "the recording" if args.command == "record" else "the policy file")
        except OutputPathError as exc:
            raise ConfigError(f"--out: {exc}") from None
        if args.command == "record":
            meta = record(config.env, config.record, config.seed, config.workers, args.out,
                          progress=not args.no_progress, actor=args.actor, round_=args.round)
            played = f", played by {args.actor!r}" if args.actor else ""
            print(f"recorded {meta['decisions']:,} decisions of {meta['games']} games labelled by "
                  f"{meta['teacher']!r}{played}, in {meta['seconds']:.0f} s: {args.out}")
        elif args.command == "value":
            stats = fit_value(config, args.data, args.held_out, args.out, log=lambda text: print(text, flush=True))
            print(f"policy: {args.out} (its value head's held-out squared error {stats['value_loss']:.4f}, epoch "
                  f"{stats['epoch']:.0f}; guessing the mean {stats['value_loss_mean_guess']:.4f})")
        else:
            stats = fit_policy(config, args.data, args.out, log=lambda text: print(text, flush=True),
                               held_out_paths=args.held_out)
            print(f"policy: {args.out} (teacher's move the most probable in {stats['accuracy']:.1%} of "
                  f"held-out decisions)")
    except ConfigError as exc:
        print_error_line(f"python -m training.imitate {args.command}: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
