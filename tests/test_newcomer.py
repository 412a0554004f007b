"""What a newcomer meets first: an install by hand in a virtualenv, examples that name files
that exist, extras that say where they belong, and server addresses that a browser opens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from keltis_env.cli.serve import is_local, page_address

ROOT = Path(__file__).resolve().parents[1]


def test_readme_install_by_hand_makes_and_activates_a_virtualenv_before_keltis() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Install"):readme.index("## Quick start")]
    venv, activate, keltis = (section.index(x) for x in ("python3 -m venv .venv", ". .venv/bin/activate",
                                                         "keltis --version"))
    assert venv < activate < section.index("pip install") < keltis


def _py_agent_specs(text: str) -> list[tuple[str, str]]:
    """The ``py:FILE.py:NAME`` agents of the commands in ``text`` (lines that run ``keltis``,
    not the error messages quoted beside them)."""
    commands = [line for line in text.splitlines() if re.match(r"\s*keltis \w+ ", line) and "error:" not in line]
    return [spec for line in commands for spec in re.findall(r"py:([\w./-]+\.py):(\w+)", line)]


@pytest.mark.parametrize("path", ["README.md", "docs/serve.md", "docs/benchmark.md", "docs/agents.md",
                                  "keltis_env/cli/evaluate.py", "keltis_env/cli/ladder.py",
                                  "keltis_env/cli/serve.py"])
def test_pasted_examples_do_not_name_agent_files_that_do_not_exist(path: str) -> None:
    text = (ROOT / path).read_text()
    if path.endswith(".py"):  # a command's help: its examples, and the option help that names an agent
        text += "\n" + "\n".join(f"keltis x {m}" for m in re.findall(r"py:\S+", text))
    for file, name in _py_agent_specs(text):
        if file in ("FILE.py", "my.py"):  # placeholders written as such
            continue
        code = ROOT / file
        assert code.is_file(), f"{path} names py:{file}:{name}, and {file} does not exist"
        assert re.search(rf"^(def|class) {name}\b", code.read_text(), re.M), f"{file} has no {name}"


def test_serve_doc_replays_a_record_it_makes_first() -> None:
    block = (ROOT / "docs/serve.md").read_text().split("```sh", 1)[1].split("```", 1)[0]
    made = re.search(r"keltis demo --record (\S+)", block)
    assert made and f"--record {made.group(1)}" in block.split("keltis serve", 1)[1]


def test_extras_left_out_of_all_say_so() -> None:
    readme = (ROOT / "README.md").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    all_extras = re.search(r'^all = \["keltis-rl\[([\w,]+)\]"\]', pyproject, re.M)
    assert all_extras is not None
    all_row = next(line for line in readme.splitlines() if line.startswith("| `all`"))
    for extra in ("clients", "distributed", "peers"):
        assert extra not in all_extras.group(1).split(",")
        assert f"`{extra}`" in all_row.split("not", 1)[1], all_row  # the row says what it leaves out
    clients_row = next(line for line in readme.splitlines() if line.startswith("| `clients`"))
    assert "not in `all`" in clients_row and "own virtualenv" in clients_row
    integrations = (ROOT / "docs/integrations.md").read_text()
    for library in ("TorchRL quick start", "Tianshou quick start"):
        head = integrations[integrations.index(library):][:80]
        assert "`clients` extra" in head, head


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.1.2.3", "::1", "localhost", "LOCALHOST"])
def test_loopback_addresses_are_not_warned_about(host: str) -> None:
    assert is_local(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "192.168.1.5", "example.org", "10.0.0.1"])
def test_addresses_beyond_this_machine_are_warned_about(host: str) -> None:
    assert not is_local(host)


@pytest.mark.parametrize(("host", "address"), [
    ("", "http://127.0.0.1:8000/"), ("0.0.0.0", "http://127.0.0.1:8000/"), ("::", "http://[::1]:8000/"),
    ("::1", "http://[::1]:8000/"), ("127.0.0.2", "http://127.0.0.2:8000/"), ("example.org", "http://example.org:8000/"),
])
def test_the_bind_message_names_an_address_a_browser_opens(host: str, address: str) -> None:
    assert page_address(host, 8000) == address


def test_ladder_states_its_expected_time_before_the_first_game(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from benchmark_helpers import tiny_protocol

    from keltis_env.benchmark import load_protocol
    from keltis_env.benchmark.ladder import duration_text, expected_seconds
    from keltis_env.cli import main

    folder = tiny_protocol(tmp_path / "p", deals=1)
    assert main(["ladder", "heuristic", "--track", "dice-2p", "--protocol", str(folder), "--workers", "1",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("keltis ladder: 4 games to play; the rungs' moves take about ")
    assert out.index("games to play") < out.index("rating:")
    v1 = load_protocol(None).track("keltis-4p")
    hours = expected_seconds(v1, list(v1.rungs), False, 2)
    assert hours is not None and 3600 < hours < 24 * 3600  # "hours on two cores", as the help says
    assert duration_text(40) == "40 s" and duration_text(720) == "12 min" and duration_text(11400) == "3 h 10 min"
