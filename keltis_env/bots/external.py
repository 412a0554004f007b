"""Agents written outside the package, played as they are: the ``py:`` agent spec.

``py:MODULE:NAME`` names ``NAME`` in an importable module (``py:my_agents.greedy:Greedy``);
``py:PATH.py:NAME`` names it in a Python file (``py:examples/my_agent.py:first_legal``).
Options follow after commas, as for every bot (``py:agents.py:Greedy,depth=2,style=bold``:
integers and floats converted, the rest text). ``NAME`` may be dotted (``Outer.inner``).
Wherever an agent spec is taken (``keltis evaluate``, ``keltis play``, ``keltis ladder``,
:func:`keltis_env.bots.make_bot`), such an agent plays like a bundled bot, also in the
worker processes of an evaluation: each worker imports the code again by its module name
or file path.

What an external agent sees
    Exactly what the PettingZoo AEC environment (``keltis_v0``, ``keltis_dice_v0``, with its
    default observation) shows its seat when it is to act: ``observation``, the seat's
    float32 observation vector (``env.observe(agent)["observation"]``, the same encoder on
    the same view, the observer first), and ``action_mask``, the int8 mask of its legal
    actions (``env.observe(agent)["action_mask"]``). Both are fresh arrays the agent may
    keep. It never receives the game state or a view object. It returns an action id, an
    integer (numpy's integers included) whose mask entry is 1.

The two forms of ``NAME``
    * A plain callable ``(observation, action_mask) -> action``: a function, or any object
      with ``__call__``. It takes no options, and it should be a pure function of its
      arguments (an evaluation's games are spread over worker processes).
    * A class. ``NAME(**options)`` makes the agent, with ``seed=`` (an int, or None) when
      the constructor takes ``seed``, and ``game=`` (the game's name) and ``num_players=``
      (the number of players, None where the caller does not know it) when it takes those.
      The agent's ``act(observation, action_mask) -> action`` chooses each action. An
      optional ``reset(seed)`` (or ``reset()``) is called whenever the runner re-seeds its
      players: an evaluation, and so the ladder, does so before every game with a seed of
      that game and agent. An agent with memory or a random generator of its own resets
      them there, so that its games do not depend on which games its worker process played
      before (an evaluation's results are then the same for any number of workers).

Where the code is found
    A ``MODULE`` is imported as Python imports it, with the current folder added at the end
    of ``sys.path`` (installed packages come first). A ``PATH`` (it ends in ``.py`` or holds
    a ``/``) is relative to the current folder; the file is loaded as a module of its own,
    once per process, with its folder added at the end of ``sys.path`` so that it may import
    its neighbours.

Errors
    Every mistake raises :class:`ExternalAgentError` (a ``ValueError``) naming the spec and
    what is wrong when the agent is made: a missing file or module, a name the module does
    not define (the message lists what it defines), a name that is neither a class with
    ``act`` nor a callable taking ``(observation, action_mask)``, an option the class does
    not take, and any exception raised while importing the code or making the agent. What
    an agent returns is checked at each decision: anything but an integer, and an action
    that is not legal, raise :class:`~keltis_env.core.errors.ActionError` naming the seat,
    the action and the legal actions; the game is left unchanged.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import operator
import os
import reprlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from keltis_env.core.errors import ActionError, KeltisError, StopRequest, describe_text, describe_value

from .base import Bot

#: the prefix of an external agent's spec
PREFIX = "py:"
#: what the caller gives; a spec may not set these
_CONTEXT = ("seed", "game", "num_players")
#: the most legal actions an illegal-action message lists one by one
_SHOWN = 24


class ExternalAgentError(KeltisError):
    """A ``py:`` agent spec whose code cannot be found, loaded or made into an agent."""


def split_target(target: str, spec: str) -> tuple[str, str]:
    """``"examples/my_agent.py:first_legal"`` -> ``("examples/my_agent.py", "first_legal")``."""
    where, colon, name = target.rpartition(":")
    if not colon or not where.strip() or not name.strip():
        raise ExternalAgentError(
            f"agent spec {spec!r} names no agent; write py:MODULE:NAME or py:PATH.py:NAME "
            "(e.g. py:examples/my_agent.py:first_legal), optionally followed by ,key=value options"
        )
    return where.strip(), name.strip()


def is_file_target(where: str) -> bool:
    """A ``py:`` target's first part names a file (not a module) when it ends in ``.py`` or
    holds a path separator."""
    return where.endswith(".py") or "/" in where or os.sep in where


def source_path(spec: str) -> Path | None:
    """The file holding a ``py:`` agent's code (the given file, or the module's file),
    resolved; None for a spec that is not a ``py:`` spec. The code is not run (a module's
    parent packages are imported to find it). For a record of what was played, e.g. its
    SHA-256."""
    from . import parse_spec

    name, _ = parse_spec(spec)
    if not name.startswith(PREFIX):
        return None
    where, _ = split_target(name.removeprefix(PREFIX), spec)
    if is_file_target(where):
        return _existing_file(where, spec)
    _with_on_path(os.getcwd())
    try:
        found = importlib.util.find_spec(where)
    except (ImportError, ValueError):
        found = None
    if found is None or found.origin is None or not Path(found.origin).is_file():
        raise ExternalAgentError(f"agent spec {spec!r}: no module named {where!r} with a source file")
    return Path(found.origin).resolve()


# ---------------------------------------------------------------------- loading the code
def _with_on_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.append(folder)


def _existing_file(where: str, spec: str) -> Path:
    path = Path(where).expanduser()
    if not path.is_file():
        what = f"{where} is a folder, not a file" if path.is_dir() else f"no file {where}"
        raise ExternalAgentError(
            f"agent spec {spec!r}: {what} (looked for {path.absolute()}); py:PATH.py:NAME names a Python file, "
            "relative to the current folder"
        )
    return path.resolve()


def _load_file(where: str, spec: str) -> ModuleType:
    """The module of the Python file ``where``, loaded once per process under a name made
    from its resolved path (so that the same file is the same module, and pickling and
    dataclasses find it in ``sys.modules``)."""
    path = _existing_file(where, spec)
    digest = hashlib.blake2b(str(path).encode(), digest_size=6).hexdigest()
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    module_name = f"keltis_py_agent_{stem}_{digest}"
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ExternalAgentError(f"agent spec {spec!r}: {where} cannot be loaded as Python code")
    module = importlib.util.module_from_spec(module_spec)
    _with_on_path(str(path.parent))
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except StopRequest:
        del sys.modules[module_name]
        raise
    except BaseException as exc:
        del sys.modules[module_name]
        raise ExternalAgentError(f"agent spec {spec!r}: loading {where} failed: {failure(exc)}") from exc
    return module


def failure(exc: BaseException) -> str:
    """What the user's code did, in a few words: ``called sys.exit(5)``, ``KeyboardInterrupt
    (raised by the agent's code)``, ``ValueError: message`` (cut to a line)."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({describe_text(exc.code) if exc.code is not None else ''})"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt raised by the agent's code (not a Ctrl-C)"
    detail = describe_text(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _import_module(where: str, spec: str) -> ModuleType:
    _with_on_path(os.getcwd())
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (where == exc.name or where.startswith(exc.name + ".")):
            raise ExternalAgentError(
                f"agent spec {spec!r}: no module named {where!r} (searched sys.path and the current folder "
                f"{os.getcwd()}); for a file write its path, py:path/to/file.py:NAME"
            ) from None
        raise ExternalAgentError(
            f"agent spec {spec!r}: importing {where} failed: {type(exc).__name__}: {exc}"
        ) from exc
    except StopRequest:
        raise
    except BaseException as exc:
        raise ExternalAgentError(f"agent spec {spec!r}: importing {where} failed: {failure(exc)}") from exc


def _defined_names(module: ModuleType) -> list[str]:
    """The public classes and functions that ``module`` itself defines."""
    return sorted(
        name for name, value in vars(module).items()
        if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module.__name__
    )


def load_target(target: str, spec: str) -> Any:
    """The object that ``target`` (``MODULE:NAME`` or ``PATH.py:NAME``) names."""
    where, name = split_target(target, spec)
    module = _load_file(where, spec) if is_file_target(where) else _import_module(where, spec)
    found: Any = module
    for part in name.split("."):
        if not hasattr(found, part):
            defined = _defined_names(module)
            listing = ", ".join(defined) if defined else "no public class or function"
            raise ExternalAgentError(f"agent spec {spec!r}: {where} has no {name!r}; it defines {listing}")
        found = getattr(found, part)
    return found


# ---------------------------------------------------------------------- making the agent
def _signature(obj: Any) -> inspect.Signature | None:
    """``obj``'s signature without annotations (shown in messages as it is called)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # some builtins have none: they are taken on trust
        return None
    empty = inspect.Signature.empty
    return signature.replace(parameters=[p.replace(annotation=empty) for p in signature.parameters.values()],
                             return_annotation=empty)


def _takes_two(fn: Any) -> tuple[bool, str]:
    """Whether ``fn(observation, action_mask)`` binds, and its signature as text."""
    signature = _signature(fn)
    if signature is None:
        return True, "(...)"
    try:
        signature.bind(None, None)
    except TypeError:
        return False, str(signature)
    return True, str(signature)


def _instance(cls: type, options: dict[str, Any], context: Mapping[str, Any], spec: str) -> Any:
    """``cls(**options)`` with the context keywords its constructor takes."""
    label = cls.__name__
    signature = _signature(cls)
    params = {} if signature is None else signature.parameters
    any_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    accepted = [n for n in named if n not in _CONTEXT]
    if signature is not None and not any_keyword:
        for key in options:
            if key not in accepted:
                raise ExternalAgentError(
                    f"agent spec {spec!r}: class {label} has no option {key!r}; its options are "
                    f"{', '.join(accepted) or 'none'} (the keyword arguments of {label}{signature})"
                )
    kwargs = dict(options)
    kwargs.update({k: v for k, v in context.items() if any_keyword or k in named})
    if signature is not None:
        try:
            signature.bind(**kwargs)
        except TypeError as exc:
            raise ExternalAgentError(
                f"agent spec {spec!r}: cannot make {label}{signature} from the options {options}: {exc}"
            ) from None
    try:
        return cls(**kwargs)
    except StopRequest:
        raise
    except BaseException as exc:
        shown = ", ".join(f"{k}={describe_value(v)}" for k, v in kwargs.items())
        raise ExternalAgentError(f"agent spec {spec!r}: {label}({shown}) failed: {failure(exc)}") from exc


def _reset_hook(instance: Any, label: str, spec: str) -> Callable[[int | None], None] | None:
    """``seed -> None`` calling the agent's ``reset(seed)`` or ``reset()``; None without one."""
    reset = getattr(instance, "reset", None)
    if reset is None:
        return None
    if not callable(reset):
        raise ExternalAgentError(f"agent spec {spec!r}: {label}.reset is not a method; write reset(seed) or reset()")
    signature = _signature(reset)
    if signature is None:
        return lambda seed: reset(seed)
    for args in ((None,), ()):
        try:
            signature.bind(*args)
        except TypeError:
            continue
        return (lambda seed: reset(seed)) if args else (lambda seed: reset())
    raise ExternalAgentError(
        f"agent spec {spec!r}: {label}.reset{signature} must take the game's seed or nothing: reset(seed) or reset()"
    )


def make_external_agent(
    target: str,
    options: dict[str, Any],
    *,
    seed: int | None = None,
    game: str = "keltis",
    num_players: int | None = None,
    spec: str | None = None,
) -> ExternalAgent:
    """The agent that ``target`` (``MODULE:NAME`` or ``PATH.py:NAME``) names, made with
    ``options`` (see the module doc); ``spec`` is the spec named in errors."""
    spec = spec if spec is not None else PREFIX + target
    reserved = [key for key in options if key in _CONTEXT]
    if reserved:
        raise ExternalAgentError(
            f"agent spec {spec!r}: {reserved[0]!r} is not an agent option; the seed, the game and the number of "
            "players come from where the agent plays"
        )
    found = load_target(target, spec)
    name = split_target(target, spec)[1]
    if inspect.isclass(found):
        act = getattr(found, "act", None)
        if not callable(act):
            raise ExternalAgentError(
                f"agent spec {spec!r}: class {name} has no act(observation, action_mask) method; an agent class "
                "defines act, which returns the action"
            )
        instance = _instance(found, options, {"seed": seed, "game": game, "num_players": num_players}, spec)
        ok, text = _takes_two(instance.act)
        if not ok:
            raise ExternalAgentError(
                f"agent spec {spec!r}: {name}.act{text} has the wrong signature; it must take "
                "(observation, action_mask) and return the action"
            )
        return ExternalAgent(spec, instance, instance.act, _reset_hook(instance, name, spec), game, seed)
    if callable(found):
        ok, text = _takes_two(found)
        if not ok:
            raise ExternalAgentError(
                f"agent spec {spec!r}: {name}{text} has the wrong signature; a callable agent takes "
                "(observation, action_mask) and returns the action"
            )
        if options:
            raise ExternalAgentError(
                f"agent spec {spec!r}: {name} is a function, which takes no options (got "
                f"{', '.join(options)}); make it a class whose constructor takes them"
            )
        return ExternalAgent(spec, found, found, None, game, seed)
    hint = ""
    if callable(getattr(found, "act", None)):
        hint = f"; it is an instance of {type(found).__name__}: name its class instead"
    raise ExternalAgentError(
        f"agent spec {spec!r}: {name} = {reprlib.repr(found)} ({type(found).__name__}) is neither a class with "
        f"act(observation, action_mask) nor a callable (observation, action_mask) -> action{hint}"
    )


class ExternalAgent(Bot):
    """A ``py:`` agent under the package's bot interface: each decision encodes the seat's
    view as the AEC environment does, asks the user's code, and checks its answer (see the
    module doc)."""

    name = "py"
    #: it only encodes the view (as the AEC environment does, from the same live view) and keeps nothing of it
    accepts_live_view = True

    def __init__(
        self,
        spec: str,
        agent: Any,
        act: Callable[[Any, Any], Any],
        reset: Callable[[int | None], None] | None,
        game: str,
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)  # the agent's constructor had the seed: no reset now
        self.spec = spec
        #: the user's object: the instance of the class, or the callable
        self.agent = agent
        self._act = act
        self._reset = reset
        self.game = game
        self._encoders: dict[int, Any] = {}

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        if self._reset is not None:
            self._reset(seed)

    def encoder(self, num_players: int) -> Any:
        """The AEC environment's observation encoder for ``num_players`` (the game's default
        observation, without optional features)."""
        encoder = self._encoders.get(num_players)
        if encoder is None:
            from keltis_env.core.game import get_game

            encoder = self._encoders[num_players] = get_game(self.game).make_encoder(num_players)
        return encoder

    def observe(self, view: Any) -> tuple[Any, Any]:
        """``(observation, action_mask)`` of ``view``: what the AEC environment's
        ``observe`` returns for that seat (the mask is all zeros unless it is to act)."""
        encoder = self.encoder(view.num_players)
        return encoder.encode(view), encoder.mask(view.legal_actions)

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"{self.spec} was asked to act for a view with no legal action (not its turn)")
        observation, mask = self.observe(view)
        return self.check(self._act(observation, mask), view.player, legal)

    def check(self, answer: Any, seat: int, legal: Any) -> int:
        """``answer`` as an action id if it is a legal one; else an :class:`ActionError`
        naming the seat, the answer and the legal actions."""
        from keltis_env.core.game import get_game

        game = get_game(self.game)
        who = f"{self.spec} at seat {seat} (player_{seat})"
        action = None
        if type(answer).__name__ not in ("bool", "bool_"):  # Python's and numpy's booleans are not action ids
            try:
                action = operator.index(answer)
            except Exception:  # not an integer, or a hostile __index__: not an action id either way
                action = None
        if action is None:
            raise ActionError(
                f"{who} returned {describe_value(answer)} (a {type(answer).__name__}), not an action id: an agent "
                f"returns an integer in 0..{game.num_actions - 1} whose action_mask entry is 1 "
                "(e.g. int(np.argmax(...)))"
            )
        if action in legal:
            return action
        if 0 <= action < game.num_actions:
            what = f"action {action} ({game.action_to_string(action)}), which is not legal now"
        else:
            what = f"action {action}, which is not an action id of {game.name} (0..{game.num_actions - 1})"
        shown = ", ".join(f"{a} ({game.action_to_string(a)})" for a in list(legal)[:_SHOWN])
        more = f", ... ({len(legal)} in all)" if len(legal) > _SHOWN else ""
        raise ActionError(f"{who} returned {what}; the legal actions are {shown}{more}")

    def __repr__(self) -> str:
        return self.spec


__all__ = ["PREFIX", "ExternalAgent", "ExternalAgentError", "make_external_agent", "source_path"]
