"""``keltis policy PATH``: what a policy file is for and how it plays (its metadata,
:mod:`keltis_env.policy.format`), and with ``--symmetry NAME`` (or ``none``) the relabellings
it plays averaged over, written into its metadata (format 3; ``none``: format 2 as before).

The file is checked as ``ppo:PATH`` checks it, by the same function
(:func:`keltis_env.policy.load_policy`: metadata, weights and network): a file that ``ppo:``
refuses (missing, corrupt, no or damaged weights, tensors missing or of the wrong shape,
NaN or infinite weights, metadata its game's encoder does not fit, an activation the bot
does not run), or a relabelling its game does not have, is refused with one line and exit
status 2, the file unchanged.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from keltis_env.cli.arguments import print_error

HELP = "show what a policy file is for and how it plays; --symmetry sets the relabellings it plays averaged over"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="a policy zip (e.g. policies/keltis_2p.zip)")
    p.add_argument("--symmetry", metavar="NAME",
                   help="write into the file that it plays by the mean of its logits over the game's relabellings "
                        "NAME (the card game: colours, colours_affine), or none to play the network alone")
    p.add_argument("--json", action="store_true", help="print the metadata as one JSON object")
    p.epilog = ("examples:\n  keltis policy policies/keltis_2p.zip\n"
                "  keltis policy my_policy.zip --symmetry colours_affine")
    p.formatter_class = argparse.RawDescriptionHelpFormatter


def recipe_of(path: str, recorded: str = "") -> str:
    """The recipe file that made the policy at ``path``: the one its metadata names, else the
    recipe under ``configs/recipes/`` (of the working folder or of this checkout) whose
    ``output`` is that file ("": none found)."""
    if recorded:
        return recorded
    from pathlib import Path

    import yaml

    target = Path(path).resolve()
    roots = dict.fromkeys([Path.cwd(), Path(__file__).resolve().parents[2]])
    for root in roots:
        for recipe in sorted((root / "configs" / "recipes").glob("*.yaml")):
            try:
                data = yaml.safe_load(recipe.read_text())
            except (OSError, yaml.YAMLError):
                continue
            output = data.get("output") if isinstance(data, dict) else None
            if isinstance(output, str) and (root / output).resolve() == target:
                return str(recipe.relative_to(root))
    return ""


def describe(path: str) -> dict[str, Any]:
    """The metadata of the policy file at ``path`` as plain values (its SHA-256 included),
    the file first checked as ``ppo:PATH`` loads it (:func:`keltis_env.policy.load_policy`)."""
    from keltis_env.core.output_files import sha256_file
    from keltis_env.policy import load_policy

    info = load_policy(path).info
    symmetry = info.play_symmetry()
    relabellings = symmetry.size if symmetry is not None else 1
    return {
        "path": path, "sha256": sha256_file(path), "game": info.game, "num_players": info.num_players,
        "observation_size": info.observation_size, "features": list(info.features), "num_actions": info.num_actions,
        "activation": info.activation, "metadata": not info.inferred, "value_reward": info.value_target,
        "value_recorded": info.value_recorded, "symmetry": info.symmetry or "none", "relabellings": relabellings,
        "recipe": recipe_of(path, info.recipe),
    }


def run(args: argparse.Namespace) -> int:
    from keltis_env.core.errors import KeltisError
    from keltis_env.policy import load_policy, write_policy_info

    try:
        if args.symmetry is not None:
            info = load_policy(args.path).info  # a file ppo: refuses is left as it is
            if info.inferred:
                raise KeltisError(f"{args.path} has no metadata; add it first with "
                                  "keltis_env.policy.write_policy_info(path, game, num_players)")
            write_policy_info(args.path, info.game, info.num_players, info.features, info.value_reward,
                              symmetry="" if args.symmetry == "none" else args.symmetry, recipe=info.recipe)
        facts = describe(args.path)
    except (KeltisError, ValueError, OSError) as exc:
        print_error("keltis policy", exc)
        return 2
    if args.json:
        print(json.dumps(facts))
        return 0
    features = f" + features {', '.join(facts['features'])}" if facts["features"] else ""
    plays = ("the network's logits" if facts["symmetry"] == "none" else
             f"the mean of its logits over {facts['relabellings']} relabellings ({facts['symmetry']})")
    value = facts["value_reward"] + ("" if facts["value_recorded"] else " (not recorded: assumed)")
    print(f"{facts['path']}  sha256 {facts['sha256']}")
    print(f"  a {facts['num_players']}-player {facts['game']} policy"
          f"{'' if facts['metadata'] else ' (no metadata: inferred from its sizes)'}")
    print(f"  observation: {facts['observation_size']} values{features}; {facts['num_actions']} actions; "
          f"hidden activation {facts['activation']}")
    print(f"  value head: the {value} reward")
    print(f"  plays (ppo:PATH): {plays}")
    if facts["recipe"]:
        print(f"  made by: {facts['recipe']} (python -m training.recipe {facts['recipe']} rebuilds it)")
    return 0
