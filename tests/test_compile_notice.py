"""The first compiled run is not silent: while numba compiles, a notice says so (once,
about how long), with progress; kernels loaded from the cache print nothing."""

from __future__ import annotations

import io
import sys

import pytest

from keltis_env.core import compile_notice as notice_module
from keltis_env.core.compile_notice import COLD_COMPILE_SECONDS, compile_notice


def _fresh_kernel():  # type: ignore[no-untyped-def]
    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def add(a, b):  # type: ignore[no-untyped-def]
        return a + b

    return add


def test_a_compilation_is_announced_with_its_expected_time_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _fresh_kernel()
    monkeypatch.setattr(notice_module, "LINE_SECONDS", 0.0)  # a progress line at every kernel
    out = io.StringIO()
    with compile_notice(out):
        assert kernel(2, 3) == 5
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"compiling kernels (once, about {COLD_COMPILE_SECONDS} s on a two-core machine; cached on "
                        "disk after) ...")
    assert any(line.startswith("  1 kernels compiled, ") for line in lines[1:-1])
    assert lines[-1].startswith("compiled 1 kernels in ") and lines[-1].endswith("later runs load them from the cache")


def test_the_last_line_counts_the_compilations_not_the_work_after_them(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    notice = notice_module._Notice(out)
    clock = iter([100.0, 103.0, 5000.0])  # the compile starts, ends; the block ends hours later
    monkeypatch.setattr(notice_module.time, "monotonic", lambda: next(clock))
    notice.on_start(None)
    notice.on_end(None)
    notice.finish()
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("compiled 1 kernels in 3 s"), last


def test_kernels_already_compiled_print_nothing() -> None:
    kernel = _fresh_kernel()
    kernel(1, 1)
    out = io.StringIO()
    with compile_notice(out):
        assert kernel(2, 3) == 5
    assert out.getvalue() == ""


def test_without_numba_the_block_runs_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # importlib finds no numba
    out = io.StringIO()
    ran = []
    with compile_notice(out):
        ran.append(True)
    assert ran == [True] and out.getvalue() == ""
