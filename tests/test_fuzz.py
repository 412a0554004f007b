"""Fuzzing the state and record readers of every registered game, and what a user types:
agent specs, ``--set`` overrides and training config files (at the end of this module).

Valid state dicts and game records are taken from random playouts, then mutated: parts
deleted, duplicated, moved or swapped (cards between hands, piles and rows, figures,
markers, actions), numbers changed, values replaced by other values of their field or by
values of another type, keys added, deleted and renamed. Every mutant must either be
refused with the package's own error type (a :class:`~keltis_env.core.errors.KeltisError`)
and a message, leaving the dict unchanged, or be a valid position: it round-trips through
its dict form and plays to the end with random legal actions, every invariant holding on
the way (a non-empty legal set until the end, scores within the game's declared bounds,
no more decisions than the declared maximum). Any other exception fails the test.

Hypothesis draws the seeds (and reports a failing one); the playouts and mutations follow
from them with ``random.Random``, so that every field of a document is as likely a
target as any other (hypothesis' own draws favour simple values, which would leave most
of a long document untouched). A failing example notes the mutations and the mutant.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import keltis_env  # noqa: F401  (registers every game)
from keltis_env.core.errors import KeltisError
from keltis_env.core.game import GameDescriptor, game_names, get_game, load_record

#: Deterministic, a few seconds per game and reader; a deeper, random search runs with
#: e.g. ``KELTIS_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz.py``.
EXAMPLES = int(os.environ.get("KELTIS_FUZZ_EXAMPLES", "400"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="KELTIS_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
seeds = st.integers(0, 2**64 - 1)

Path = tuple[Any, ...]
#: mutation kinds; changed values keep more mutants valid (and so played to the end)
#: than changed keys, hence their weight
KINDS = ("number", "number", "replace", "replace", "move", "duplicate", "swap", "delete", "add_key", "rename_key")


# ---------------------------------------------------------------------- valid documents
def layout_option(game: GameDescriptor) -> str | None:
    """The name of the game's board-layout option (``tile_layout``, ``bonus_layout``)."""
    return next((k for k in game.make_config().to_dict() if k.endswith("_layout")), None)


def random_config(game: GameDescriptor, rng: random.Random) -> Any:
    options: dict[str, Any] = {}
    layout = layout_option(game)
    if layout is not None and rng.random() < 0.3:
        options[layout] = "random"
    if rng.random() < 0.3:
        options["max_turns"] = rng.randint(1, 60)
    return game.make_config(num_players=rng.randint(game.min_players, game.max_players), **options)


def playout(game: GameDescriptor, rng: random.Random) -> tuple[Any, list[int], Any]:
    """(start state, actions, state after them) of a random game, cut anywhere."""
    state = game.new_state(random_config(game, rng), rng.randrange(2**32))
    start = state.clone()
    actions = []
    for _ in range(rng.choice([0, 3, 20, 60, 150, 10_000])):
        if state.is_over:
            break
        legal = state.legal_actions()
        actions.append(legal[rng.randrange(len(legal))])
        state.apply(actions[-1])
    return start, actions, state


def state_document(game: GameDescriptor, rng: random.Random) -> dict[str, Any]:
    return playout(game, rng)[2].to_dict()


def record_document(game: GameDescriptor, rng: random.Random) -> dict[str, Any]:
    """A record from a seed, or from an explicit start position."""
    start, actions, _ = playout(game, rng)
    if rng.random() < 0.5:
        record, state = game.record_cls.start(start.config, rng.randrange(2**32))
        for _ in range(len(actions)):
            if state.is_over:
                break
            legal = state.legal_actions()
            record.actions.append(legal[rng.randrange(len(legal))])
            state.apply(record.actions[-1])
    else:
        record = game.record_cls(config=start.config, start_state=start.to_dict(), actions=actions)
    if rng.random() < 0.5:
        record.players = [f"bot{i}" for i in range(start.num_players)]
    data: dict[str, Any] = record.to_dict()
    return data


# ---------------------------------------------------------------------- mutations
def nodes(doc: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) of a JSON-like document, the root included."""
    yield path, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from nodes(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from nodes(value, (*path, i))


def at(doc: Any, path: Path) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def field(path: Path) -> tuple[str, ...]:
    """The field a path leads to, list positions left out: ``players.figures.row``."""
    return tuple(str(k) for k in path if not isinstance(k, int))


@functools.cache
def vocabulary(name: str) -> dict[tuple[str, ...], list[Any]]:
    """Per field, the values it takes in valid documents of the game (every phase and
    end, every player count, records included): replacing a value by another one of
    its field gives plausible mutants (a phase for another, a card for another)."""
    game = get_game(name)
    found: dict[tuple[str, ...], set[str]] = {}
    rng = random.Random(0)
    for n in range(game.min_players, game.max_players + 1):
        for seed in range(12):
            config = game.make_config(num_players=n, max_turns=25 if seed % 3 == 0 else 500)
            record, state = game.record_cls.start(config, seed)
            docs = [state.to_dict()]
            while not state.is_over:
                legal = state.legal_actions()
                record.actions.append(legal[rng.randrange(len(legal))])
                state.apply(record.actions[-1])
                if rng.random() < 0.05 or state.is_over:
                    docs.append(state.to_dict())
            docs.append(record.to_dict())
            for doc in docs:
                for path, value in nodes(doc):
                    if value is None or isinstance(value, (str, int, float)):
                        found.setdefault(field(path), set()).add(json.dumps(value))
    return {key: [json.loads(v) for v in sorted(values)] for key, values in found.items()}


def pick(rng: random.Random, paths: list[Path]) -> Path:
    """One of ``paths``: a field first, each equally likely, then one of its places, so
    that a player's figure row is as likely a target as a card of the draw pile."""
    by_field: dict[tuple[str, ...], list[Path]] = {}
    for path in paths:
        by_field.setdefault(field(path), []).append(path)
    return rng.choice(by_field[rng.choice(sorted(by_field))])


def any_value(rng: random.Random, doc: Any, depth: int = 0) -> Any:
    """A value of any JSON type (or a part of the document itself)."""
    roll = rng.randrange(10 if depth == 0 else 7)
    if roll == 0:
        return None
    if roll == 1:
        return rng.random() < 0.5
    if roll == 2:
        return rng.randint(-3, 12)
    if roll == 3:
        return rng.choice([-(2**63), -1000, 2**31, 2**64, 10**30])
    if roll == 4:
        return rng.choice([0.0, 1.5, -2.0, 1e300])
    if roll == 5:
        return "".join(rng.choice("abcdered 71\u00b2\u00e9") for _ in range(rng.randint(0, 6)))
    if roll == 6:
        return rng.choice([k for _, v in nodes(doc) if isinstance(v, dict) for k in v] or [""])
    if roll == 7:
        return copy.deepcopy(at(doc, rng.choice([p for p, v in nodes(doc) if p and isinstance(v, (dict, list))])))
    if roll == 8:
        return [any_value(rng, doc, depth + 1) for _ in range(rng.randint(0, 3))]
    return {str(any_value(rng, doc, depth + 1)): any_value(rng, doc, depth + 1) for _ in range(rng.randint(0, 2))}


def new_value(rng: random.Random, doc: Any, path: Path, name: str) -> Any:
    """What a value is replaced by: a value of the same field, or anything."""
    same_field = vocabulary(name).get(field(path))
    if same_field and rng.random() < 0.6:
        return rng.choice(same_field)
    return any_value(rng, doc)


def key_name(rng: random.Random, doc: Any) -> Any:
    keys = sorted({str(k) for _, v in nodes(doc) if isinstance(v, dict) for k in v})
    return rng.choice(keys) if rng.random() < 0.7 else any_value(rng, doc, depth=1)


def mutate(rng: random.Random, doc: dict[str, Any], name: str) -> str:
    """Change ``doc`` in place by one random mutation; returns what it did."""
    found = dict(nodes(doc))
    every = [p for p in found if p]
    lists = [p for p, v in found.items() if isinstance(v, list)]
    items = [p for p in every if isinstance(found[p[:-1]], list)]
    dicts = [p for p, v in found.items() if isinstance(v, dict)]
    numbers = [p for p in every if type(found[p]) is int]
    long_lists = [p for p in lists if len(found[p]) > 1]
    kind = rng.choice(KINDS)
    if kind == "delete":
        path = pick(rng, every)
        del at(doc, path[:-1])[path[-1]]
    elif kind in ("duplicate", "move") and items:
        path = pick(rng, items)
        value = copy.deepcopy(at(doc, path))
        if kind == "move":
            del at(doc, path[:-1])[path[-1]]
            lists = [p for p, v in nodes(doc) if isinstance(v, list)]
        target_path = pick(rng, lists)
        target = at(doc, target_path)
        target.insert(rng.randint(0, len(target)), value)
        path = (*path, "->", *target_path)
    elif kind == "swap" and long_lists:
        path = pick(rng, long_lists)
        seq = at(doc, path)
        i, j = rng.randrange(len(seq)), rng.randrange(len(seq))
        seq[i], seq[j] = seq[j], seq[i]
    elif kind == "number" and numbers:
        path = pick(rng, numbers)
        old = at(doc, path)
        at(doc, path[:-1])[path[-1]] = rng.choice([old + rng.randint(-2, 2), rng.randint(-1, 12), any_value(rng, doc)])
    elif kind == "add_key":
        path = pick(rng, dicts)
        at(doc, path)[key_name(rng, doc)] = any_value(rng, doc)
    elif kind == "rename_key" and any(found[p] for p in dicts):
        path = pick(rng, [p for p in dicts if found[p]])
        where = at(doc, path)
        where[key_name(rng, doc)] = where.pop(rng.choice(list(where)))
    else:
        kind = "replace"
        path = pick(rng, every)
        at(doc, path[:-1])[path[-1]] = new_value(rng, doc, path, name)
    return f"{kind} {'.'.join(map(str, path))}"


def mutant(rng: random.Random, doc: dict[str, Any], name: str) -> dict[str, Any]:
    done = [mutate(rng, doc, name) for _ in range(rng.choice([1, 1, 2, 3]))]
    for change in done:
        event(f"mutation: {change.split()[0]}")
    note(f"mutations: {done}")
    note(f"mutant: {json.dumps(doc)}")
    return doc


# ---------------------------------------------------------------------- the checks
def refused(read: Any, data: Any) -> bool:
    """Whether ``read(data)`` refuses ``data`` with the package's error and a message,
    leaving it unchanged; any other exception propagates and fails the test."""
    before = copy.deepcopy(data)
    try:
        read(data)
    except KeltisError as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        assert data == before, "a refused dict was changed"
        event(f"refused: {type(exc).__name__}")
        return True
    assert data == before, "reading a dict changed it"
    event("accepted")
    return False


def plays_to_the_end(game: GameDescriptor, state: Any, rng: random.Random) -> None:
    """Round trips, then random legal play to the end with the invariants checked."""
    assert game.state_from_dict(json.loads(json.dumps(state.to_dict()))) == state
    assert state.clone() == state
    bound = game.max_game_length(state.config)
    decisions = 0
    while not state.is_over:
        legal = state.legal_actions()
        assert legal and legal == sorted(set(legal)), f"legal actions {legal} in {state!r}"
        assert all(0 <= a < game.num_actions for a in legal)
        assert all(game.min_score <= v <= game.max_score for v in state.scores()), state.scores()
        state.apply(legal[rng.randrange(len(legal))])
        decisions += 1
        assert decisions <= bound, f"more than {bound} decisions"
    assert state.legal_actions() == []
    assert state.terminated != state.truncated
    assert all(game.min_score <= v <= game.max_score for v in state.scores()), state.scores()
    assert game.state_from_dict(state.to_dict()) == state


GAMES = game_names()


@pytest.mark.parametrize("name", GAMES)
def test_mutated_state_dicts_are_refused_or_play_to_the_end(name: str) -> None:
    game = get_game(name)

    @SETTINGS
    @given(seed=seeds)
    def run(seed: int) -> None:
        rng = random.Random(seed)
        data = mutant(rng, state_document(game, rng), name)
        if not refused(game.state_from_dict, data):
            plays_to_the_end(game, game.state_from_dict(data), rng)

    run()


@pytest.mark.parametrize("name", GAMES)
def test_mutated_game_records_are_refused_or_play_to_the_end(name: str) -> None:
    game = get_game(name)

    @SETTINGS
    @given(seed=seeds)
    def run(seed: int) -> None:
        rng = random.Random(seed)
        data = mutant(rng, record_document(game, rng), name)
        if not refused(load_record, data):
            record = load_record(data)
            assert load_record(json.loads(json.dumps(record.to_dict()))).actions == record.actions
            plays_to_the_end(get_game(record.GAME), record.replay(), rng)

    run()


@pytest.mark.parametrize("name", GAMES)
def test_the_unmutated_documents_are_valid(name: str) -> None:
    """The fuzzers' starting points are valid: every refusal above is the mutation's."""
    game = get_game(name)

    @settings(max_examples=30, deadline=None, derandomize=True, database=None)
    @given(seed=seeds)
    def run(seed: int) -> None:
        rng = random.Random(seed)
        plays_to_the_end(game, game.state_from_dict(state_document(game, rng)), rng)
        plays_to_the_end(game, load_record(record_document(game, rng)).replay(), rng)

    run()


@pytest.mark.parametrize("name", GAMES)
def test_the_mutations_reach_every_field_and_keep_some_mutants_valid(name: str) -> None:
    """The fuzzer's own coverage: over 800 mutations of state dicts, every field is
    changed at least once, and a share of the mutants is still accepted (and so played
    to the end above)."""
    game = get_game(name)
    rng = random.Random(1)
    bases = [state_document(game, rng) for _ in range(20)]
    fields = {field(p) for doc in bases for p, _ in nodes(doc) if p}
    touched: set[tuple[str, ...]] = set()
    accepted = 0
    for _ in range(800):
        doc = copy.deepcopy(rng.choice(bases))
        _, _, path = mutate(rng, doc, name).partition(" ")
        touched.add(tuple(k for k in path.split("->")[0].split(".") if k and not k.lstrip("-").isdigit()))
        try:
            game.state_from_dict(doc)
            accepted += 1
        except KeltisError:
            pass
    assert fields <= touched, f"never mutated: {sorted(fields - touched)}"
    assert 0.05 < accepted / 800 < 0.8, accepted


# ---------------------------------------------------------------------- user input: specs, --set, config files
# What a user types is fuzzed from pieces of valid input (bot and option names, dotted
# config keys, YAML values) mixed with bad ones (non-finite and huge numbers, repeated
# keys, stray separators, random text). The answer is a valid object or the package's
# error with a message; never another exception, and never a search that cannot end.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE = os.path.join(ROOT, "configs", "train", "smoke.yaml")
INPUT_SETTINGS = settings(SETTINGS, max_examples=max(EXAMPLES // 2, 50))

NUMBERS = ("0", "1", "-1", "2", "8", "0.5", "-0.0", "3e-4", "1e6", "1e999", "-1e999", "nan", "NaN", "inf", "-inf",
           "Infinity", "99999999999999999999", "0x10", "1_000", "")
WORDS = ("", " ", "x", "random", "true", "ppo", "=", ":", ",", "a=b", "é", "\n", "policy.zip")


def spec_texts(game: str) -> st.SearchStrategy[str]:
    from keltis_env.bots import bot_names

    own = [n for n in bot_names(game) if n not in ("rllib", "ppo")]  # rllib needs ray: not fuzzed here
    names = [*sorted(own, key=lambda n: n != "ismcts"), "ppo", "", "nobody"]
    keys = ["iterations", "seconds", "top_k", "depth", "stage", "prior", "win_bonus", "margin", "paths", "gap",
            "open_cards", "large_cards", "extra_turn_value", "win_value", "behind_penalty", "temperature", "sample",
            "path", "game", "num_players", "", "nokey"]
    item = st.one_of(
        st.builds(lambda k, v: f"{k}={v}", st.sampled_from(keys), st.sampled_from(NUMBERS + WORDS)),
        st.sampled_from(WORDS),
        st.text(max_size=8),
    )
    built = st.builds(lambda n, items, sep: n + ((sep or ":") + ",".join(items) if items else sep),
                      st.sampled_from(names), st.lists(item, max_size=4), st.sampled_from(["", ":", ": "]))
    return st.one_of(built, built, built, st.text(max_size=30))


@pytest.mark.parametrize("name", GAMES)
def test_fuzzed_agent_specs_make_a_bot_or_are_refused_with_a_message(name: str) -> None:
    from keltis_env.bots import Bot, make_bot
    from keltis_env.bots.search import MAX_SECONDS, SearchBot

    @INPUT_SETTINGS
    @given(spec=spec_texts(name))
    def run(spec: str) -> None:
        try:
            bot = make_bot(spec, seed=0, game=name)
        except ValueError as exc:  # KeltisError is a ValueError
            assert str(exc).strip(), repr(exc)
            event("refused")
            return
        event("made")
        assert isinstance(bot, Bot)
        if isinstance(bot, SearchBot):  # a budget that ends
            assert bot.iterations is not None or 0 < (bot.seconds or 0) <= MAX_SECONDS
            assert all(v == v and abs(v) != float("inf") for v in (bot.prior, bot.win_bonus, bot.margin))
            assert bot.margin >= 0

    run()


@functools.cache
def config_defaults() -> dict[str, str]:
    """Every dotted key of the training config with its default as YAML (a valid value)."""
    import yaml

    from training.common.config import to_dict
    from training.sb3.config import TrainConfig

    out: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and key not in ("options", "weights"):
                walk(value, f"{prefix}{key}.")
            else:
                out[prefix + key] = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()

    walk(to_dict(TrainConfig()), "")
    return out


YAML_VALUES = (*NUMBERS, ".inf", "-.inf", ".nan", "1.0e400", "null", "~", "[]", "{}", "[1, 2]", "[0]", "[256, 256]",
                         "{self: 1.0}", "{self: 1, self: 2}", "{random: .inf}", "{random: -1}", "heuristic",
                         "ismcts:seconds=nan", "ismcts:margin=-5", "ismcts:iterations=8,iterations=9",
                         "ismcts:iterations=4", "[random, heuristic]", "[ismcts:seconds=inf]", "4294967296",
                         "4294967295", "100000000000", "true", "'", "[", "{a: [}", "!!python/object:os.system x",
                         "&a 1", "*a", "2**32")
BAD_KEYS = ("nokey", "ppo.nokey", "ppo", "env.x.y", "seed.x")


def config_items() -> st.SearchStrategy[tuple[str, str]]:
    """A dotted key and a YAML value: its default (valid) half the time, else anything."""
    keys = sorted(config_defaults()) + list(BAD_KEYS)
    return st.sampled_from(keys).flatmap(lambda k: st.tuples(st.just(k), st.one_of(
        st.just(config_defaults().get(k, "1")), st.sampled_from(YAML_VALUES), st.text(max_size=12))))


@INPUT_SETTINGS
@given(items=st.lists(config_items(), max_size=3))
def test_fuzzed_set_overrides_load_a_config_or_are_refused_with_a_message(items: list[tuple[str, str]]) -> None:
    from training.sb3.config import TrainConfig, load_config

    overrides = [f"{k}={v}" for k, v in items]
    try:
        config = load_config(SMOKE, overrides)
    except KeltisError as exc:
        assert str(exc).strip(), repr(exc)
        event(f"refused: {type(exc).__name__}")
        return
    event("loaded")
    assert isinstance(config, TrainConfig)
    assert 0 <= config.seed < 2**32 and config.n_envs <= 4096


def config_text(items: list[tuple[str, str]], edit: str, rng: random.Random) -> str:
    """A config file of ``items`` (nested by their dotted keys), then one edit of its lines."""
    lines = ["base: smoke.yaml"] if rng.random() < 0.5 else []
    sections: dict[str, list[str]] = {}
    for key, value in items:
        head, _, rest = key.rpartition(".")
        sections.setdefault(head, []).append(f"{rest}: {value}")
    for head, entries in sections.items():
        if head:
            lines.append(f"{head}:")
            lines.extend(f"  {e}" for e in entries)
        else:
            lines.extend(entries)
    if edit == "duplicate" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif edit == "drop" and lines:
        del lines[rng.randrange(len(lines))]
    elif edit == "junk":
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["---", "- 1", "# c", "", "  x: 1", "base: nope.yaml",
                                                                 "\t", "name: [", ":"]))
    return "\n".join(lines) + "\n"


def config_texts() -> st.SearchStrategy[str]:
    built = st.builds(config_text, st.lists(config_items(), max_size=5),
                      st.sampled_from(["none", "none", "none", "duplicate", "drop", "junk"]),
                      st.randoms(use_true_random=False))
    return st.one_of(built, built, built, built, st.text(max_size=40),
                     st.binary(max_size=20).map(lambda b: b.decode("latin-1")))


@INPUT_SETTINGS
@given(text=config_texts())
def test_fuzzed_config_files_load_or_are_refused_with_a_message(text: str) -> None:
    import tempfile

    from training.sb3.config import TrainConfig, load_config

    note(f"file: {text!r}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "fuzz.yaml")
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        with open(os.path.join(folder, "smoke.yaml"), "w", encoding="utf-8") as out, open(SMOKE) as src:
            out.write(src.read())
        try:
            config = load_config(path)
        except KeltisError as exc:
            assert str(exc).strip(), repr(exc)
            event(f"refused: {type(exc).__name__}")
            return
    event("loaded")
    assert isinstance(config, TrainConfig)
