"""Agents for tests/test_serve_agents.py, beside those of tests/misbehaving_agents.py (loaded
through ``py:`` specs by this file's path): one that crashes its interpreter, and two that
are made fine when the server checks them at start-up but fail when a game's worker process
makes them."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time


def _in_a_worker() -> bool:
    return multiprocessing.parent_process() is not None


class Segfaults:
    """Its process dies of SIGSEGV, as one does when compiled code crashes."""

    def act(self, observation, action_mask):
        os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(60)


class RaisesWhenMade:
    def __init__(self) -> None:
        if _in_a_worker():
            raise RuntimeError("no model file in this process")

    def act(self, observation, action_mask):
        return 0


class DiesWhenMade:
    def __init__(self) -> None:
        if _in_a_worker():
            os._exit(5)

    def act(self, observation, action_mask):
        return 0
