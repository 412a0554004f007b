"""Every repository path the documentation names exists.

The pages are scanned for paths in backticks (inline spans and fenced blocks, where they
are relative to the repository root) and in Markdown links (relative to the page). A path
is a word that starts with a top-level folder of the repository (``keltis_env/``,
``training/``, ``configs/``, ...) or is a top-level file (``Makefile``, ...); a word inside
a command or an agent spec counts too (``--config configs/train/default.yaml``,
``ppo:policies/keltis_2p.zip``). Placeholders (``NAME``, ``PATH``, ``*``, ``...``, ``<``,
``{``, ``runs/``, ...) and URLs are skipped.

A dated log (``docs/log/``) keeps commands as they were run, so it may name paths that have
moved since; it declares them in one comment, ``<!-- paths of that time: A B ... -->``, and
the test holds the declaration to the page: each declared path is named there and missing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Folders a path in the docs may start with, and files of the top level it may name.
PREFIXES = ("keltis_env/", "training/", "configs/", "docs/", "tests/", "policies/", "benchmarks/", "examples/")
TOP_FILES = ("Makefile", "pyproject.toml", "CHANGELOG.md", "LEADERBOARD.md", "README.md", "constraints.txt")
#: Text that marks a placeholder, not a path of the repository.
PLACEHOLDERS = ("NAME", "PATH", "RUN", "DIR", "TRACK", "FILE", "MODULE", "CHECKPOINT", "BUDGET", "VARIANT",
                "*", "...", "<", "{", "runs/", "/tmp", "$")

FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
WORD = re.compile(r"[^\s:=,()\[\]\"'|]+")
#: Options whose value is a file a command writes, which need not exist yet.
OUTPUTS = ("--out", "--json", "--csv", "--records", "--frames", "--save", "--record", "--markdown")
#: Where a page may declare the paths of that time, no longer in the repository.
LOGS = ROOT / "docs" / "log"
OF_THAT_TIME = re.compile(r"<!-- paths of that time: ([^>]*?) -->")


def pages() -> list[Path]:
    """The documentation pages whose paths are checked."""
    found = [ROOT / "README.md", ROOT / "training" / "README.md", ROOT / "LEADERBOARD.md",
             ROOT / "policies" / "README.md"]
    found += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "benchmarks").rglob("*.md"))
    return [page for page in found if page.is_file()]


def candidate(word: str) -> str | None:
    """The repository path ``word`` names (without its ``#anchor``), or None where it
    names none: not a path, a URL, or a placeholder."""
    word = word.split("#")[0].rstrip(".;")
    if not word or "://" in word or any(mark in word for mark in PLACEHOLDERS):
        return None
    if re.search(r"-v\d+$", word):  # a Gymnasium id (keltis_env/KeltisLearner-v0)
        return None
    if word.startswith(PREFIXES) or word in TOP_FILES:
        return word
    return None


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def named_paths(text: str) -> list[tuple[int, str, str]]:
    """Every path ``text`` names: (line, path, how to resolve it: "root" or "page")."""
    found: list[tuple[int, str, str]] = []

    def words(source: str, chunk: str, start: int) -> None:
        previous = ""
        for m in WORD.finditer(chunk):
            word = m.group(0)
            path = None if previous in OUTPUTS or "://" in chunk[max(0, m.start() - 8):m.end()] else candidate(word)
            if path:
                found.append((line_of(source, start + m.start()), path, "root"))
            previous = word

    for m in FENCE.finditer(text):
        words(text, m.group(1), m.start(1))
    # the fenced blocks blanked out, line for line, so that offsets give the same lines
    outside = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for m in SPAN.finditer(outside):
        words(outside, m.group(1), m.start(1))
    for m in LINK.finditer(outside):
        target = m.group(1).split("#")[0]
        if target and "://" not in target and not target.startswith("mailto:"):
            found.append((line_of(outside, m.start(1)), target, "page"))
    return found


def of_that_time(page: Path, text: str) -> set[str]:
    """The paths a dated log declares as moved since (none for other pages)."""
    if not page.is_relative_to(LOGS):
        return set()
    return {path for m in OF_THAT_TIME.finditer(text) for path in m.group(1).split()}


def missing_paths(page: Path, text: str) -> list[str]:
    """``file:line: path`` for every path of ``text`` (the page ``page``) that does not exist,
    and for every path the page declares of that time that it does not name or that exists."""
    missing = []
    declared = of_that_time(page, text)
    named = set()
    for line, path, base in named_paths(text):
        where = ROOT if base == "root" else page.parent
        named.add(path)
        if not (where / path).exists() and path not in declared:
            missing.append(f"{page.relative_to(ROOT)}:{line}: {path}")
    for path in sorted(declared):
        if path not in named or (ROOT / path).exists():
            why = "it exists" if (ROOT / path).exists() else "not named"
            missing.append(f"{page.relative_to(ROOT)}: declared of that time, but {why}: {path}")
    return missing


def test_every_path_named_in_the_docs_exists() -> None:
    missing = [entry for page in pages() for entry in missing_paths(page, page.read_text(encoding="utf-8"))]
    assert not missing, "the docs name paths that do not exist:\n" + "\n".join(missing)


def test_the_scan_finds_paths_and_skips_placeholders() -> None:
    page = ROOT / "docs" / "example.md"
    text = ("See `training/no_such_module.py` and `keltis_env/core/game.py`.\n"
            "```sh\npython -m training.train --config configs/no_such.yaml\n```\n"
            "`ppo:policies/missing.zip,symmetry=none`, [a page](no_such_page.md), [ok](cli.md#x),\n"
            "`configs/recipes/NAME.yaml`, `runs/x/policy.zip`, `docs/*.md`, `tests/<game>/`, "
            "`https://example.com/docs/x.md`, `Makefile`, `training.sb3.pipeline`,\n"
            "`keltis ladder random --json benchmarks/results/new.json`, `keltis_env/KeltisLearner-v0`.\n")
    assert missing_paths(page, text) == [
        "docs/example.md:3: configs/no_such.yaml",
        "docs/example.md:1: training/no_such_module.py",
        "docs/example.md:5: policies/missing.zip",
        "docs/example.md:5: no_such_page.md",
    ]


def test_a_dated_log_may_name_the_paths_of_its_time_it_declares() -> None:
    text = ("<!-- paths of that time: configs/gone.yaml configs/train/default.yaml configs/unnamed.yaml -->\n"
            "`python -m training.train --config configs/gone.yaml` and `configs/train/default.yaml`; "
            "`configs/other_gone.yaml`.\n")
    assert missing_paths(LOGS / "2026-01-example.md", text) == [
        "docs/log/2026-01-example.md:2: configs/other_gone.yaml",
        "docs/log/2026-01-example.md: declared of that time, but it exists: configs/train/default.yaml",
        "docs/log/2026-01-example.md: declared of that time, but not named: configs/unnamed.yaml",
    ]
    assert missing_paths(ROOT / "docs" / "example.md", text) == [
        "docs/example.md:2: configs/gone.yaml",
        "docs/example.md:2: configs/other_gone.yaml",
    ]
