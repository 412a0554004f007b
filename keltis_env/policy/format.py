"""The policy-file format: a Stable-Baselines3 / sb3-contrib PPO zip with the project's metadata.

What the file holds
    A policy zip is SB3's: ``data`` (JSON: spaces, ``policy_kwargs``), ``policy.pth``
    (the network's weights) and more. Training adds ``keltis_policy.json``, the policy's
    *metadata*: the game (a name of :mod:`keltis_env.core.game`'s registry), its number of
    players, its observation size and number of actions, and the optional observation
    features it was trained with. A file without metadata (saved by SB3 alone) is taken
    for the one registered game and player count whose observation size and number of
    actions it has; a size that several would fit is refused.

The value head
    SB3's policy holds a critic beside the actor (``value_net``). Metadata format 2 records
    what its output means under ``"value"``: ``{"reward": MODE}``, the estimate, from the
    view of the player whose observation it reads, of that player's final reward under
    the reward ``MODE`` of :func:`keltis_env.core.rewards.final_rewards` (``"win"``: +1 a
    sole win, 0 a shared win, -1 a loss; ``"score"``: score minus the others' mean score,
    over 50). A file without it (format 1, or format 2 written without a value) is taken
    to estimate the ``"win"`` reward, the reward every shipped policy was trained with
    (:data:`DEFAULT_VALUE_REWARD`; :attr:`PolicyInfo.value_recorded` tells the two apart).
    Format 3 may say ``"value": false``: the file's value layers are not to be read (the
    actor of a run whose critic read hidden cards, :mod:`training.common.critic`); loaders
    then give the policy no value head (:attr:`PolicyInfo.value_head`).

How it plays
    Metadata format 3 adds ``"symmetry": NAME``, one of the game's relabellings
    (:meth:`keltis_env.core.game.GameDescriptor.make_symmetry`, e.g. the card game's
    ``colours_affine``): the policy plays by the mean of its logits over them
    (``ppo:PATH`` does this unless told ``symmetry=none``; SB3 loading the zip itself gets
    the network alone). A file without it plays its network's logits as they are. Format 3
    may also hold ``"recipe": PATH``, the recipe file that made the policy
    (``python -m training.recipe PATH`` rebuilds it). A file with neither field is written in
    format 2.

A missing, truncated or corrupt file (a zip cut short, a member whose checksum fails), or
metadata the game it names cannot play (a player count the game does not have, an
observation size or number of actions other than its encoder's for that count and those
features: :func:`check_fits_game`) raises :class:`PolicyLoadError` saying which and what
was expected. The weights are read
by :mod:`keltis_env.policy.weights` and run by :mod:`keltis_env.policy.network`.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from keltis_env.core.errors import KeltisError
from keltis_env.core.game import game_names, get_game
from keltis_env.core.output_files import atomic_path
from keltis_env.core.rewards import REWARD_MODES, check_reward_mode

#: the metadata member that training adds to a policy zip
INFO_MEMBER = "keltis_policy.json"
INFO_FORMAT = 3
#: the metadata formats this version reads (1: no value head's meaning; 2: no play-time
#: relabellings). A file is written in format 2 unless it names relabellings.
KNOWN_FORMATS = (1, 2, 3)
#: what a value head estimates when its file does not say (see the module doc)
DEFAULT_VALUE_REWARD = "win"
#: SB3's member holding the policy network's weights
WEIGHTS_MEMBER = "policy.pth"


class PolicyLoadError(KeltisError):
    """A policy file that is missing, truncated, corrupt, not a policy zip, holds NaN or
    infinite weights, or is not made for this game and number of players."""


class PolicyOutputError(KeltisError):
    """A policy network whose output at play time is unusable: NaN or infinite logits or
    values (finite weights can still overflow), so no action can be chosen by it."""


@dataclass(frozen=True)
class PolicyInfo:
    """What a policy file is for. ``inferred``: the file has no metadata; game and players
    were deduced from its observation size and number of actions."""

    path: str
    game: str
    num_players: int
    observation_size: int
    num_actions: int
    activation: str
    inferred: bool = False
    #: the optional observation features it was trained with (:mod:`keltis_env.core.features`)
    features: tuple[str, ...] = ()
    #: the final reward its value head estimates (a mode of :mod:`keltis_env.core.rewards`);
    #: ``None``: not recorded, :data:`DEFAULT_VALUE_REWARD` is assumed
    value_reward: str | None = None
    #: the game's relabellings it plays averaged over (:mod:`keltis_env.core.symmetry`); "": none
    symmetry: str = ""
    #: the recipe file that made it (``configs/recipes/NAME.yaml``; ``python -m training.recipe``); "": not recorded
    recipe: str = ""
    #: whether its value head is one to read: False for the actor of a run whose critic read
    #: more than a seat's view (``critic: full``; the file's value layers are untrained)
    value_head: bool = True

    @property
    def value_recorded(self) -> bool:
        """Whether the file says what its value head estimates."""
        return self.value_reward is not None

    @property
    def value_target(self) -> str:
        """The final reward its value head estimates: the recorded one, else ``"win"``."""
        return self.value_reward if self.value_reward is not None else DEFAULT_VALUE_REWARD

    def describe(self) -> str:
        return f"{self.path} is a {self.num_players}-player {self.game} policy"

    def play_symmetry(self, name: str | None = None) -> Any:
        """The relabellings this policy plays averaged over (a
        :class:`~keltis_env.core.symmetry.Symmetry`, imports numpy), or ``None`` for its
        network's logits alone: ``name`` where given (``"none"``: none), else the file's own
        (:attr:`symmetry`). An unknown name raises ``ValueError`` naming the game's."""
        name = name if name is not None else (self.symmetry or "none")
        if name == "none":
            return None
        return get_game(self.game).make_symmetry(name, self.num_players, self.features)

    def check(self, game: str, num_players: int | None = None) -> None:
        """Raise :class:`PolicyLoadError` unless the policy is for ``game`` (and
        ``num_players``, when given)."""
        name = get_game(game).name
        if name == self.game and num_players in (None, self.num_players):
            return
        this = f"a {num_players}-player {name} game" if num_players is not None else f"a {name} game"
        raise PolicyLoadError(f"{self.describe()}; this is {this}")

    def to_json(self) -> str:
        data = {k: v for k, v in asdict(self).items()
                if k not in ("path", "inferred", "value_reward", "symmetry", "recipe", "value_head")}
        if not self.features:
            del data["features"]  # the format of a policy without features is unchanged
        else:
            data["features"] = list(self.features)
        if not self.value_head:
            data["value"] = False
        elif self.value_reward is not None:
            data["value"] = {"reward": self.value_reward}
        if self.symmetry:
            data["symmetry"] = self.symmetry
        if self.recipe:
            data["recipe"] = self.recipe
        newer = self.symmetry or self.recipe or not self.value_head
        return json.dumps({"format": INFO_FORMAT if newer else 2, **data}, indent=1)


def read_policy_info(path: str | Path) -> PolicyInfo:
    """The metadata of the policy zip at ``path`` (see the module doc); reads no weights."""
    with open_policy_zip(path) as zf:
        return policy_info(zf, str(path))


def write_policy_info(path: str | Path, game: str, num_players: int, features: Any = (),
                      value_reward: str | None = None, symmetry: str = "", recipe: str = "",
                      value_head: bool = True) -> PolicyInfo:
    """Add (or replace) the metadata of the SB3 policy zip at ``path``: the policy is for
    ``game`` with ``num_players``, trained with the observation ``features`` (none by
    default), its value head estimating the final reward ``value_reward`` (a mode of
    :mod:`keltis_env.core.rewards`; ``None``: not recorded), playing averaged over the game's
    relabellings ``symmetry`` ("": none; see the module doc), made by the recipe file
    ``recipe`` ("": not recorded); ``value_head=False``: its value layers are not to be read
    (their values are neither loaded nor shown). Refused when the file's
    observation size or number of actions is not that game's. Every other member stays
    byte for byte as it was."""
    descriptor = get_game(game)
    features = descriptor.check_features(features)
    if value_reward is not None:
        check_reward_mode(value_reward)
    if symmetry:
        try:
            descriptor.make_symmetry(symmetry, num_players, features)
        except ValueError as exc:
            raise PolicyLoadError(f"symmetry: {exc}") from None
    with open_policy_zip(path) as zf:
        size, actions, activation = policy_spaces(zf, str(path))
        members = [(item, read_member(zf, item.filename, str(path))) for item in zf.infolist()
                   if item.filename != INFO_MEMBER]
    expected = descriptor.make_encoder(num_players, features).size
    if (size, actions) != (expected, descriptor.num_actions):
        with_features = f" with the features {', '.join(features)}" if features else ""
        raise PolicyLoadError(
            f"{path} takes observations of size {size} and has {actions} actions; a {num_players}-player "
            f"{descriptor.name} game{with_features} has {expected} and {descriptor.num_actions}"
        )
    info = PolicyInfo(str(path), descriptor.name, num_players, size, actions, activation, features=features,
                      value_reward=value_reward, symmetry=symmetry, recipe=recipe, value_head=value_head)
    # the same members, then the metadata, written to a new zip that replaces the file atomically
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w") as out:
        for item, data in members:
            out.writestr(item, data)
        out.writestr(INFO_MEMBER, info.to_json())
    return info


_END_RECORD = b"PK\x05\x06"  # the zip's end-of-central-directory record: 22 bytes + a comment
_END_SEARCH = 22 + 0xFFFF


def is_whole_zip(path: str | Path) -> bool:
    """Whether the file at ``path`` is a zip that ends where its end record says it does.
    ``zipfile.is_zipfile`` alone takes a zip cut short for the zip nested in it (SB3's
    ``policy.pth`` is itself an uncompressed zip), so a truncated file would pass."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - _END_SEARCH))
            tail = f.read()
    except OSError:
        return False
    at = tail.rfind(_END_RECORD)
    if at < 0 or len(tail) - at < 22:
        return False
    comment = int.from_bytes(tail[at + 20 : at + 22], "little")
    return at + 22 + comment == len(tail) and zipfile.is_zipfile(path)


def open_policy_zip(path: str | Path) -> zipfile.ZipFile:
    p = Path(path)
    if not p.is_file():
        raise PolicyLoadError(f"no policy file at {str(path)!r}")
    try:
        with open(p, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise PolicyLoadError(f"cannot read the policy file {str(path)!r}: {exc}") from None
    if not is_whole_zip(p):
        if head == b"PK\x03\x04":
            raise PolicyLoadError(
                f"{str(path)!r} is a truncated or corrupt zip (its end, the zip's directory, is missing or "
                "unreadable); expected a whole policy zip saved by training or MaskablePPO.save"
            )
        raise PolicyLoadError(f"{str(path)!r} is not a policy zip (saved by training or MaskablePPO.save)")
    try:
        return zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as exc:
        raise PolicyLoadError(f"{str(path)!r} is a corrupt zip ({exc}); expected a policy zip") from None


def read_member(zf: zipfile.ZipFile, member: str, path: str) -> bytes:
    try:
        return zf.read(member)
    except KeyError:
        raise PolicyLoadError(
            f"{path!r} holds no {member!r}: not a policy zip saved by training or MaskablePPO.save "
            f"(members: {', '.join(zf.namelist()) or 'none'})"
        ) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise PolicyLoadError(f"{path!r} is corrupt: its member {member!r} cannot be read ({exc})") from None


def policy_spaces(zf: zipfile.ZipFile, path: str) -> tuple[int, int, str]:
    """(observation size, number of actions, hidden activation) from SB3's ``data``."""
    try:
        data = json.loads(read_member(zf, "data", path))
        shape = data["observation_space"]["_shape"]
        actions = int(data["action_space"]["n"])
        kwargs = data.get("policy_kwargs") or {}
        if not isinstance(shape, list) or len(shape) != 1:
            raise PolicyLoadError(f"{path!r}: the policy's observation has shape {shape}; expected a flat vector")
        size = int(shape[0])
    except PolicyLoadError:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, AttributeError, RecursionError) as exc:
        raise PolicyLoadError(
            f"{path!r}: its 'data' member is not SB3's description of a policy with a flat observation and "
            f"discrete actions ({type(exc).__name__}: {exc})"
        ) from None
    if size < 1 or actions < 1:
        raise PolicyLoadError(f"{path!r}: the policy takes observations of size {size} and has {actions} actions; "
                              "expected positive numbers")
    # SB3 writes the activation class as text: "<class 'torch.nn.modules.activation.Tanh'>"; Tanh by default
    text = str(kwargs.get("activation_fn", "Tanh")) if isinstance(kwargs, Mapping) else "Tanh"
    activation = text.rsplit(".", 1)[-1].strip("'>")
    return size, actions, activation


def policy_info(zf: zipfile.ZipFile, path: str) -> PolicyInfo:
    size, actions, activation = policy_spaces(zf, path)
    if INFO_MEMBER in zf.namelist():
        try:
            meta = json.loads(read_member(zf, INFO_MEMBER, path))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise PolicyLoadError(f"{path!r}: its metadata {INFO_MEMBER!r} is not JSON ({exc})") from None
        info = _parse_metadata(meta, path, activation)
        if (info.observation_size, info.num_actions) != (size, actions):
            raise PolicyLoadError(
                f"{path!r} is inconsistent: its metadata says observations of size {info.observation_size} and "
                f"{info.num_actions} actions, its network {size} and {actions}"
            )
        if info.game not in game_names():
            raise PolicyLoadError(f"{info.describe()}, a game that is not registered here "
                                  f"(games: {', '.join(game_names())})")
        try:
            get_game(info.game).check_features(info.features)
        except ValueError as exc:
            raise PolicyLoadError(f"{info.describe()}: {exc}") from None
        if info.symmetry and info.symmetry not in get_game(info.game).symmetries:
            offered = ", ".join(sorted(get_game(info.game).symmetries)) or "none"
            raise PolicyLoadError(f"{info.describe()} playing averaged over the relabellings {info.symmetry!r}, "
                                  f"which the game does not have (its relabellings: {offered})")
        check_fits_game(info)
        return info
    fits = [(g, n) for g in game_names() for n in _player_counts(g)
            if get_game(g).num_actions == actions and get_game(g).make_encoder(n).size == size]
    if len(fits) != 1:
        found = "; it could be " + " or ".join(f"{n}-player {g}" for g, n in fits) if fits else \
            "; no registered game and player count has that"
        raise PolicyLoadError(
            f"{path!r} has no metadata ({INFO_MEMBER}) and takes observations of size {size} with {actions} "
            f"actions{found}. Add it with keltis_env.policy.write_policy_info(path, game, num_players)"
        )
    (game, n), = fits
    return PolicyInfo(path, game, n, size, actions, activation, inferred=True)


def check_fits_game(info: PolicyInfo) -> None:
    """Raise :class:`PolicyLoadError` unless the game ``info`` names can play the policy: its
    player count is one the game has, and its observation size and number of actions are
    what the game's encoder makes for that count and the features (a file labelled for
    another game, player count or features, or a game whose observation changed since the
    policy was trained, is refused)."""
    descriptor = get_game(info.game)
    low, high = descriptor.min_players, descriptor.max_players
    if not low <= info.num_players <= high:
        raise PolicyLoadError(f"{info.describe()}, but {descriptor.name} is for {low} to {high} players")
    try:
        size = descriptor.make_encoder(info.num_players, info.features).size
    except ValueError as exc:
        raise PolicyLoadError(f"{info.describe()}: {exc}") from None
    with_features = f" with the features {', '.join(info.features)}" if info.features else " without features"
    if info.observation_size != size:
        raise PolicyLoadError(
            f"{info.describe()} taking observations of size {info.observation_size}, but this {descriptor.name} "
            f"encoder makes {size} for {info.num_players} players{with_features}: the file is labelled for another "
            "game, player count or features, or the observation changed since it was trained"
        )
    if info.num_actions != descriptor.num_actions:
        raise PolicyLoadError(f"{info.describe()} with {info.num_actions} actions, but {descriptor.name} has "
                              f"{descriptor.num_actions}: the file is labelled for another game")


def _parse_metadata(meta: Any, path: str, activation: str) -> PolicyInfo:
    """The :class:`PolicyInfo` a metadata object describes, every field checked: a
    :class:`PolicyLoadError` names the field, what it holds and what is allowed."""

    def bad(what: str) -> PolicyLoadError:
        return PolicyLoadError(f"{path!r}: its metadata {INFO_MEMBER!r} is unreadable: {what}")

    if not isinstance(meta, Mapping):
        raise bad(f"expected a JSON object, got {type(meta).__name__}")
    version = meta.get("format")
    if isinstance(version, bool) or not isinstance(version, int) or version not in KNOWN_FORMATS:
        raise bad(f"format {version!r} is not one this version reads ({', '.join(map(str, KNOWN_FORMATS))}); "
                  "a newer keltis-rl may have written it")
    fields: dict[str, Any] = {}
    for key in ("num_players", "observation_size", "num_actions"):
        value = meta.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(f"{key} must be a positive integer, got {value!r}")
        fields[key] = value
    game = meta.get("game")
    if not isinstance(game, str) or not game:
        raise bad(f"game must be a game's name, got {game!r}")
    act = meta.get("activation", activation)
    if not isinstance(act, str):
        raise bad(f"activation must be a name such as 'Tanh', got {act!r}")
    features = meta.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise bad(f"features must be a list of names, got {features!r}")
    value = meta.get("value")
    reward = None
    value_head = value is not False
    if value is False and version < 3:
        raise bad("value: false (no value head to read) needs metadata format 3")
    if value is not None and value is not False:
        reward = value.get("reward") if isinstance(value, Mapping) else None
        if version < 2 or not isinstance(reward, str) or reward not in REWARD_MODES:
            raise bad(f"value must be {{\"reward\": MODE}} with MODE one of {', '.join(REWARD_MODES)} "
                      f"(metadata format 2), got {value!r}")
    symmetry = meta.get("symmetry", "")
    if "symmetry" in meta and (version < 3 or not isinstance(symmetry, str) or not symmetry):
        raise bad(f"symmetry must name relabellings of the game (metadata format 3), got {symmetry!r}")
    recipe = meta.get("recipe", "")
    if "recipe" in meta and (version < 3 or not isinstance(recipe, str) or not recipe):
        raise bad(f"recipe must name the recipe file that made the policy (metadata format 3), got {recipe!r}")
    return PolicyInfo(path, game, fields["num_players"], fields["observation_size"], fields["num_actions"], act,
                      features=tuple(features), value_reward=reward, symmetry=symmetry, recipe=recipe,
                      value_head=value_head)


def _player_counts(game: str) -> range:
    g = get_game(game)
    return range(g.min_players, g.max_players + 1)


__all__ = [
    "DEFAULT_VALUE_REWARD",
    "INFO_FORMAT",
    "INFO_MEMBER",
    "WEIGHTS_MEMBER",
    "PolicyInfo",
    "PolicyLoadError",
    "PolicyOutputError",
    "check_fits_game",
    "is_whole_zip",
    "open_policy_zip",
    "policy_info",
    "policy_spaces",
    "read_member",
    "read_policy_info",
    "write_policy_info",
]
