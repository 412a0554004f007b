"""Output paths are checked by what they are, before any work, for every command that writes
a file (keltis_env.core.output_files); a refusal is one line, exit status 2, and changes nothing."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from keltis_env import evaluation
from keltis_env.cli import bench as bench_cli
from keltis_env.cli import main
from keltis_env.core.output_files import OutputPathError, atomic_write_text, check_output_dir, check_output_file
from keltis_env.evaluation.records import LOCK_NAME

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = ["evaluate", "random", "random", "--games", "2", "--workers", "1", "--quiet"]


@pytest.fixture
def no_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if `keltis bench` measures anything."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("bench measured although --json is wrong")

    for name in ("engine_run", "match_run", "aec_run"):
        monkeypatch.setattr(bench_cli, name, refuse)


def entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


# ------------------------------------------------------------ checked by what it is (item 6)
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_folder_that_takes_no_files_is_refused_even_for_root() -> None:
    # os.access says yes to root everywhere; the check tries for real
    with pytest.raises(OutputPathError, match="no file can be created in the folder /proc"):
        check_output_file("/proc/x.json", "the summary")
    with pytest.raises(OutputPathError, match="no file can be created in the folder /proc"):
        check_output_dir("/proc/new-folder", "the records folder")


def test_a_read_only_file_system_is_refused_without_trusting_permission_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: True)  # as for root

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(OutputPathError, match=r"no file can be created in the folder .*\(Read-only file system\)"):
        check_output_file(tmp_path / "a" / "x.json", "the summary")


def test_the_check_leaves_nothing_behind(tmp_path: Path) -> None:
    check_output_file(tmp_path / "x.json", "the summary")
    check_output_file(tmp_path / "new" / "deeper" / "x.json", "the summary")
    check_output_dir(tmp_path / "records", "the records folder")
    assert entries(tmp_path) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_evaluate_json_under_proc_is_refused_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    assert main([*EVALUATE, "--json", "/proc/x.json", "--records", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--json: cannot write the JSON summary to /proc/x.json" in err
    assert entries(tmp_path) == []


@pytest.mark.parametrize("inside", ["same", "inside", "partial inside"])
def test_evaluate_refuses_json_and_records_that_overlap_before_any_game(
    inside: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    records = tmp_path / "rec"
    json_path = {"same": records, "inside": records / "out.json", "partial inside": records / "out.json"}[inside]
    argv = [*EVALUATE, "--json", str(json_path), "--records", str(records)]
    if inside == "partial inside":  # --csv's partial name is checked too
        argv = [*EVALUATE, "--csv", str(json_path), "--records", str(records)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "overlap (the same path or one inside the other)" in err and "Traceback" not in err
    assert entries(tmp_path) == []  # the records folder was not made


# ------------------------------------------------ special files and links (item 8)
def a_char_device(tmp_path: Path) -> Path:
    """A character device like /dev/null in ``tmp_path`` (root only), so that a failure of
    the test cannot replace the real /dev/null."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        node.write_bytes(b"probe")  # a folder mounted nodev refuses to open devices
    except OSError:
        pytest.skip("cannot make a usable device node here (needs root and a folder without nodev)")
    return node


@pytest.mark.parametrize(
    "argv",
    [
        [*EVALUATE, "--json", "{dev}", "--csv", "{dev}"],
        ["bench", "--game", "dice", "--players", "2", "--loops", "engine", "--seconds", "0.01", "--repeats", "1",
         "--json", "{dev}"],
        ["demo", "--game", "dice", "--every", "end", "--record", "{dev}"],
        ["docs", "--readme", "{dev}"],
    ],
    ids=["evaluate", "bench", "demo", "docs"],
)
def test_a_device_output_is_written_into_never_replaced(argv: list[str], tmp_path: Path) -> None:
    device = a_char_device(tmp_path)
    assert main([arg.replace("{dev}", str(device)) for arg in argv]) == 0
    assert stat.S_ISCHR(device.stat().st_mode), "the device was replaced by a regular file"
    assert entries(tmp_path) == ["null"]  # no temporary file left


def test_dev_null_passes_the_check_and_stays_a_device() -> None:
    assert check_output_file("/dev/null", "the summary") == Path("/dev/null")
    atomic_write_text("/dev/null", "nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(OutputPathError, match="neither a regular file, a character device nor a pipe"):
            check_output_file(path, "the summary")


def test_a_dangling_symlink_is_checked_at_its_target(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    link = tmp_path / "link.json"
    link.symlink_to(blocker / "x.json")
    with pytest.raises(OutputPathError, match="is not a folder"):
        check_output_file(link, "the summary")


# ------------------------------------------ outputs checked first, no *.tmp left (item 7)
@pytest.mark.parametrize("bad", ["folder", "under a file"])
def test_bench_json_is_checked_before_measuring(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_bench: None
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = tmp_path if bad == "folder" else blocker / "out.json"
    assert main(["bench", "--seconds", "0.01", "--repeats", "1", "--json", str(target)]) == 2
    assert "keltis bench: error: --json: cannot write the results" in capsys.readouterr().err
    assert entries(tmp_path) == ["file"]


def test_training_bench_json_is_checked_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("stable_baselines3")
    from training.bench import __main__ as bench
    from training.bench import throughput

    monkeypatch.setattr(throughput, "measure", lambda *a, **k: pytest.fail("measured although --json is wrong"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for target in (blocker / "out.json", tmp_path, ""):
        with pytest.raises(SystemExit) as exit_:
            bench.main(["--config", str(ROOT / "configs" / "train" / "smoke.yaml"), "--seconds", "1",
                        "--json", str(target)])
        assert exit_.value.code == 2
        assert "--json: cannot write the results" in capsys.readouterr().err
    assert entries(tmp_path) == ["file"]


@pytest.mark.parametrize("command", ["record", "fit"])
def test_imitate_out_is_checked_before_recording_or_fitting(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("stable_baselines3")
    from training.imitate import __main__ as imitate
    from training.imitate import network, record

    monkeypatch.setattr(record, "record", lambda *a, **k: pytest.fail("recorded although --out is wrong"))
    monkeypatch.setattr(network, "fit_policy", lambda *a, **k: pytest.fail("fitted although --out is wrong"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    extra = ["--data", str(blocker)] if command == "fit" else []
    for target in (blocker / "out", tmp_path):
        argv = [command, "--config", str(ROOT / "tests" / "data" / "imitate_small.yaml"), "--out", str(target), *extra]
        assert imitate.main(argv) == 2
        assert f"python -m training.imitate {command}: --out: cannot write" in capsys.readouterr().err
    assert entries(tmp_path) == ["file"]


def test_a_recording_without_the_npz_suffix_leaves_no_temporary_file(tmp_path: Path) -> None:
    import numpy as np

    from training.imitate.demonstrations import Demonstrations, load_demonstrations, save_demonstrations

    data = Demonstrations(np.zeros((2, 3), np.int8), np.ones((2, 4), bool), np.zeros(2, np.int64),
                          np.zeros(2, np.float32), np.zeros((2, 0), np.float32))
    save_demonstrations(tmp_path / "demos", data, {"format": 1})
    assert entries(tmp_path) == ["demos"]  # numpy adds ".npz" to a name, never to a file object
    assert load_demonstrations(tmp_path / "demos")[1] == {"format": 1}


def test_imitate_fit_data_naming_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    from training.common.config import ConfigError
    from training.imitate.demonstrations import load_demonstrations

    with pytest.raises(ConfigError, match="is a folder; give a recording file"):
        load_demonstrations(tmp_path)
    with pytest.raises(ConfigError, match="the path is empty"):
        load_demonstrations("")


def test_runs_dir_naming_a_file_is_refused_before_the_run_folder(tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3")
    from training.common.config import ConfigError
    from training.sb3.config import load_config
    from training.sb3.run_folder import make_run_dir

    blocker = tmp_path / "runs"
    blocker.write_text("x")
    config = load_config(ROOT / "configs" / "train" / "smoke.yaml", [f"runs_dir={blocker}"])
    with pytest.raises(ConfigError, match=r"runs_dir: cannot create the runs folder \(runs_dir\) .*a file of that"):
        make_run_dir(config)
    assert entries(tmp_path) == ["runs"]


@pytest.mark.parametrize("case", ["empty", "folder", "not UTF-8", "missing"])
def test_docs_readme_that_cannot_be_read_or_written_is_refused_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe not text")
    path = {"empty": "", "folder": str(tmp_path), "not UTF-8": str(bad), "missing": str(tmp_path / "no.md")}[case]
    assert main(["docs", "--readme", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keltis docs: error: --readme: ") and err.count("\n") == 1
    assert {"empty": "the path is empty", "folder": "is a folder", "not UTF-8": "is not UTF-8 text",
            "missing": "not found"}[case] in err
    assert entries(tmp_path) == ["bad.md"] and bad.read_bytes() == b"\xff\xfe not text"


# ---------------------------------------------------------------- empty paths (item 10)
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--record", ""], "keltis demo: error: cannot write the game record (--record): the path is empty"),
        (["render", "--record", "", "--out", "{tmp}/x.png"], "keltis render: error: the record path is empty"),
        (["replay", "{record}", "--frames", ""], "cannot write the frames folder (--frames): the path is empty"),
        (["bench", "--json", ""], "keltis bench: error: --json: cannot write the results: the path is empty"),
        (["replay", ""], "keltis replay: error: the record path is empty; give a game record (a JSON file)"),
    ],
    ids=["demo --record", "render --record", "replay --frames", "bench --json", "replay RECORD"],
)
def test_an_empty_path_is_refused_not_ignored(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_bench: None
) -> None:
    record = tmp_path / "game.json"
    assert main(["demo", "--game", "dice", "--every", "end", "--record", str(record)]) == 0
    capsys.readouterr()
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{record}", str(record)) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1
    assert entries(tmp_path) == ["game.json"]


# --------------------------------------------- one evaluation per records folder (item 9)
def test_a_records_folder_held_by_an_evaluation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    from keltis_env.core.output_files import FolderLock

    folder = tmp_path / "rec"
    with FolderLock(folder, "the game records folder"):  # as another evaluation holds it
        held = (folder / LOCK_NAME).read_text()
        assert main([*EVALUATE, "--records", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"the game records folder {folder} is in use by process {os.getpid()}" in err
        assert entries(tmp_path) == [LOCK_NAME, "rec"] and (folder / LOCK_NAME).read_text() == held


def test_a_records_lock_left_by_a_killed_evaluation_does_not_block(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / LOCK_NAME).write_text("process 12345 (keltis evaluate)\n")  # its process is gone: no lock held
    evaluation.evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, records_dir=folder)
    assert sorted(p.name for p in folder.iterdir()) == ["game_00000.json", "game_00001.json"]


def test_the_records_lock_is_removed_when_the_evaluation_ends(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    evaluation.evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, records_dir=folder)
    assert sorted(p.name for p in folder.iterdir()) == ["game_00000.json", "game_00001.json"]
    with pytest.raises(evaluation.EvaluationError, match="already holds game records"):
        evaluation.evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, records_dir=folder)
    assert sorted(p.name for p in folder.iterdir()) == ["game_00000.json", "game_00001.json"]


def test_two_evaluations_started_at_once_never_share_a_records_folder(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    argv = [sys.executable, "-m", "keltis_env", "evaluate", "random", "random", "--games", "1000000",
            "--workers", "1", "--quiet", "--records", str(folder)]
    procs = [subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
             for _ in range(2)]
    try:
        deadline = time.monotonic() + 120
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = [p for p in procs if p.poll() is not None]
        assert len(refused) == 1, "one of the two evaluations must be refused while the other runs"
        running = next(p for p in procs if p is not refused[0])
        _, err = refused[0].communicate(timeout=10)
        assert refused[0].returncode == 2
        # refused by the lock, or, when the first has already written a record by then, by the records it holds
        assert (f"the game records folder {folder} is in use by process" in err
                or f"the game records folder {folder} already holds game records" in err), err
        assert running.poll() is None, "the first evaluation goes on"
        deadline = time.monotonic() + 60
        while not list(folder.glob("game_*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(running.pid, signal.SIGINT)
        out, err = running.communicate(timeout=60)
        assert running.returncode == 130, err
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    summary = out[out.index("PARTIAL RESULT"):]
    assert "Traceback" not in err and "PARTIAL RESULT" in summary
    names = sorted(p.name for p in folder.iterdir())
    assert LOCK_NAME not in names and names and all(n.startswith("game_") for n in names)
    assert json.loads((folder / names[0]).read_text())["game"] == "keltis"


def test_dev_stdout_into_a_pipe_is_written_into_the_pipe(tmp_path: Path) -> None:
    # /dev/stdout -> /proc/self/fd/1 -> a pipe: the link is followed to the pipe, not to a
    # folder that takes no files
    done = subprocess.run([sys.executable, "-m", "keltis_env", "demo", "--game", "dice", "--every", "end",
                           "--record", "/dev/stdout"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    record = done.stdout[done.stdout.index("\n{") + 1:done.stdout.rindex("}") + 1]
    assert json.loads(record)["game"] == "dice" and "record saved to /dev/stdout" in done.stdout
    assert entries(tmp_path) == []
