"""Reads of files named by a user are bounded: a YAML alias bomb, a huge or special file
(FIFO, ``/dev/zero``), a 5,000-digit number or a lone surrogate is refused at once with one
line naming the file, never a hang, a traceback or memory exhausted."""

from __future__ import annotations

import io
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from keltis_env.cli import build_parser
from keltis_env.cli import replay as replay_cli
from keltis_env.core.errors import ConfigError, RecordError
from keltis_env.core.game import load_record
from keltis_env.core.record import MAX_NUMBER_DIGITS, MAX_RECORD_BYTES, read_record_json
from keltis_env.games.keltis import GameConfig, GameRecord
from training.common.config import MAX_YAML_BYTES, MAX_YAML_VALUES, apply_override, read_yaml
from training.sb3.config import load_config

#: nine levels of nine aliases: 600 bytes that stand for 9**9 (387 million) values
ALIAS_BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["total_timesteps: *a8"]
)


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A read that blocks (a FIFO without a writer) fails the test instead of hanging it."""
    def timeout(signum: int, frame: object) -> None:
        raise TimeoutError("the read blocked")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------- configs
def test_config_alias_bomb_is_refused_at_once_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB) < 700
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert str(path) in message and f"more than {MAX_YAML_VALUES:,} values" in message
    assert "\n" not in message


def test_set_value_alias_bomb_is_refused() -> None:
    bomb = "[" + ", ".join(["&a [x, x, x, x, x, x, x, x, x, x]"] + ["*a"] * 3) + "]"
    assert read_yaml(bomb)  # a few aliases are fine
    nested = "{" + ", ".join([f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]) + "}"
    with pytest.raises(ConfigError, match="alias bomb"):
        apply_override({}, f"total_timesteps={{a0: &a0 [x], {nested[1:]}")


def test_self_referencing_yaml_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("network:\n  net_arch: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="contains it"):
        load_config(path)


def test_config_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_YAML_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ConfigError, match=f"at most {MAX_YAML_BYTES:,}"):
        load_config(path)


def test_config_that_is_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(fifo)


# ---------------------------------------------------------------------- records
def _replay(path: str) -> tuple[int, str]:
    args = build_parser().parse_args(["replay", path])
    out, err = io.StringIO(), io.StringIO()
    code = replay_cli.run(args, stdin=io.StringIO(), stdout=out, stderr=err)
    return code, err.getvalue()


def _one_error_line(code: int, err: str, *parts: str) -> None:
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


def test_replay_of_dev_zero_is_refused_without_reading_it() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    code, err = _replay("/dev/zero")
    _one_error_line(code, err, "/dev/zero is not a regular file")


def test_replay_of_a_fifo_without_writer_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code, err = _replay(str(fifo))
    _one_error_line(code, err, "not a regular file")


def test_replay_of_a_record_over_the_size_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_RECORD_BYTES + 1)
    code, err = _replay(str(path))
    _one_error_line(code, err, f"at most {MAX_RECORD_BYTES:,}")


def _record_with(tmp_path: Path, **changes: object) -> Path:
    record, _ = GameRecord.start(GameConfig(num_players=2), 3, players=["a", "b"])
    data = {**record.to_dict(), **changes}
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data))
    return path


def test_huge_number_in_a_record_gives_one_line_error(tmp_path: Path) -> None:
    path = _record_with(tmp_path, setup={"seed": 0})
    path.write_text(path.read_text().replace('"seed": 0', '"seed": ' + "9" * 5000))
    code, err = _replay(str(path))
    _one_error_line(code, err, "5,000 digits", f"at most {MAX_NUMBER_DIGITS}")
    with pytest.raises(RecordError, match="5,000 digits"):
        load_record(path)
    with pytest.raises(RecordError, match="5,000 digits"):
        GameRecord.load(path)


def test_lone_surrogate_in_a_record_gives_one_line_error(tmp_path: Path) -> None:
    path = _record_with(tmp_path, players=["\ud800", "b"])  # json.dumps writes it as \ud800
    code, err = _replay(str(path))
    _one_error_line(code, err, "players[0] holds a lone surrogate")
    with pytest.raises(RecordError, match="lone surrogate"):
        read_record_json(path)


def test_record_size_cap_is_the_servers() -> None:
    web = pytest.importorskip("keltis_env.web.records")
    assert web.MAX_RECORD_BYTES == MAX_RECORD_BYTES


# ---------------------------------------------------------------------- benchmark protocols
def test_protocol_alias_bomb_is_refused_at_once_naming_the_file(tmp_path: Path) -> None:
    from keltis_env.benchmark import BenchmarkError, load_protocol

    (tmp_path / "protocol.yaml").write_text(ALIAS_BOMB.replace("total_timesteps", "tracks"))
    start = time.monotonic()
    with pytest.raises(BenchmarkError, match="more than 100,000 values") as info:
        load_protocol(tmp_path)
    assert time.monotonic() - start < 5 and str(tmp_path / "protocol.yaml") in str(info.value)


def test_protocol_that_is_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    from keltis_env.benchmark import BenchmarkError, load_protocol

    os.mkfifo(tmp_path / "protocol.yaml")
    with pytest.raises(BenchmarkError, match="protocol"):  # refused (the no_hang fixture fails a blocked read)
        load_protocol(tmp_path / "protocol.yaml")
