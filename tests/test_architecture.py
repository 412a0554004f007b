"""The engine depends on nothing but the standard library (STYLE.md: one direction of
dependency). Checked by parsing the engine's source, so nothing is imported."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "keltis_env" / "engine"
ENGINE_PACKAGE = ("keltis_env", "engine")


def imported_modules(path: Path, root: Path = ENGINE) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, nested ones included.
    Relative imports are resolved as if ``root`` were the package ``keltis_env.engine``."""
    package = [*ENGINE_PACKAGE, *path.relative_to(root).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: max(len(package) - (node.level - 1), 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def allowed(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or module == "keltis_env.engine" or module.startswith("keltis_env.engine.")


def test_engine_imports_only_the_standard_library_and_itself():
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) >= 5, "the engine's sources were not found"
    bad = [
        f"{path.relative_to(ENGINE.parent)}:{line} imports {module}"
        for path in files
        for line, module in imported_modules(path)
        if not allowed(module)
    ]
    assert not bad, "the engine must not import outside the standard library:\n" + "\n".join(bad)


def test_the_import_check_sees_relative_nested_and_aliased_imports(tmp_path):
    cases = {
        "import numpy as np": ("numpy", False),
        "from ..encoding import ObservationEncoder": ("keltis_env.encoding", False),
        "def f():\n    from pettingzoo import AECEnv": ("pettingzoo", False),
        "from gymnasium.spaces import Box": ("gymnasium.spaces", False),
        "from .. import keltis_v0": ("keltis_env", False),
        "from . import state": ("keltis_env.engine", True),
        "from .constants import COLORS": ("keltis_env.engine.constants", True),
        "from collections.abc import Mapping": ("collections.abc", True),
    }
    probe = tmp_path / "probe.py"
    for source, (module, ok) in cases.items():
        probe.write_text(source + "\n")
        assert [name for _, name in imported_modules(probe, root=tmp_path)] == [module]
        assert allowed(module) is ok
