"""Rebuild a shipped policy from its recipe.

    python -m training.recipe configs/recipes/keltis_3p.yaml            # into runs/recipes/keltis_3p
    python -m training.recipe --config configs/recipes/keltis_3p.yaml --work DIR
    python -m training.recipe --resume runs/recipes/keltis_3p          # the same, from its work folder
    python -m training.recipe configs/recipes/keltis_3p.yaml --tiny    # every stage at a tiny scale, seconds
    python -m training.recipe --describe                               # the stages a recipe may hold

Every stage runs in its folder of the work folder and is skipped once done; a stopped
stage resumes from its files. At the end the recipe's policy is ``WORK/policy.zip`` (its
metadata names the recipe), compared weight for weight with the file the recipe names;
``--install`` then copies it there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..common.cli import print_error_line, quiet_threads

quiet_threads()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.recipe", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("recipe", nargs="?", metavar="RECIPE", help="a recipe file (configs/recipes/NAME.yaml)")
    p.add_argument("--config", metavar="RECIPE", help="the same as RECIPE")
    p.add_argument("--resume", metavar="WORK", help="go on with the recipe run in this work folder")
    p.add_argument("--describe", action="store_true", help="print the kinds of stages and their keys, and exit")
    p.add_argument("--work", metavar="DIR", help="the work folder (default runs/recipes/NAME, NAME-tiny with --tiny)")
    p.add_argument("--tiny", action="store_true", help="every stage at a tiny scale (a check of the recipe)")
    p.add_argument("--install", action="store_true", help="copy the policy to the recipe's output when done")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def resume_marker(folder: str) -> tuple[str, bool, Path]:
    """The recipe file, the ``--tiny`` flag and the work folder of the recipe run in
    ``folder`` (its ``recipe.json``); a folder of another run, or none, is refused naming
    what it is and the command that resumes it (:mod:`training.common.folders`)."""
    from ..common.config import ConfigError
    from ..common.folders import check_resume_folder

    work = check_resume_folder(folder, "recipe")
    marker = work / "recipe.json"
    try:
        meta = json.loads(marker.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{marker} is unreadable: {exc}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("recipe"), str) or not isinstance(meta.get("tiny"), bool):
        raise ConfigError(f"{marker} is not a recipe run's: it must hold the recipe file (\"recipe\") and whether the "
                          f"run is tiny (\"tiny\": true or false)")
    return meta["recipe"], meta["tiny"], work


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from ..common.config import ConfigError
    from .recipe import KINDS, STAGE_KEYS, load_recipe
    from .run import run_recipe, same_weights

    if args.describe:
        from . import recipe as module

        print((module.__doc__ or "").split("\n\n", 1)[1])
        for kind in KINDS:
            print(f"{kind}: name, {', '.join(sorted(STAGE_KEYS[kind]))}")
        return 0
    try:
        given = [x for x in (args.recipe, args.config) if x]
        if args.resume:
            if given:
                raise ConfigError("give a recipe or --resume WORK, not both")
            path, tiny, work = resume_marker(args.resume)
        elif len(given) != 1:
            raise ConfigError("give one recipe file (RECIPE or --config RECIPE), --resume WORK or --describe")
        else:
            path, tiny = given[0], args.tiny
            default = Path("runs") / "recipes" / (Path(path).stem + ("-tiny" if tiny else ""))
            work = Path(args.work) if args.work else default
        if args.install and tiny:
            raise ConfigError("--install copies the recipe's policy to its output, and a --tiny run makes no policy "
                              "to ship; leave out --tiny (or --install)")
        recipe = load_recipe(path)
        print(f"recipe {path}: {len(recipe.stages)} stages, work folder {work}", flush=True)
        policy = run_recipe(recipe, work, is_tiny=tiny, log=lambda text: print(text, flush=True),
                            progress=not args.no_progress)
    except ConfigError as exc:
        print_error_line(f"python -m training.recipe: {exc}")
        return 2
    except KeyboardInterrupt:
        print(f"stopped; go on with: python -m training.recipe --resume {work}", file=sys.stderr)
        return 130
    except OSError as exc:
        from keltis_env.core.output_files import is_disk_full

        if not is_disk_full(exc):
            raise
        print_error_line(f"python -m training.recipe: {exc}; the finished stages are kept: free some space, then go "
                         f"on with: python -m training.recipe --resume {work}")
        return 1
    print(f"policy: {policy}")
    if Path(recipe.output).is_file() and not tiny:
        differ = same_weights(policy, recipe.output)
        print(f"the same weights as {recipe.output}, bit for bit" if not differ else
              f"differs from {recipe.output} in {len(differ)} tensors ({', '.join(differ[:4])}...)")
    if args.install and not tiny:
        shutil.copyfile(policy, recipe.output)
        print(f"installed: {recipe.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
