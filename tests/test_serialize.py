"""State dicts, their validation, game options and the action codec."""

from __future__ import annotations

import copy
import json
import random
from itertools import pairwise

import pytest
from conftest import make_state_dict

from keltis_env.games.keltis import (
    ACTION_RANGES,
    NUM_ACTIONS,
    ActionError,
    ConfigError,
    GameConfig,
    GameRecord,
    GameState,
    Phase,
    RecordError,
    StateError,
    action_to_string,
    string_to_action,
)
from keltis_env.games.keltis.constants import DEFAULT_MAX_TURNS


def played_state(num_players: int, seed: int, decisions: int) -> GameState:
    state = GameState.new_game(GameConfig(num_players=num_players), seed=seed)
    rng = random.Random(seed)
    for _ in range(decisions):
        if state.is_over:
            break
        state.apply(rng.choice(state.legal_actions()))
    return state


# ---------------------------------------------------------------------------- round trip
@pytest.mark.parametrize(("num_players", "seed", "decisions"), [(2, 0, 0), (2, 1, 57), (3, 2, 120), (4, 3, 1000)])
def test_state_dict_round_trip(num_players, seed, decisions):
    state = played_state(num_players, seed, decisions)
    data = state.to_dict()
    again = GameState.from_dict(json.loads(json.dumps(data)))  # JSON-safe too
    assert again.to_dict() == data
    assert again == state
    # The rebuilt state carries on exactly like the original.
    assert again.legal_actions() == state.legal_actions()
    assert again.scores() == state.scores()
    assert again.goal_count == state.goal_count and again.direction == state.direction


def test_state_dict_round_trip_keeps_explicit_layout_and_options():
    layout = ((2, 3, 4, 5), (1, 2, 3, 4), (5, 6, 7, 8), (1, 3, 5, 8), (2, 4, 6, 8))
    state = GameState.new_game(GameConfig(num_players=3, tile_layout=layout, max_turns=40), seed=9)
    again = GameState.from_dict(state.to_dict())
    assert again.config == state.config and again.dark_rows == layout and again == state


def test_state_equality_sees_hidden_differences():
    a = GameState.new_game(GameConfig(), seed=1)
    b = a.clone()
    assert a == b
    i = next(i for i in range(1, len(b.deck)) if b.deck[i] != b.deck[0])
    b.deck[0], b.deck[i] = b.deck[i], b.deck[0]  # only the hidden order of the draw pile differs
    assert a != b
    assert a.view(0) == b.view(0) and a.view(1) == b.view(1)


# ---------------------------------------------------------------------------- refused dicts
def _base() -> dict:
    return make_state_dict(
        hands={0: ["red 3", "red 4"]},
        rows={0: {"red": [1, 2]}, 1: {"blue": [7]}},
        figures={0: {"red": 2}, 1: {"blue": 1}},
        discards={"green": [5]},
    )


def _drop_deck_card(d):
    d["deck"].pop()


def _third_copy(d):
    d["deck"][0] = d["players"][0]["hand"][0]  # a card kind now appears 3 times, another once


def _two_figures_on_a_path(d):
    d["players"][0]["figures"][-1] = {"path": "red", "row": 4, "large": False}  # a small one


def _tile_on_plain_stone(d):
    d["tiles"]["red"][1] = d["tiles"]["red"][0]  # row 2 is not a tile stone of red
    d["tiles"]["red"][0] = None


def _wrong_tile_multiset(d):
    col = d["tiles"]["red"]
    col[0] = "points3" if col[0] != "points3" else "clover"


def _short_hand(d):
    d["deck"].append(d["players"][1]["hand"].pop())


def _removed_to_deck(d):
    d["deck"].append(d["removed"].pop())


def _bad_num_players(d):
    d["options"]["num_players"] = 5


def _bad_max_turns(d):
    d["options"]["max_turns"] = 0


def _bad_layout_name(d):
    d["options"]["tile_layout"] = "spiral"


def _unknown_option(d):
    d["options"]["speed"] = "fast"


def _played_without_figure(d):
    d["players"][1]["figures"][0] = {"path": None, "row": 0, "large": False}
    d["players"][1]["figures"][1]["large"] = True


def _two_large(d):
    for f in d["players"][0]["figures"]:
        f["large"] = True


def _discard_of_other_colour(d):
    card = next(c for c in d["deck"] if not c.startswith("green"))
    d["deck"].remove(card)
    d["discards"]["green"].append(card)


def _over_without_end(d):
    d["phase"] = "over"


def _end_without_over(d):
    d["end"] = "truncated"


def _unknown_phase(d):
    d["phase"] = "nap"


def _closed_pile_in_play_step(d):
    d["discarded_color"] = "green"


def _first_player_out_of_range(d):
    d["first_player"] = 2


def _current_player_not_int(d):
    d["current_player"] = "0"


def _turn_past_max_turns(d):
    d["turn"] = DEFAULT_MAX_TURNS


def _unknown_tile(d):
    d["tiles"]["red"][0] = "gold"


def _figure_off_path_with_row(d):
    d["players"][0]["figures"][-1]["row"] = 3


def _figure_row_10(d):
    d["players"][0]["figures"][0]["row"] = 10


def _too_many_wishing_stones(d):
    d["players"][0]["wishing_stones"] = 10


def _row_value_11(d):
    d["players"][1]["rows"]["blue"] = [11]


def _missing_colour(d):
    del d["discards"]["pink"]


def _five_in_goal_not_over(d):
    for p, colours in ((0, ("yellow", "green", "blue")), (1, ("red", "pink"))):
        figures = d["players"][p]["figures"]
        free = [f for f in figures if f["path"] is None]
        for f, c in zip(free, colours, strict=False):
            f["path"], f["row"] = c, 8


def _empty_deck_not_over(d):
    for card in d["deck"]:  # every card stays in the game, on its colour's discard pile
        d["discards"][card.split()[0]].insert(0, card)
    d["deck"] = []


def _players_missing(d):
    d["players"].pop()


def _unknown_top_level_key(d):
    d["score"] = [0, 0]


def _renamed_top_level_key(d):
    d["current"] = d.pop("current_player")


def _unknown_player_key(d):
    d["players"][1]["points"] = 3


def _renamed_player_key(d):
    d["players"][0]["cards"] = d["players"][0].pop("hand")


def _missing_player_key(d):
    del d["players"][1]["tile_points"]


def _unknown_figure_key(d):
    d["players"][0]["figures"][0]["colour"] = "red"


def _large_not_a_bool(d):
    for f in d["players"][0]["figures"]:
        f["large"] = 1 if f["large"] else 0


def _card_not_a_string(d):
    d["players"][0]["hand"][0] = 14


def _hand_not_a_list(d):
    d["players"][1]["hand"] = " ".join(d["players"][1]["hand"])


def _player_not_a_dict(d):
    d["players"][1] = list(d["players"][1].values())


def _figure_behind_its_cards(d):
    d["players"][0]["figures"][0]["row"] = 1  # red [1, 2] is played: the figure is on row 2 or beyond


REFUSED = [
    (_unknown_top_level_key, "unknown key(s) ['score'] in the state; allowed keys are format, version, options"),
    (_renamed_top_level_key, "unknown key(s) ['current'] in the state"),
    (_unknown_player_key, "unknown key(s) ['points'] in players[1]; allowed keys are hand, rows, figures, "
                          "wishing_stones, tile_points"),
    (_renamed_player_key, "unknown key(s) ['cards'] in players[0]"),
    (_missing_player_key, "players[1] lacks the key(s) tile_points"),
    (_unknown_figure_key, "unknown key(s) ['colour'] in players[0].figures[0]; allowed keys are path, row, large"),
    (_large_not_a_bool, "'players[0].figures[0].large' must be true or false, got 0"),
    (_card_not_a_string, "players[0].hand[0]: a card is a string '<colour> <value>'"),
    (_hand_not_a_list, "'players[1].hand' must be a list of cards"),
    (_player_not_a_dict, "'players[1]' must be a dict, got list"),
    (_figure_behind_its_cards, "player 0 has played 2 red cards, but their red figure is on row 1"),
    (_drop_deck_card, "card counts"),
    (_third_copy, "card counts"),
    (_two_figures_on_a_path, "two figures on the red path"),
    (_tile_on_plain_stone, "not a tile stone"),
    (_wrong_tile_multiset, "25 tiles"),
    (_short_hand, "player 1 holds 7 cards"),
    (_removed_to_deck, "29 removed cards"),
    (_bad_num_players, "num_players"),
    (_bad_max_turns, "max_turns"),
    (_bad_layout_name, "tile_layout"),
    (_unknown_option, "unknown game option"),
    (_played_without_figure, "no figure on the blue path"),
    (_two_large, "exactly one large figure"),
    (_discard_of_other_colour, "green discard pile holds a card of another colour"),
    (_over_without_end, "end reason"),
    (_end_without_over, "end reason"),
    (_unknown_phase, "'phase' must be one of 'play', 'draw', 'bonus', 'over', got 'nap'"),
    (_closed_pile_in_play_step, "discarded_color"),
    (_first_player_out_of_range, "first_player"),
    (_current_player_not_int, "current_player"),
    (_turn_past_max_turns, "max_turns"),
    (_unknown_tile, "unknown tile"),
    (_figure_off_path_with_row, "on no path but on row 3"),
    (_figure_row_10, "'players[0].figures[0].row' must be an integer in 1..9, got 10"),
    (_too_many_wishing_stones, "wishing_stones"),
    (_row_value_11, "rows.blue"),
    (_missing_colour, "'discards' must map each of red, yellow, green, blue, pink"),
    (_five_in_goal_not_over, "goal area"),
    (_empty_deck_not_over, "draw pile is empty"),
    (_players_missing, "'players' must list 2 players"),
]


@pytest.mark.parametrize(("breaker", "invariant"), REFUSED, ids=[b.__name__.strip("_") for b, _ in REFUSED])
def test_from_dict_refuses_a_broken_invariant_and_names_it(breaker, invariant):
    data = _base()
    GameState.from_dict(copy.deepcopy(data))  # the unbroken dict is accepted
    breaker(data)
    with pytest.raises(StateError) as info:
        GameState.from_dict(data)
    assert invariant in str(info.value)


@pytest.mark.parametrize(("row", "accepted"), [([1, 5, 2], False), ([5, 5, 2, 3], False), ([5, 5, 2, 2], True),
                                              ([1, 2, 5], True), ([3, 3], True)])
def test_from_dict_refuses_a_row_that_is_neither_ascending_nor_descending(row, accepted):
    data = make_state_dict(rows={0: {"red": row}}, figures={0: {"red": len(row)}})
    if accepted:
        GameState.from_dict(data)
    else:
        with pytest.raises(StateError, match=r"red row .* is neither ascending nor descending \(R4\)"):
            GameState.from_dict(data)


def test_from_dict_refuses_wrong_removed_count_with_three_players():
    data = make_state_dict(3)
    data["removed"] = [data["deck"].pop()]
    with pytest.raises(StateError, match="with 3 players exactly 0 are removed"):
        GameState.from_dict(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "a state must be a dict, got list"),
        (None, "a state must be a dict"),
        ("keltis", "a state must be a dict"),
    ],
)
def test_from_dict_refuses_what_is_not_a_dict(data, message):
    with pytest.raises(StateError, match=message):
        GameState.from_dict(data)


@pytest.mark.parametrize(
    ("field", "value"), [("format", "chess-state"), ("version", 2), ("version", "1"), ("format", None)]
)
def test_from_dict_refuses_a_wrong_format_or_version(field, value):
    data = _base()
    data[field] = value
    with pytest.raises(StateError, match="expected format 'keltis-state' version 1"):
        GameState.from_dict(data)


@pytest.mark.parametrize("missing", ["deck", "players", "tiles", "options", "turn"])
def test_from_dict_refuses_a_dict_missing_a_field(missing):
    data = _base()
    del data[missing]
    with pytest.raises(StateError, match=rf"^invalid state: the state lacks the key\(s\) {missing}; it needs format"):
        GameState.from_dict(data)


def test_from_dict_refuses_a_malformed_card_name():
    data = _base()
    data["deck"][0] = "red seven"
    with pytest.raises(StateError, match="malformed"):
        GameState.from_dict(data)


# ---------------------------------------------------------------------------- GameConfig
@pytest.mark.parametrize("num_players", [1, 5, 0, "2", 2.0, True, None])
def test_config_refuses_bad_num_players(num_players):
    with pytest.raises(ConfigError, match="num_players must be an integer from 2 to 4"):
        GameConfig(num_players=num_players)


@pytest.mark.parametrize("max_turns", [0, -3, "10", 1.5, True])
def test_config_refuses_bad_max_turns(max_turns):
    with pytest.raises(ConfigError, match="max_turns must be a positive integer"):
        GameConfig(max_turns=max_turns)


@pytest.mark.parametrize(
    "layout",
    [
        "spiral",
        "",
        ((1, 2, 3, 4),) * 4,  # 4 paths
        ((1, 2, 3, 4),) * 4 + ((1, 2, 3),),  # 3 rows on a path
        ((1, 2, 3, 4),) * 4 + ((1, 2, 3, 3),),  # a repeated row
        ((1, 2, 3, 4),) * 4 + ((1, 2, 3, 9),),  # the end stone is no dark stone
        ((1, 2, 3, 4),) * 4 + ((0, 2, 3, 4),),  # the start stone neither
        ((1, 2, 3, 4),) * 4 + ("1234",),
        ((1, 2, 3, 4),) * 4 + ((1, 2, 3, True),),
        42,
    ],
)
def test_config_refuses_bad_tile_layouts(layout):
    with pytest.raises(ConfigError, match="tile_layout"):
        GameConfig(tile_layout=layout)


def test_config_accepts_the_allowed_values_and_round_trips():
    for n in (2, 3, 4):
        assert GameConfig(num_players=n).num_players == n
    config = GameConfig(num_players=3, tile_layout=[[4, 3, 2, 1]] * 5, max_turns=1)
    assert config.tile_layout == ((1, 2, 3, 4),) * 5
    assert GameConfig.from_dict(config.to_dict()) == config
    assert GameConfig.from_dict(GameConfig(tile_layout="random").to_dict()).tile_layout == "random"


def test_config_from_dict_refuses_unknown_options_and_non_mappings():
    with pytest.raises(ConfigError, match="unknown game option"):
        GameConfig.from_dict({"num_players": 2, "turbo": True})
    with pytest.raises(ConfigError, match="must be a mapping"):
        GameConfig.from_dict([("num_players", 2)])


# ---------------------------------------------------------------------------- action codec
def test_every_action_id_round_trips_through_its_string():
    strings = [action_to_string(a) for a in range(NUM_ACTIONS)]
    assert len(set(strings)) == NUM_ACTIONS
    for action, text in enumerate(strings):
        assert string_to_action(text) == action
        assert string_to_action(f"  {text.upper()}  ") == action  # case and spaces do not matter


def test_action_ranges_are_contiguous_and_cover_every_id():
    assert NUM_ACTIONS == 187
    ranges = list(ACTION_RANGES.values())
    assert ranges[0][0] == 0 and ranges[-1][1] == NUM_ACTIONS
    for (_, stop), (start, _) in pairwise(ranges):
        assert stop == start
    assert all(start < stop for start, stop in ranges)
    covered = [a for start, stop in ranges for a in range(start, stop)]
    assert covered == list(range(NUM_ACTIONS))


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        ("play", "play red 0", "play pink 10"),
        ("play_large", "play red 0 large", "play pink 10 large"),
        ("discard", "discard red 0", "discard pink 10"),
        ("draw_deck", "draw deck", "draw deck"),
        ("draw_discard", "draw red", "draw pink"),
        ("bonus_advance", "bonus advance red", "bonus advance pink"),
        ("bonus_open_small", "bonus open red small", "bonus open pink small"),
        ("bonus_open_large", "bonus open red large", "bonus open pink large"),
        ("pass", "pass", "pass"),
    ],
)
def test_action_ranges_hold_the_actions_they_are_named_after(name, first, last):
    start, stop = ACTION_RANGES[name]
    assert action_to_string(start) == first and action_to_string(stop - 1) == last


@pytest.mark.parametrize(
    "text",
    [
        "",
        "play",
        "play red",
        "play red 11",
        "play red -1",
        "play purple 3",
        "play red 3 huge",
        "play red seven",
        "discard red",
        "discard red 3 large",
        "draw",
        "draw purple",
        "draw deck now",
        "bonus advance",
        "bonus advance purple",
        "bonus open red",
        "bonus open red medium",
        "bonus red",
        "passs",
        "pass pass",
    ],
)
def test_malformed_action_strings_raise_action_error(text):
    with pytest.raises(ActionError, match="cannot read action"):
        string_to_action(text)


@pytest.mark.parametrize("action", [-1, NUM_ACTIONS, 10**9, True, 1.0, "1", None])
def test_action_to_string_refuses_ids_out_of_range(action):
    with pytest.raises(ActionError, match=r"ids are (integers )?0\.\.186"):
        action_to_string(action)


def test_numpy_integer_action_ids_are_accepted():
    import numpy as np

    assert action_to_string(np.int64(186)) == "pass"
    state = GameState.new_game(seed=3)
    action = state.legal_actions()[-1]
    state.apply(np.int32(action))
    assert state.phase == Phase.DRAW


# ---------------------------------------------------------------------------- records
def test_game_record_round_trips_and_refuses_a_wrong_result(tmp_path):
    record, state = GameRecord.start(GameConfig(num_players=3), seed=4)
    rng = random.Random(4)
    while not state.is_over:
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
    path = tmp_path / "game.json"
    record.save(path)
    loaded = GameRecord.load(path)
    assert loaded.actions == record.actions and loaded.replay() == state
    data = json.loads(path.read_text())
    assert data["final_scores"] == state.scores()
    data["final_scores"] = [s + 1 for s in state.scores()]
    with pytest.raises(RecordError, match="final scores"):
        GameRecord.from_dict(data)
    data["version"] = 7
    with pytest.raises(RecordError, match="version"):
        GameRecord.from_dict(data)
    with pytest.raises(RecordError, match="not a Keltis game record"):
        GameRecord.from_dict({"format": "other"})


def _short_record() -> tuple[GameRecord, dict]:
    record, state = GameRecord.start(GameConfig(), seed=11, players=["heuristic", "random"])
    rng = random.Random(11)
    for _ in range(12):
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
    return record, record.to_dict()


def _action_not_text(d):
    d["actions"][3] = 12345


def _action_unreadable(d):
    d["actions"][5] = "play red 99"


def _action_illegal(d):
    d["actions"][0] = "bonus advance red"


def _setup_missing(d):
    del d["setup"]


def _setup_both(d):
    d["setup"]["state"] = {}


def _setup_seed_text(d):
    d["setup"]["seed"] = "11"


def _actions_not_a_list(d):
    d["actions"] = "draw deck"


def _unknown_record_key(d):
    d["winner"] = 0


def _players_wrong_count(d):
    d["players"] = ["heuristic"]


def _end_disagrees(d):
    d["end"] = "deck"


def _scores_of_an_unfinished_game(d):
    d["final_scores"] = [0, 0]


def _bad_options(d):
    d["options"]["max_turns"] = 0


RECORD_REFUSED = [
    (_action_not_text, "actions[3] must be an action written as text, such as 'play red 0', got 12345 (int)"),
    (_action_unreadable, "actions[5]: cannot read action 'play red 99'"),
    (_action_illegal, "actions[0] does not replay: illegal action 171 (bonus advance red)"),
    (_setup_missing, "the record lacks the key(s) setup; a record needs format, version, options, setup, actions"),
    (_setup_both, "setup must be {'seed': <integer>} or {'state': <state dict>}, got ['seed', 'state']"),
    (_setup_seed_text, "setup.seed must be an integer, got '11'"),
    (_actions_not_a_list, "the record's actions must be a list of actions such as 'play red 0'"),
    (_unknown_record_key, "unknown key(s) ['winner'] in the record; allowed keys are format, version, game"),
    (_players_wrong_count, "players must be null or a list of 2 names, got ['heuristic']"),
    (_end_disagrees, "the record says the game ended by 'deck', but replaying it gives None"),
    (_scores_of_an_unfinished_game, "final scores [0, 0], but replaying it gives a game that is not over"),
    (_bad_options, "the record's options are invalid: max_turns must be a positive integer"),
]


@pytest.mark.parametrize(("breaker", "message"), RECORD_REFUSED, ids=[b.__name__.strip("_") for b, _ in RECORD_REFUSED])
def test_a_malformed_record_is_refused_naming_the_field(breaker, message):
    record, data = _short_record()
    assert GameRecord.from_dict(copy.deepcopy(data)).actions == record.actions  # the unbroken record reads
    breaker(data)
    with pytest.raises(RecordError) as info:
        GameRecord.from_dict(data)
    assert message in str(info.value)


@pytest.mark.parametrize("upto", [-1, 13, "5", 2.0, True, None])
def test_replay_refuses_an_upto_outside_0_to_the_number_of_actions(upto):
    record, _ = _short_record()
    if upto is None:  # the default: every action
        assert record.replay(upto) == record.replay(12)
        return
    with pytest.raises(RecordError, match=r"upto counts the record's actions to replay: an integer from 0 to 12, got "):
        record.replay(upto)


def test_replay_upto_gives_the_position_after_that_many_actions():
    import numpy as np

    record, _ = _short_record()
    states = record.states()
    assert [record.replay(k) for k in range(13)] == states
    assert record.replay(np.int64(4)) == states[4]


@pytest.mark.parametrize("upto", [-1, "5", 99])
def test_the_environment_reset_from_a_record_refuses_a_bad_upto(upto):
    from keltis_env import keltis_v0

    _, data = _short_record()
    env = keltis_v0.env()
    with pytest.raises(RecordError, match="an integer from 0 to 12"):
        env.reset(options={"record": data, "upto": upto})
    env.reset(options={"record": data, "upto": 12})
    assert env.unwrapped.state_ == GameRecord.from_dict(data).replay()
