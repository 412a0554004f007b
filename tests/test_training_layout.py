"""The layout of training/ (see training/__init__.py and training/README.md): ``keltis_env``
never imports ``training``; the subpackages of ``training`` import each other only along
the declared directions; no module imports another's private names; modules stay short.

Every import counts, those inside functions and ``if TYPE_CHECKING:`` blocks included.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import training

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600
#: the package itself; every job's command is its package's ``__main__`` (:func:`is_entry`)
ENTRIES = {"training"}


def is_entry(module: str) -> bool:
    """A thin entry command (``training.<job>.__main__``), which may use every subpackage."""
    return module.endswith(".__main__")


def modules(package: str) -> dict[str, Path]:
    """Every module of ``package`` (a folder of this repository) by its dotted name."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every import in the module ``name``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def targets(module: str, names: list[str], known: dict[str, Path]) -> set[str]:
    """The modules an import reaches: ``module`` and, for ``from package import sub``, ``sub``."""
    out = {module}
    out |= {f"{module}.{n}" for n in names if f"{module}.{n}" in known}
    return out


def subpackage(module: str) -> str | None:
    """``common``, ``imitation``, ``sb3`` or ``rllib`` for a module inside one; else None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "training" and f"training.{parts[1]}" not in ENTRIES else None


def declared_dag() -> dict[str, set[str]]:
    """What each subpackage may import, from training/__init__.py's chains ``a <- b <- c``
    (c imports b and a, b imports a), transitively closed."""
    chains = re.findall(r"^\s+(\w+(?: <- \w+)+)\s*$", training.__doc__ or "", re.M)
    assert chains, "training/__init__.py declares no dependency chains (lines such as 'common <- sb3')"
    allowed: dict[str, set[str]] = {}
    for chain in chains:
        names = chain.split(" <- ")
        for i, name in enumerate(names):
            allowed.setdefault(name, set()).update(names[:i])
    changed = True
    while changed:
        changed = False
        for deps in allowed.values():
            more = set().union(*(allowed.get(d, set()) for d in deps)) - deps
            if more:
                deps |= more
                changed = True
    return allowed


def test_the_declared_dag_is_the_folders_and_acyclic():
    allowed = declared_dag()
    folders = {p.name for p in (ROOT / "training").iterdir() if (p / "__init__.py").is_file()}
    assert set(allowed) == folders
    assert all(name not in deps for name, deps in allowed.items()), f"a cycle in {allowed}"
    readme = (ROOT / "training" / "README.md").read_text()
    for chain in re.findall(r"^\s+(\w+(?: <- \w+)+)\s*$", training.__doc__ or "", re.M):
        assert chain in readme, f"training/README.md does not declare {chain!r}"


def test_keltis_env_never_imports_training():
    known = modules("keltis_env")
    bad = [f"{known[name].relative_to(ROOT)}:{line} imports {module}"
           for name in known for line, module, _ in imports(name, known[name])
           if module == "training" or module.startswith("training.")]
    assert not bad, "\n".join(bad)


def test_the_training_subpackages_import_along_the_declared_dag():
    allowed = declared_dag()
    known = modules("training")
    bad = []
    for name, path in known.items():
        mine = subpackage(name)
        if mine is None or is_entry(name):
            continue  # the entry commands may use every subpackage
        for line, module, names in imports(name, path):
            for target in targets(module, names, known):
                theirs = subpackage(target)
                if is_entry(target) or (theirs not in (None, mine) and theirs not in allowed[mine]):
                    bad.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {target}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", ["training", "keltis_env"])
def test_no_module_imports_another_modules_private_names(package):
    known = {**modules("training"), **modules("keltis_env")}
    bad = []
    for name, path in modules(package).items():
        for line, module, names in imports(name, path):
            if module.split(".")[0] not in ("training", "keltis_env"):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [part for part in module.split(".") if part.startswith("_") and not part.startswith("__")]
            if private and module in known:
                bad.append(f"{path.relative_to(ROOT)}:{line}: from {module} import {', '.join(private)}")
    assert not bad, "\n".join(bad)


def test_every_training_module_is_short():
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in sorted((ROOT / "training").rglob("*.py"))
            if (n := len(path.read_text().splitlines())) >= MAX_LINES]
    assert not long, "\n".join(long)


def test_the_checks_see_nested_relative_and_private_imports(tmp_path, monkeypatch):
    """The scanner itself: an import inside a function, a relative one and a private name."""
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from ..common.config import _hidden\n    import training.sb3.trainer\n")
    found = imports("training.rllib.m", path)
    assert (2, "training.common.config", ["_hidden"]) in found
    assert (3, "training.sb3.trainer", []) in found
    assert subpackage("training.sb3.trainer") == "sb3" and is_entry("training.train.__main__")
    assert "sb3" not in declared_dag()["rllib"]


@pytest.mark.parametrize("job", ["train", "imitate", "exit", "bench", "budget", "recipe"])
def test_every_job_is_a_package_command_that_describes_its_config(job, capsys):
    """``python -m training.<job>`` is the package's ``__main__``, and ``--describe`` prints
    what its config (or recipe) holds, without a config file. (``training.rllib`` needs Ray:
    tests/test_rllib.py.)"""
    import importlib

    assert (ROOT / "training" / job / "__main__.py").is_file()
    main = importlib.import_module(f"training.{job}.__main__").main
    assert main(["--describe"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") > 5 and ("seed" in out or "stages" in out)
