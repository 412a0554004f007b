"""A trained policy (a Stable-Baselines3 / sb3-contrib PPO zip) as a bot, for every game.

``make_bot("ppo:policies/keltis_2p.zip", game="keltis", num_players=2)`` loads the policy
saved by ``training`` (or by ``MaskablePPO.save``); options follow the path:
``ppo:PATH,sample=1,temperature=0.5``.

What the file holds
    A policy zip is SB3's: ``data`` (JSON: spaces, ``policy_kwargs``), ``policy.pth``
    (the network's weights) and more. Training adds ``keltis_policy.json``, the policy's
    *metadata*: the game (a name of :mod:`keltis_env.core.game`'s registry), its number of
    players, its observation size and number of actions. A file without metadata (saved by
    SB3 alone) is taken for the one registered game and player count whose observation
    size and number of actions it has; a size that several would fit is refused.

Game and players are checked when the bot is made
    A policy plays only the game and the number of players it was trained for: anything
    else raises :class:`PolicyLoadError` naming both ("policies/keltis_2p.zip is a
    2-player keltis policy; this is a 3-player dice game"). Callers that know the player
    count pass ``num_players`` (evaluation, ``keltis play``, the learner environment,
    training); without it the count is checked at the first :meth:`PPOBot.act`.

No torch
    The weights are read straight from ``policy.pth`` (PyTorch's zip format: a pickle that
    names its tensors' storages, plus their raw bytes) by a restricted unpickler that
    accepts only an ordered dict of tensors, and the forward pass of SB3's multilayer
    perceptron (flatten, hidden layers with tanh or ReLU, linear head) runs in numpy. So a
    bot loads in milliseconds and a process that plays never imports torch; torch is
    needed only for a ``policy.pth`` written in a format this reader does not know.

A missing, truncated or corrupt file (a zip cut short, a member whose checksum fails, a
pickle that is not a weights dictionary) raises :class:`PolicyLoadError` saying which and
what was expected.

The bot encodes its view with the game's encoder (``get_game(game).make_encoder(n,
features)``, the observation the policy was trained on, with the optional features its
metadata names), masks the illegal actions and plays the most
probable legal action, or samples one from the masked distribution with ``sample=1`` (its
randomness from the bot's ``rng``).
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.core.game import game_names, get_game

from .base import Bot

#: the metadata member that training adds to a policy zip
INFO_MEMBER = "keltis_policy.json"
INFO_FORMAT = 1
_WEIGHTS_MEMBER = "policy.pth"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
}


class PolicyLoadError(ValueError):
    """A policy file that is missing, truncated, corrupt, not a policy zip, or not made
    for this game and number of players."""


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
        return value.lower() in _TRUE
    raise ValueError(f"option {name} must be 0/1 or true/false, got {value!r}")


# ---------------------------------------------------------------------- metadata
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

    def describe(self) -> str:
        return f"{self.path} is a {self.num_players}-player {self.game} policy"

    def check(self, game: str, num_players: int | None = None) -> None:
        """Raise :class:`PolicyLoadError` unless the policy is for ``game`` (and
        ``num_players``, when given)."""
        name = get_game(game).name
        if name == self.game and num_players in (None, self.num_players):
            return
        this = f"a {num_players}-player {name} game" if num_players is not None else f"a {name} game"
        raise PolicyLoadError(f"{self.describe()}; this is {this}")

    def to_json(self) -> str:
        data = {k: v for k, v in asdict(self).items() if k not in ("path", "inferred")}
        if not self.features:
            del data["features"]  # the format of a policy without features is unchanged
        else:
            data["features"] = list(self.features)
        return json.dumps({"format": INFO_FORMAT, **data}, indent=1)


def read_policy_info(path: str | Path) -> PolicyInfo:
    """The metadata of the policy zip at ``path`` (see the module doc); reads no weights."""
    with _open_zip(path) as zf:
        return _info(zf, str(path))


def write_policy_info(path: str | Path, game: str, num_players: int, features: Any = ()) -> PolicyInfo:
    """Add (or replace) the metadata of the SB3 policy zip at ``path``: the policy is for
    ``game`` with ``num_players``, trained with the observation ``features`` (none by
    default). Refused when the file's observation size or number of actions is not that
    game's. Every other member stays byte for byte as it was."""
    descriptor = get_game(game)
    features = descriptor.check_features(features)
    with _open_zip(path) as zf:
        size, actions, activation = _spaces(zf, str(path))
        had_info = INFO_MEMBER in zf.namelist()
        members = [(item, _read(zf, item.filename, str(path))) for item in zf.infolist()
                   if item.filename != INFO_MEMBER]
    expected = descriptor.make_encoder(num_players, features).size
    if (size, actions) != (expected, descriptor.num_actions):
        with_features = f" with the features {', '.join(features)}" if features else ""
        raise PolicyLoadError(
            f"{path} takes observations of size {size} and has {actions} actions; a {num_players}-player "
            f"{descriptor.name} game{with_features} has {expected} and {descriptor.num_actions}"
        )
    info = PolicyInfo(str(path), descriptor.name, num_players, size, actions, activation, features=features)
    if not had_info:  # append it
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr(INFO_MEMBER, info.to_json())
    else:  # replace it: rewrite the zip with the same members
        tmp = Path(f"{path}.tmp")
        with zipfile.ZipFile(tmp, "w") as out:
            for item, data in members:
                out.writestr(item, data)
            out.writestr(INFO_MEMBER, info.to_json())
        tmp.replace(path)
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


def _open_zip(path: str | Path) -> zipfile.ZipFile:
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


def _read(zf: zipfile.ZipFile, member: str, path: str) -> bytes:
    try:
        return zf.read(member)
    except KeyError:
        raise PolicyLoadError(
            f"{path!r} holds no {member!r}: not a policy zip saved by training or MaskablePPO.save "
            f"(members: {', '.join(zf.namelist()) or 'none'})"
        ) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise PolicyLoadError(f"{path!r} is corrupt: its member {member!r} cannot be read ({exc})") from None


def _spaces(zf: zipfile.ZipFile, path: str) -> tuple[int, int, str]:
    """(observation size, number of actions, hidden activation) from SB3's ``data``."""
    try:
        data = json.loads(_read(zf, "data", path))
        shape = data["observation_space"]["_shape"]
        actions = int(data["action_space"]["n"])
        kwargs = data.get("policy_kwargs") or {}
    except PolicyLoadError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise PolicyLoadError(
            f"{path!r}: its 'data' member is not SB3's description of a policy with a flat observation and "
            f"discrete actions ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(shape, list) or len(shape) != 1:
        raise PolicyLoadError(f"{path!r}: the policy's observation has shape {shape}; expected a flat vector")
    # SB3 writes the activation class as text: "<class 'torch.nn.modules.activation.Tanh'>"; Tanh by default
    text = str(kwargs.get("activation_fn", "Tanh")) if isinstance(kwargs, Mapping) else "Tanh"
    activation = text.rsplit(".", 1)[-1].strip("'>")
    return int(shape[0]), actions, activation


def _info(zf: zipfile.ZipFile, path: str) -> PolicyInfo:
    size, actions, activation = _spaces(zf, path)
    if INFO_MEMBER in zf.namelist():
        try:
            meta = json.loads(_read(zf, INFO_MEMBER, path))
            features = meta.get("features", [])
            if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
                raise ValueError(f"features must be a list of names, got {features!r}")
            info = PolicyInfo(path, str(meta["game"]), int(meta["num_players"]), int(meta["observation_size"]),
                              int(meta["num_actions"]), str(meta.get("activation", activation)),
                              features=tuple(features))
        except (ValueError, KeyError, TypeError) as exc:
            raise PolicyLoadError(f"{path!r}: its metadata {INFO_MEMBER!r} is unreadable ({exc})") from None
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
        return info
    fits = [(g, n) for g in game_names() for n in _player_counts(g)
            if get_game(g).num_actions == actions and get_game(g).make_encoder(n).size == size]
    if len(fits) != 1:
        found = "; it could be " + " or ".join(f"{n}-player {g}" for g, n in fits) if fits else \
            "; no registered game and player count has that"
        raise PolicyLoadError(
            f"{path!r} has no metadata ({INFO_MEMBER}) and takes observations of size {size} with {actions} "
            f"actions{found}. Add it with keltis_env.bots.ppo.write_policy_info(path, game, num_players)"
        )
    (game, n), = fits
    return PolicyInfo(path, game, n, size, actions, activation, inferred=True)


def _player_counts(game: str) -> range:
    g = get_game(game)
    return range(g.min_players, g.max_players + 1)


# ---------------------------------------------------------------------- weights without torch
class _UnsupportedFormatError(Exception):
    """``policy.pth`` uses something the restricted unpickler does not accept."""


_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
    "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name: str) -> None:
        self.dtype = np.dtype(_STORAGE_DTYPES[name]).newbyteorder("<")


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    *_: Any) -> np.ndarray:
    """``torch._utils._rebuild_tensor_v2`` in numpy: a strided view of the storage, copied."""
    if not size:
        return storage[offset : offset + 1].reshape(()).copy()
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if offset < 0 or any(n < 0 for n in size) or (min(size) > 0 and last >= storage.size):
        raise _UnsupportedFormatError(f"a tensor of shape {tuple(size)} reaches past its storage of {storage.size}")
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=tuple(size), strides=tuple(s * storage.itemsize for s in stride)
    )
    return np.array(view)


class _WeightsUnpickler(pickle.Unpickler):
    """Reads the pickle of a ``torch.save``-d state dict, allowing only what one holds."""

    def __init__(self, data: bytes, storage: Callable[[str, np.dtype], np.ndarray]) -> None:
        super().__init__(io.BytesIO(data))
        self._storage = storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise _UnsupportedFormatError(f"the pickle names {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)):
            raise _UnsupportedFormatError(f"unknown storage reference {pid!r}")
        return self._storage(str(pid[2]), pid[1].dtype)


def _numpy_state_dict(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a ``torch.save`` zip (``archive/data.pkl`` + ``archive/data/<key>``)."""
    inner = zipfile.ZipFile(io.BytesIO(raw))
    names = inner.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise _UnsupportedFormatError("no single data.pkl")
    prefix = pickles[0][: -len("data.pkl")]
    byteorder = prefix + "byteorder"
    if byteorder in names and inner.read(byteorder).strip() != b"little":
        raise _UnsupportedFormatError("big-endian tensors")

    def storage(key: str, dtype: np.dtype) -> np.ndarray:
        return np.frombuffer(inner.read(f"{prefix}data/{key}"), dtype=dtype)

    return _check_tensors(_WeightsUnpickler(inner.read(pickles[0]), storage).load())


def _check_tensors(state: Any) -> dict[str, np.ndarray]:
    if not isinstance(state, Mapping) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise ValueError("the pickle is not a dictionary of tensors")
    return dict(state)


def _torch_state_dict(raw: bytes, path: str, why: str) -> dict[str, np.ndarray]:
    """The fallback for a format the reader does not know: torch's own (safe) loader."""
    try:
        import torch
    except ImportError:
        raise PolicyLoadError(
            f"{path!r}: {_WEIGHTS_MEMBER} needs torch to read ({why}); install the train extra: "
            "pip install -e '.[train]'"
        ) from None
    state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    if isinstance(state, Mapping):
        state = {k: v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for k, v in state.items()}
    return _check_tensors(state)


def _state_dict(zf: zipfile.ZipFile, path: str) -> dict[str, np.ndarray]:
    raw = _read(zf, _WEIGHTS_MEMBER, path)
    try:
        return _numpy_state_dict(raw)
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError) as exc:
        raise PolicyLoadError(f"{path!r} is corrupt: its weights ({_WEIGHTS_MEMBER}) cannot be read ({exc})") from None
    except (pickle.UnpicklingError, ValueError, TypeError, IndexError) as exc:
        raise PolicyLoadError(f"{path!r} is corrupt: its weights ({_WEIGHTS_MEMBER}) are not a tensor "
                              f"dictionary ({type(exc).__name__}: {exc})") from None
    except _UnsupportedFormatError as exc:
        try:
            return _torch_state_dict(raw, path, str(exc))
        except PolicyLoadError:
            raise
        except Exception as torch_exc:  # torch's loader refuses in its own ways, ValueError above included
            first = str(torch_exc).strip().splitlines()[0] if str(torch_exc).strip() else ""
            raise PolicyLoadError(f"{path!r}: its weights ({_WEIGHTS_MEMBER}) cannot be read: {exc}; torch: "
                                  f"{type(torch_exc).__name__}: {first}") from None


# ---------------------------------------------------------------------- the network
class NumpyPolicy:
    """The logits of an SB3 multilayer-perceptron policy, computed in numpy.

    ``layers`` are ``(weight (in, out), bias (out,))`` pairs: the hidden layers (each
    followed by ``activation``) then the action head."""

    def __init__(self, info: PolicyInfo, layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.info = info
        self.layers = layers
        self._act = _ACTIVATIONS[info.activation]

    @classmethod
    def from_state_dict(cls, info: PolicyInfo, state: Mapping[str, np.ndarray]) -> NumpyPolicy:
        path = info.path
        extra = [k for k in state if k.startswith(("features_extractor.", "pi_features_extractor."))]
        if extra:
            raise PolicyLoadError(f"{path!r}: the policy has a learned feature extractor ({extra[0]}); this bot "
                                  "runs SB3's MlpPolicy (flatten, hidden layers, linear head)")
        if info.activation not in _ACTIVATIONS:
            raise PolicyLoadError(f"{path!r}: hidden activation {info.activation!r} is not supported; "
                                  f"expected one of {', '.join(_ACTIVATIONS)}")
        prefix = "mlp_extractor.policy_net."
        indices = sorted(int(k[len(prefix):].split(".")[0]) for k in state if k.startswith(prefix)
                         and k.endswith(".weight"))
        names = [f"{prefix}{i}" for i in indices] + ["action_net"]
        layers = []
        width = info.observation_size
        for name in names:
            w, b = state.get(f"{name}.weight"), state.get(f"{name}.bias")
            if w is None or b is None or w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != width:
                raise PolicyLoadError(
                    f"{path!r}: the weights {name}.weight/.bias are missing or do not fit (expected a layer "
                    f"taking {width} inputs); not an SB3 MlpPolicy of this observation size"
                )
            layers.append((np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)))
            width = w.shape[0]
        if width != info.num_actions:
            raise PolicyLoadError(f"{path!r}: the action head has {width} outputs for {info.num_actions} actions")
        return cls(info, layers)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = obs
        *hidden, (w, b) = self.layers
        for hw, hb in hidden:
            x = self._act(x @ hw + hb)
        return x @ w + b


def load_policy(path: str | Path) -> NumpyPolicy:
    """The policy in the zip at ``path``, in numpy (see the module doc); raises
    :class:`PolicyLoadError` for a missing, truncated, corrupt or unsupported file."""
    with _open_zip(path) as zf:
        info = _info(zf, str(path))
        state = _state_dict(zf, str(path))
    return NumpyPolicy.from_state_dict(info, state)


# ---------------------------------------------------------------------- the bot
class PPOBot(Bot):
    """Plays a trained PPO policy. See the module documentation."""

    name = "ppo"
    #: it only reads view fields, so the learner environment may pass a zero-copy LiveView
    accepts_live_view = True

    def __init__(
        self,
        path: str | Path | None = None,
        seed: int | None = None,
        sample: Any = False,
        temperature: float = 1.0,
        *,
        game: str = "keltis",
        num_players: int | None = None,
    ) -> None:
        super().__init__(seed)
        if path is None:
            raise ValueError("the ppo bot needs a policy file: 'ppo:PATH', e.g. ppo:policies/keltis_2p.zip")
        self.sample = _flag("sample", sample)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"option temperature must be a number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.path = str(path)
        self.policy = load_policy(path)
        self.info = self.policy.info
        self.info.check(game, num_players)
        self.encoder = get_game(game).make_encoder(self.info.num_players, self.info.features)
        if self.encoder.size != self.info.observation_size:
            raise PolicyLoadError(
                f"{self.info.describe()} taking observations of size {self.info.observation_size}, but this "
                f"{self.info.game} encoder makes {self.encoder.size}: the observation changed since it was trained"
            )

    def logits(self, view: Any) -> np.ndarray:
        """The policy's unmasked action logits for ``view``."""
        if view.num_players != self.info.num_players:
            self.info.check(self.info.game, view.num_players)
        return self.policy(self.encoder.encode(view))

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("PPOBot.act called for a view with no legal action (not this player's turn)")
        return self.choose(legal, self.logits(view))

    def choose(self, legal: Any, logits: np.ndarray) -> int:
        """The action this bot plays among ``legal`` given the policy's ``logits`` for the
        view (a batched caller computes the logits of many views in one forward pass)."""
        legal_logits = logits[list(legal)]
        if not self.sample:
            return int(legal[int(np.argmax(legal_logits))])
        z = legal_logits.astype(np.float64) / self.temperature
        weights = np.exp(z - z.max())
        return int(self.rng.choices(legal, weights=weights.tolist())[0])

    def __repr__(self) -> str:
        extra = f", sample=1, temperature={self.temperature:g}" if self.sample else ""
        return f"PPOBot({self.path!r}{extra})"


__all__ = [
    "INFO_MEMBER",
    "NumpyPolicy",
    "PPOBot",
    "PolicyInfo",
    "PolicyLoadError",
    "is_whole_zip",
    "load_policy",
    "read_policy_info",
    "write_policy_info",
]
