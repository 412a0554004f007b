"""``keltis serve``: the browser app (docs/serve.md). Play either game against the bundled
bots and the agents named with ``--agent``, watch agents play, replay records, and ask the
agents' analysis of a move, in a page at the printed address.

It binds 127.0.0.1 unless ``--host`` says otherwise, with a warning that anyone who can
reach the port can play and use the server's agents. FastAPI and uvicorn (the ``web``
extra) are imported only when the server starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path

from keltis_env.web.records import DEFAULT_SAVE_DIR

from .arguments import add_agent_options, add_search_iterations, count, seconds

HELP = "play, watch and replay games in the browser (a local web app; --agent adds agents)"

#: the bots' per-move time limit unless --move-seconds is given (a bot over it loses on time)
DEFAULT_MOVE_SECONDS = 5.0
#: the names that reach only this machine (besides the loopback addresses, 127.0.0.0/8 and ::1)
LOCAL_HOSTS = ("localhost",)
#: the addresses that bind every interface, and the loopback address a browser here opens them by
WILDCARD_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def is_local(host: str) -> bool:
    """Whether ``host`` reaches only this machine: ``localhost`` or a loopback address
    (127.0.0.0/8, ``::1``)."""
    if host.lower() in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_address(host: str, port: int) -> str:
    """The address a browser opens: a wildcard host (``""``, ``0.0.0.0``, ``::``) by this
    machine's loopback address, an IPv6 address in brackets."""
    shown = WILDCARD_HOSTS.get(host, host)
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/"


def minutes(text: str) -> float:
    """The type of ``--idle-minutes``: a finite number of minutes > 0, at most a week."""
    try:
        return seconds(10080.0)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a number of minutes > 0 and <= 10080, got {text!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=count(0, 65535), default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--agent", action="append", default=[], metavar="SPEC",
                   help="an agent the page may seat besides the bundled bots (repeatable), e.g. "
                        "ppo:policies/keltis_2p.zip or py:examples/my_agent.py:EpsilonFirst; the page can name only "
                        "these")
    p.add_argument("--record", action="append", default=[], metavar="PATH",
                   help="a game record, or a folder of *.json records, the page may replay (repeatable)")
    p.add_argument("--save-dir", default=DEFAULT_SAVE_DIR, metavar="DIR",
                   help=f"where the page saves games (created at the first save; default ./{DEFAULT_SAVE_DIR}); "
                        "the record of an unfinished game is only saved here, never sent to the page")
    p.add_argument("--max-games", type=count(1, 10000), default=32,
                   help="games (and replays) open at once (default 32)")
    p.add_argument("--idle-minutes", type=minutes, default=30.0, metavar="MINUTES",
                   help="close a game unused for this long (default 30)")
    p.add_argument("--analysis-seconds", type=seconds(600.0), default=10.0, metavar="S",
                   help="time an analysis may take, per part (default 10); a whole-game search, per position")
    add_search_iterations(p)
    p.add_argument("--search-jobs", type=count(1, 64), default=2, metavar="N",
                   help="whole-game searches of replays that may run at once (default 2)")
    add_agent_options(p, DEFAULT_MOVE_SECONDS)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from keltis_env.web.app import create_app
    except ImportError as exc:
        print(f"keltis serve: error: {exc.name or exc} is missing; install the web extra: "
              "pip install 'keltis-rl[web]'", file=sys.stderr)
        return 2
    from keltis_env.core.output_files import OutputPathError, check_output_dir
    from keltis_env.web.agents import Agents
    from keltis_env.web.guard import allowed_hosts
    from keltis_env.web.records import RecordFiles, SaveFolder
    from keltis_env.web.sessions import SessionStore, Settings

    try:
        check_output_dir(args.save_dir, "the save folder (--save-dir)")
        agents = Agents(args.agent)
        records = RecordFiles(args.record)
    except (ValueError, OutputPathError) as exc:
        print(f"keltis serve: error: {exc}", file=sys.stderr)
        return 2
    settings = Settings(agents, args.move_seconds, args.analysis_seconds, args.traceback, args.search_iterations,
                        args.search_jobs)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"keltis serve: error: cannot listen on {args.host} port {args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    # the server answers only requests addressed to it (Host) from its own page (Origin)
    app = create_app(settings, SessionStore(args.max_games, args.idle_minutes * 60), records,
                     SaveFolder(args.save_dir), allowed_hosts(args.host, port))
    if not is_local(args.host):
        where = args.host or "every interface"
        print(f"keltis serve: warning: listening on {where}: anyone who can reach port {port} can play and use "
              "this server's agents", file=sys.stderr)
    beyond = (f"; from another machine, this machine's address and port {port}"
              if args.host in WILDCARD_HOSTS else "")
    print(f"keltis serve: open {page_address(args.host, port)} (Ctrl-C stops{beyond})", flush=True)
    print(f"keltis serve: games the page saves go to {Path(args.save_dir).resolve()}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: a free one), so the address printed is the real one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)
