"""The package's layout and its directions of dependency (STYLE.md), checked from the
source files' imports, so nothing is imported:

* ``keltis_env.core`` imports no game; its engine parts use the standard library only;
* every game package has the same file names for the same jobs and exports the same names;
* a game's engine modules import only the standard library, ``keltis_env.core`` and their
  own package; a game never imports another game;
* numba is imported only by the compiled kernels (``core/kernels.py`` and a game's
  ``kernels*.py``), which nothing on the Python path imports;
* no import cycles, deferred (function-level) imports included; imports under
  ``if TYPE_CHECKING:`` do not run and are not counted;
* no function of ``keltis_env`` or ``training`` (methods and nested functions included)
  is longer than :data:`MAX_FUNCTION_LINES` lines, except the flat tables of
  :data:`LONG_FUNCTIONS`.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest
from subprocess_helpers import WITHOUT_NUMBA

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "keltis_env"
GAMES_DIR = PACKAGE / "games"
GAMES = sorted(p.name for p in GAMES_DIR.iterdir() if (p / "__init__.py").is_file())
#: the engine's jobs, one module each, in every game (standard library + core + itself)
ENGINE_MODULES = ("constants", "config", "actions", "state", "view", "serialize", "record", "render_text", "game")
#: the jobs that need numpy, Pillow or more, loaded on demand
ON_DEMAND_MODULES = ("encoding", "bots")
#: what every game package exports for the same things
COMMON_EXPORTS = (
    "GAME", "GameConfig", "GameState", "GameRecord", "PlayerView", "LiveView", "Phase", "EndReason",
    "ACTION_RANGES", "NUM_ACTIONS", "action_to_string", "string_to_action", "sample_state",
    "ActionError", "ConfigError", "StateError", "RecordError",
)
#: core modules that are engine parts (the others, e.g. render_image, may use numpy)
CORE_ENGINE_MODULES = ("__init__", "errors", "state", "game", "record", "validation", "segments", "rewards", "match")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, nested ones included,
    ``if TYPE_CHECKING:`` blocks excluded. ``from package import name`` also yields
    ``package.name`` where that is a module of this repository."""
    is_package = path.name == "__init__.py"
    package = module_name(path, root).split(".")
    if not is_package:
        package = package[:-1]
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = {id(n) for block in ast.walk(tree) if _type_checking_block(block) for n in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: max(len(package) - (node.level - 1), 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            for alias in node.names:  # "from keltis_env import keltis_v0" imports a module
                sub = root.joinpath(*name.split("."), alias.name)
                if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file():
                    found.append((node.lineno, f"{name}.{alias.name}"))
    return found


def sources(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py"))


def stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(files: list[Path], allowed) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in files
        for line, module in imported_modules(path)
        if not allowed(module)
    ]


# ---------------------------------------------------------------------- layout
def test_every_game_package_has_the_same_file_names_and_is_registered() -> None:
    from keltis_env.core.game import game_names, get_game

    assert GAMES, "no game package found under keltis_env/games"
    own = sorted(n for n in game_names() if get_game(n).state_cls.__module__.startswith("keltis_env.games."))
    assert own == GAMES, "every package under keltis_env/games registers one game, under its package name"
    for game in GAMES:
        for job in ENGINE_MODULES:
            assert (GAMES_DIR / game / f"{job}.py").is_file(), f"games/{game} has no {job}.py"
        assert (GAMES_DIR / game / "encoding.py").is_file()
        assert (GAMES_DIR / game / "bots" / "__init__.py").is_file()


def _game_words() -> set[str]:
    from keltis_env.core.game import get_game

    return {word for game in GAMES for word in (game, get_game(game).env_name)}


def test_nothing_outside_the_game_packages_branches_on_a_game_name() -> None:
    """No comparison with a game's name, no table keyed by game names and no module found
    by a game's environment name, outside keltis_env/games/<game>/ (a new game is one
    package): what differs between games is data of their descriptors."""
    words = _game_words()
    bad = []
    for path in sources(PACKAGE):
        if within(module_name(path), "keltis_env.games"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Compare):
                if any(isinstance(c, ast.Constant) and c.value in words for c in [node.left, *node.comparators]):
                    bad.append(f"{where} compares with a game's name")
            elif isinstance(node, ast.Dict):
                if any(isinstance(k, ast.Constant) and k.value in words for k in node.keys):
                    bad.append(f"{where} keys a table by game names")
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                if any(isinstance(e, ast.Constant) and e.value in words for e in node.elts):
                    bad.append(f"{where} lists games by name")
            elif isinstance(node, ast.JoinedStr):
                text = ast.unparse(node)
                if "keltis_env." in text and "env_name" in text:
                    bad.append(f"{where} finds a module by a game's environment name")
    assert not bad, "\n".join(bad)


def test_no_game_registers_a_bot_every_game_already_has() -> None:
    from keltis_env.bots import COMMON_BOTS, bot_names
    from keltis_env.core.game import game_names, get_game

    for name in game_names():
        assert not set(get_game(name).bots) & set(COMMON_BOTS), name
        assert set(COMMON_BOTS) <= set(bot_names(name))
    for game in GAMES:  # and no game names an integration or a bot of the shared package
        text = (GAMES_DIR / game / "game.py").read_text()
        assert "keltis_env.integrations" not in text and "keltis_env.bots." not in text, game


@pytest.mark.parametrize("game", GAMES)
def test_every_game_exports_the_same_names_and_registers_itself(game: str) -> None:
    from keltis_env.core.game import get_game

    package = importlib.import_module(f"keltis_env.games.{game}")
    missing = [name for name in COMMON_EXPORTS if not hasattr(package, name)]
    assert not missing, f"keltis_env.games.{game} lacks {missing}"
    assert get_game(game) is package.GAME and package.GAME.name == game
    assert package.GAME.state_cls is package.GameState and package.GAME.config_cls is package.GameConfig


# ---------------------------------------------------------------------- directions
def test_core_imports_no_game_and_its_engine_parts_only_the_standard_library() -> None:
    core = PACKAGE / "core"
    files = sources(core)
    assert len(files) >= 8, "the core's sources were not found"
    bad = violations(files, lambda m: not within(m, "keltis_env") or within(m, "keltis_env.core"))
    assert not bad, "keltis_env.core must import no game:\n" + "\n".join(bad)
    engine = [core / f"{name}.py" for name in CORE_ENGINE_MODULES if (core / f"{name}.py").is_file()]
    bad = violations(engine, lambda m: stdlib(m) or within(m, "keltis_env.core"))
    assert not bad, "the core's engine parts must use the standard library only:\n" + "\n".join(bad)


@pytest.mark.parametrize("game", GAMES)
def test_a_game_engine_imports_only_the_standard_library_core_and_itself(game: str) -> None:
    own = f"keltis_env.games.{game}"
    files = [GAMES_DIR / game / f"{job}.py" for job in ENGINE_MODULES] + [GAMES_DIR / game / "__init__.py"]
    bad = violations(files, lambda m: stdlib(m) or within(m, "keltis_env.core") or within(m, own))
    assert not bad, f"the {game} engine must import only the standard library, core and itself:\n" + "\n".join(bad)


@pytest.mark.parametrize("game", GAMES)
def test_a_game_never_imports_another_game(game: str) -> None:
    others = [f"keltis_env.games.{g}" for g in GAMES if g != game]
    bad = violations(sources(GAMES_DIR / game), lambda m: not any(within(m, o) for o in others))
    assert not bad, "\n".join(bad)


def test_the_engines_run_where_numpy_gymnasium_pettingzoo_and_torch_are_missing() -> None:
    """The same, at run time, in a fresh interpreter where those packages cannot be imported."""
    import subprocess

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'gymnasium', 'pettingzoo', 'torch', 'PIL'):\n"
        "            raise ImportError(f'{name} is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import keltis_env.games.keltis, keltis_env.games.dice, keltis_env.core\n"
        "from keltis_env.bots import make_bot\n"
        "make_bot('heuristic', game='dice'); make_bot('ismcts', game='keltis')\n"
        "from keltis_env.games.keltis import GameConfig, GameState\n"
        "s = GameState.new_game(GameConfig(num_players=2), seed=1); s.apply(s.legal_actions()[0]); s.view(0)\n"
        "heavy = [m for m in ('numpy', 'gymnasium', 'pettingzoo', 'torch', 'PIL') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "", "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "", f"importing the engines loaded {out.stdout.strip()}"


# ---------------------------------------------------------------------- compiled kernels
#: the compiled kernels (numba, the optional ``fast`` extra): core's shared part, and a
#: game's ``kernels*.py`` modules; nothing else imports numba
CORE_KERNELS = PACKAGE / "core" / "kernels.py"
#: the batched kernels both games share, compiled over each game's own
CORE_BATCH_KERNELS = PACKAGE / "core" / "batch_kernels.py"
#: training's parallel kernels of a first layer over the non-zero inputs
CORE_SPARSE_KERNELS = PACKAGE / "core" / "sparse_kernels.py"
#: the only modules outside the kernels that may import them: on request (the benchmark, the
#: compiled bots, the one batch driver's modules, training's sparse first layer), and the policy
#: network's sparse first layer where numba is installed
KERNEL_USERS = (PACKAGE / "cli" / "bench.py", PACKAGE / "games" / "keltis" / "bots" / "compiled.py",
                PACKAGE / "policy" / "network.py", PACKAGE / "compiled" / "batch.py", PACKAGE / "compiled" / "table.py",
                ROOT / "training" / "common" / "sparse.py")


def is_kernel_module(path: Path) -> bool:
    return path in (CORE_KERNELS, CORE_BATCH_KERNELS, CORE_SPARSE_KERNELS) or (path.parent.parent == GAMES_DIR
                                                           and path.name.startswith("kernels"))


#: the one module besides the kernels that imports numba: the notice of a compilation, which
#: listens to numba's compile events (importing numba.core.event only where numba is installed)
COMPILE_NOTICE = PACKAGE / "core" / "compile_notice.py"


def test_numba_is_imported_only_by_the_kernel_modules() -> None:
    files = sources(PACKAGE, ROOT / "training")
    assert any(is_kernel_module(p) for p in files), "no kernel module found"
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in files
           if not is_kernel_module(path) and path != COMPILE_NOTICE
           for line, module in imported_modules(path) if within(module, "numba")]
    assert not bad, "only the kernel modules may import numba:\n" + "\n".join(bad)


def test_the_python_path_never_imports_a_kernel_module() -> None:
    kernels = {module_name(p) for p in sources(PACKAGE) if is_kernel_module(p)}
    files = [p for p in sources(PACKAGE, ROOT / "training") if not is_kernel_module(p) and p not in KERNEL_USERS]
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in files
           for line, module in imported_modules(path) if module in kernels]
    assert not bad, "the Python engine, environments, bots and training must not import the kernels:\n" + "\n".join(bad)


def test_games_environments_and_bots_run_without_loading_numba_or_the_kernels() -> None:
    import subprocess

    code = (
        "import sys\n"
        "from keltis_env.envs import make_env\n"
        "from keltis_env.core.match import play_game\n"
        "from keltis_env.bots import make_bot\n"
        "for game in ('keltis', 'dice'):\n"
        "    env = make_env(game); env.reset(seed=1)\n"
        "    for _ in range(20):\n"
        "        obs, *_ = env.last(); env.step(int(obs['action_mask'].nonzero()[0][0]))\n"
        "    play_game(game, [make_bot('heuristic', game=game), make_bot('random', game=game)], seed=3)\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if m.split('.')[0] == 'numba' or m.split('.')[-1].startswith('kernels'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"the Python path loaded {out.stdout.strip()}"


def test_without_numba_the_kernels_are_refused_in_one_line_naming_the_extra() -> None:
    import subprocess

    code = WITHOUT_NUMBA + (
        "import keltis_env.games.keltis.kernels\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    last = out.stderr.strip().splitlines()[-1]
    assert out.returncode != 0
    assert last == "ImportError: the compiled kernels need numba (the 'fast' extra): pip install 'keltis-rl[fast]'"


# ---------------------------------------------------------------------- cycles
def import_graph(packages: tuple[str, ...] = ("keltis_env", "training")) -> dict[str, set[str]]:
    files = sources(*(ROOT / p for p in packages))
    names = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        for _, module in imported_modules(path):
            if module in names and module != name:
                targets.add(module)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph, or None. Importing a package runs its ``__init__`` first, so
    an edge to ``a.b`` is not an edge to ``a`` (a module inside its own package imports
    siblings without a cycle)."""
    white, grey = set(graph), []
    on_stack: set[str] = set()

    def visit(node: str) -> list[str] | None:
        white.discard(node)
        grey.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt in on_stack:
                return [*grey[grey.index(nxt):], nxt]
            if nxt in white:
                found = visit(nxt)
                if found:
                    return found
        grey.pop()
        on_stack.discard(node)
        return None

    for start in sorted(graph):
        if start in white:
            found = visit(start)
            if found:
                return found
    return None


def package_edges_removed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop the edges from a package's ``__init__`` to its own modules and from a module
    to an ancestor package: they re-export and register, they do not form a cycle of
    behaviour (``__init__`` runs first, then its modules)."""
    out = {}
    for name, targets in graph.items():
        out[name] = {t for t in targets if not within(t, name) and not within(name, t)}
    return out


def test_no_import_cycles() -> None:
    cycle = find_cycle(package_edges_removed(import_graph()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# ---------------------------------------------------------------------- the checker itself
def test_the_import_check_sees_relative_nested_and_aliased_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "keltis_env" / "games" / "keltis"
    pkg.mkdir(parents=True)
    probe = pkg / "probe.py"
    cases = {
        "import numpy as np": "numpy",
        "from ..dice import state": "keltis_env.games.dice",
        "def f():\n    from pettingzoo import AECEnv": "pettingzoo",
        "from . import state": "keltis_env.games.keltis",
        "from .constants import COLORS": "keltis_env.games.keltis.constants",
        "from ...core.errors import ActionError": "keltis_env.core.errors",
    }
    for source, module in cases.items():
        probe.write_text(source + "\n")
        assert next(name for _, name in imported_modules(probe, root=tmp_path)) == module
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    assert [name for _, name in imported_modules(probe, root=tmp_path)] == ["typing"]


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert package_edges_removed({"p": {"p.m"}, "p.m": {"p"}}) == {"p": set(), "p.m": set()}


# ---------------------------------------------------------------------- the learner view without PettingZoo
def test_the_learner_view_renders_and_steps_without_pettingzoo() -> None:
    """The single-agent view and its board renderer need Gymnasium, not PettingZoo: in a
    fresh interpreter where PettingZoo cannot be imported, a learner env with
    ``render_mode="ansi"`` is made, reset, stepped and rendered."""
    import subprocess

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pettingzoo':\n"
        "            raise ImportError(f'{name} is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from keltis_env.envs.learner import KeltisLearnerEnv\n"
        "for game in ('keltis', 'dice'):\n"
        "    env = KeltisLearnerEnv(game=game, opponents='random', render_mode='ansi')\n"
        "    env.reset(seed=3)\n"
        "    for _ in range(5):\n"
        "        _, _, terminated, truncated, _ = env.step(int(env.action_masks().nonzero()[0][0]))\n"
        "        if terminated or truncated:\n"
        "            env.reset()\n"
        "    board = env.render()\n"
        "    assert isinstance(board, str) and board.strip(), board\n"
        "    env.close()\n"
        "print('pettingzoo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PATH": "", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", "making and stepping the learner view imported pettingzoo"


# ---------------------------------------------------------------------- function length
#: the longest function (its ``def`` line to its last line) of keltis_env and training
MAX_FUNCTION_LINES = 80
#: functions allowed to be longer, each one flat table: ``"path:name"`` -> why
LONG_FUNCTIONS: dict[str, str] = {}


def long_functions(files: list[Path], root: Path = ROOT, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``"path:name"`` -> lines of every function in ``files`` longer than ``limit``."""
    found = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found[f"{path.relative_to(root).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    long = long_functions(sources(PACKAGE, ROOT / "training"))
    over = [f"{where} ({lines} lines)" for where, lines in long.items() if where not in LONG_FUNCTIONS]
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split them): {over}"
    stale = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not stale, f"LONG_FUNCTIONS names functions no longer over {MAX_FUNCTION_LINES} lines: {stale}"


def test_the_length_check_counts_methods_and_nested_functions(tmp_path: Path) -> None:
    def body(n: int, indent: str) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(n))

    sample = tmp_path / "sample.py"
    sample.write_text("class A:\n    def method(self):\n" + body(80, " " * 8)  # 81 lines
                      + "def outer():\n    def inner():\n" + body(80, " " * 8) + "    return inner\n"
                      + "def short():\n" + body(79, " " * 4))  # 80 lines: allowed
    assert long_functions([sample], tmp_path) == {"sample.py:method": 81, "sample.py:outer": 83,
                                                  "sample.py:inner": 81}


# ---------------------------------------------------------------------- cycles between subpackages
def subpackage_graph(package: str) -> dict[str, set[str]]:
    """The import graph of ``package``'s subpackages (``training.imitate``, ``training.sb3``,
    ...): an edge where any module of one imports any module of another. A top-level module
    (``training/__init__.py``) stands for itself."""
    def part(name: str) -> str:
        return ".".join(name.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for name, targets in import_graph((package,)).items():
        graph.setdefault(part(name), set()).update(
            part(t) for t in targets if part(t) != part(name) and part(t) != package)
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    return graph


def test_no_import_cycle_between_the_training_jobs() -> None:
    """One direction between two jobs of ``training/`` (imitation below the SB3 runs that warm
    start from it, ...): a cycle of modules each importing the next is found even where no
    module imports its own importer."""
    cycle = find_cycle(subpackage_graph("training"))
    assert cycle is None, "import cycle between packages of training/: " + " -> ".join(cycle or [])


def test_the_subpackage_graph_joins_the_modules_of_a_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = {"training.a.x": {"training.b.y"}, "training.b.y": set(), "training.b.z": {"training.a.w"},
             "training.a.w": set(), "training": {"training.a.x"}}
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda packages: graph)
    assert subpackage_graph("training") == {"training.a": {"training.b"}, "training.b": {"training.a"},
                                            "training": {"training.a"}}
    assert find_cycle(subpackage_graph("training")) == ["training.a", "training.b", "training.a"]
