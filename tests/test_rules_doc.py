"""Every rule citation of the project names a section or numbered item of docs/rules.md.

A citation is ``R`` and a section number as a word of its own, with an optional sub-item:
``R7``, ``R3b``, ``R2.5``, ``R11.3``. A range such as ``R1-R10`` cites both ends, and
each end is found as a citation of its own. docs/rules.md holds an item for a citation
when a heading (``## R7 ...``, ``### R2.5 ...``) or a list item (``- R2.5 ...``,
``1. R2.5 ...``) begins with it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"
#: Where the project's own text lives, and the kinds of file that cite rules.
SCANNED = ("keltis_env", "training", "tests", "configs", "docs", "README.md", "benchmarks", "policies", "examples")
SUFFIXES = {".py", ".md", ".yaml", ".txt"}
SKIPPED_DIRS = {"__pycache__", "runs", "build"}

#: ``R`` + section (1 or 2 digits) + optional ``.N`` or lower-case letter, as a whole word:
#: ``RGB``, ``R2D2``, ``DR7`` or ``R12345`` are not citations.
CITATION = re.compile(r"(?<![\w.])R(\d{1,2})(\.\d+|[a-z])?(?![\w])")
#: A heading or list item of docs/rules.md that begins with a citation.
ITEM = re.compile(r"^(?:#{1,6}|\s*(?:[-*+]|\d+[.)]))\s+\**(R\d{1,2}(?:\.\d+|[a-z])?)(?![\w])", re.MULTILINE)
#: The old top-level rules file (the backslash keeps this file out of its own search).
OLD_RULES_FILE = re.compile(r"\bRULES\.md")


def project_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        if top.is_file():
            files.append(top)
        elif top.is_dir():
            files += [
                path
                for path in top.rglob("*")
                if path.suffix in SUFFIXES
                and path.is_file()
                and not any(part.startswith(".") or part in SKIPPED_DIRS for part in path.relative_to(ROOT).parts)
            ]
    return sorted(files)


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, citation) for every rule citation in ``text``."""
    return [
        (text.count("\n", 0, m.start()) + 1, "R" + m.group(1) + (m.group(2) or ""))
        for m in CITATION.finditer(text)
    ]


def documented_items() -> set[str]:
    return set(ITEM.findall(RULES.read_text(encoding="utf-8")))


def test_the_citation_pattern_reads_citations_and_nothing_else() -> None:
    text = "R7 (R3b) R2.5, R11.3; R1-R10 and R1–R10. RGB R2D2 DR7 R123 xR4 R9."
    assert [c for _, c in citations(text)] == ["R7", "R3b", "R2.5", "R11.3", "R1", "R10", "R1", "R10", "R9"]


def test_the_rules_page_numbers_every_section() -> None:
    items = documented_items()
    assert {f"R{n}" for n in range(1, 12)} <= items
    assert {"R2.5", "R3a", "R3b", "R8.1", "R8.2", "R11.3"} <= items


def test_every_rule_citation_has_an_item_in_the_rules_page() -> None:
    items = documented_items()
    files = project_files()
    assert RULES in files and len(files) > 100
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {cited}"
        for path in files
        for line, cited in citations(path.read_text(encoding="utf-8", errors="replace"))
        if cited not in items
    ]
    assert not missing, "rule citations with no heading or numbered item in docs/rules.md:\n" + "\n".join(missing)


def test_no_file_names_the_old_rules_file() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for path in project_files()
        for text in [path.read_text(encoding="utf-8", errors="replace")]
        for m in OLD_RULES_FILE.finditer(text)
    ]
    assert not stale, "the rules are docs/rules.md; these places name another rules file:\n" + "\n".join(stale)
