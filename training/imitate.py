"""Imitation on its own: record a teacher's demonstrations once, fit policies to them.

    python -m training.imitate record --config configs/ship.yaml --out demos.npz [--set key=value ...]
    python -m training.imitate fit --config configs/ship.yaml --data demos.npz --out clone.zip [--set ...]
    python -m training.imitate value --config configs/value_2p.yaml --data games.npz --held-out held.npz --out net.zip

A run with ``pretrain.teacher`` records its teacher's games and fits the policy to them in
one go (:mod:`training.imitation`). With a search as teacher the recording is nearly all of
the cost (``ismcts`` at its default budget: about 2.4 s of a core per game), so trying
several fits (epochs, soft targets, a larger network) is cheaper from a saved recording:

* ``record`` plays ``pretrain.games`` games of ``pretrain.teacher`` exactly as a run with
  that config would (same seeds, same decisions, same order) and saves them with what they
  were recorded for: game, players, observation features, reward, teacher, seed and
  ``pretrain.soft_temperature``. A different ``seed`` gives other games. With ``--actor
  SPEC`` it records a DAgger round instead: ``pretrain.dagger_games`` games in which that
  agent (a ``ppo:`` policy, say) plays every seat in half of the games and one random seat
  in the others, the teacher labelling every decision, as a run's DAgger round ``--round K``
  (default 1) would with its own policy.
* ``fit`` fits a new network (``ppo.net_arch``, ``ppo.activation``, initialised from
  ``seed`` as a run's, or from the weights of ``pretrain.init`` where given: a warm start)
  to one or more recordings with the config's ``pretrain`` settings (``epochs``,
  ``batch_size``, ``learning_rate``, ``value_coef``, ``augment``) and writes a policy file:
  it plays as ``ppo:PATH``, and a run starts from it with ``pretrain.init: PATH`` (where
  ``pretrain.temperature`` and ``pretrain.anchor`` then apply). With
  ``pretrain.soft_temperature = 0`` the teacher's moves are the targets; with ``T > 0`` its
  values are, as ``softmax(value / T)``: a recording made at ``T0 > 0`` holds
  ``softmax(value / T0)``, which is re-tempered to ``T`` (each probability raised to
  ``T0 / T``, then normalised). The held-out statistics (the teacher's move matched, the
  losses, and the value loss of always guessing the mean) come from a random 5% of the
  fitted decisions, or with ``--held-out NPZ`` from whole recordings never fitted: the
  decisions of one game share its outcome, so only games held out whole say how the value
  head does on games it has not seen.

* ``value`` fits the value head of the policy file ``pretrain.init`` afresh (new weights,
  ``pretrain.epochs``, ``batch_size``, ``learning_rate``) to the final rewards of the
  recordings, and writes a policy file with the same policy and that head, which says the
  reward it estimates (``env.reward``). The head kept is that of the epoch with the least
  squared error on ``--held-out`` (required: whole games never fitted). A search guided by
  the file values its leaves with it (``ismcts:net=PATH,leaf=value``). Recording the
  policy's own games (``pretrain.teacher: ppo:PATH``) is fast, so the head can learn from
  far more games than a search could play (``configs/value_2p.yaml``).

The recording's game, players, features and reward must be the config's: a file recorded
for another observation or reward is refused with what differs.

The recording and its file are :mod:`training.imitation`'s; the fitted network is built
and exported as a run's (:func:`training.sb3.warm_start.fit_policy`).
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.imitate", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record pretrain.games games of pretrain.teacher to a file")
    fitp = sub.add_parser("fit", help="fit a policy to recordings and write a policy file")
    valp = sub.add_parser("value", help="fit the value head of pretrain.init to recordings, its policy unchanged")
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
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from keltis_env.core.output_files import OutputPathError, check_output_file

    from .common.config import ConfigError
    from .common.run_config import load_config
    from .imitation.record import record
    from .sb3.warm_start import fit_policy, fit_value

    try:
        config = load_config(args.config, args.overrides)
        try:
            check_output_file(args.out, "the recording" if args.command == "record" else "the policy file")
        except OutputPathError as exc:
            raise ConfigError(f"--out: {exc}") from None
        if args.command == "record":
            meta = record(config, args.out, progress=not args.no_progress, actor=args.actor, round_=args.round)
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
        print(f"python -m training.imitate {args.command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
