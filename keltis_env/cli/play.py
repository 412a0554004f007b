"""``keltis play``: a person plays against bots in the terminal.

The board is shown as text with only the person's own hand (R10: other hands are
private). At each of the person's decisions the legal moves are listed with numbers;
the person answers with a number, with the move's text (``play red 7 large``, ``draw
green``, ``bonus advance yellow``, ``pass``; a unique beginning such as ``draw g`` is
enough), or with a command: ``help``, ``board``, ``moves``, ``save [PATH]``, ``quit``.
Bad input gets a message and a new prompt. The bots' moves are printed as they are
made. The game record (with the players' names) is saved with ``--save`` or on request;
end of input or Ctrl-C stops the game cleanly and offers to save it. ``--save``'s path is
checked before the game starts, and records are written atomically
(:mod:`keltis_env.core.output_files`).

Generic over the games of :mod:`keltis_env.games`: it uses the game's descriptor
(options, record class, text board) and the state's ``legal_actions`` / ``apply`` /
``illegal_reason`` / ``view`` / ``scores``. :class:`PlaySession` takes its input and
output streams as arguments, so tests drive it with scripted input.
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from keltis_env.core.errors import KeltisError

HELP = "play against bots in the terminal (your own hand only; moves by number or text)"

#: Commands understood at the move prompt, besides a move's number or text.
COMMANDS = {
    "help": "show this help",
    "board": "show the board again",
    "moves": "list the legal moves again",
    "save [PATH]": "save the game record so far (to --save's path by default)",
    "quit": "stop the game (you are offered to save it)",
}
_ALIASES = {"?": "help", "h": "help", "b": "board", "m": "moves", "q": "quit", "exit": "quit"}
_MOVE_COLUMNS = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.core.game import game_names

    p.add_argument("--game", choices=game_names(), default="keltis", help="which game (default: keltis)")
    p.add_argument("--players", type=int, choices=[2, 3, 4], help="number of players, you included (default: 2)")
    p.add_argument(
        "--bots",
        nargs="+",
        metavar="AGENT",
        help="agent specs of the other seats in order, or one spec for all (default: heuristic where "
        "the game has it, else random)",
    )
    p.add_argument("--seat", type=int, default=0, help="your seat, 0..players-1 (default 0)")
    p.add_argument("--seed", type=int, help="the deal (default: a random one, printed so you can replay it)")
    p.add_argument("--save", metavar="PATH", help="save the game record (JSON) here when the game ends or stops")
    p.add_argument("--name", default="human", help="your name in the game record (default: human)")
    p.add_argument("--max-turns", type=int, help="truncate the game after this many turns (R8)")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    console = Console(stdin, stdout)
    try:
        session = PlaySession.from_args(args, console)
    except ValueError as exc:
        console.say(f"keltis play: error: {exc}")
        return 2
    return session.play()


class Console:
    """Line input and output. With the process's own terminal, input goes through
    :func:`input` (line editing); otherwise lines are read from ``stdin``."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self._terminal = (
            self.stdin is sys.stdin and self.stdout is sys.stdout and sys.stdin.isatty() and sys.stdout.isatty()
        )

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def ask(self, prompt: str) -> str | None:
        """One line without its newline; ``None`` at end of input. Ctrl-C propagates."""
        if self._terminal:
            try:
                return input(prompt)
            except EOFError:
                self.say()
                return None
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.say()
            return None
        return line.rstrip("\r\n")


class _StopPlayError(Exception):
    """The person stopped the game (``quit``, end of input, Ctrl-C)."""

    def __init__(self, why: str, code: int = 0) -> None:
        super().__init__(why)
        self.code = code


class _Announced:
    """A bot under the match loop that logs each of its moves for the person to read."""

    def __init__(self, bot: Any, seat: int, log: list[tuple[int, int]]) -> None:
        self.bot, self.seat, self.log = bot, seat, log

    def act(self, view: Any) -> int:
        try:
            action = self.bot.act(view)
        except Exception as exc:  # a bot's failure (an illegal move, an error in the user's agent) ends the game
            text = str(exc) if isinstance(exc, KeltisError) else f"{type(exc).__name__}: {exc}"
            raise _StopPlayError(f"the bot at seat {self.seat} ({self.bot!r}) failed: {text}", code=1) from exc
        self.log.append((self.seat, action))
        return action

    def __repr__(self) -> str:
        return repr(self.bot)


class PlaySession:
    """One game between a person (``seat``) and bots (every other seat)."""

    def __init__(
        self,
        game: str,
        num_players: int,
        bot_specs: Sequence[str],
        seat: int,
        seed: int,
        console: Console,
        name: str = "human",
        save_path: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        from keltis_env.bots import make_bot
        from keltis_env.core.game import get_game

        if not 0 <= seat < num_players:
            raise ValueError(f"--seat must be 0..{num_players - 1} with {num_players} players, got {seat}")
        if len(bot_specs) != num_players - 1:
            raise ValueError(f"{num_players} players need {num_players - 1} bot specs, got {len(bot_specs)}")
        self.game = game
        self.spec = get_game(game)
        self.record_cls = self.spec.record_cls
        self.console = console
        self.seat = seat
        self.seed = seed
        self.save_path = save_path
        config = self.spec.make_config(num_players=num_players, **(options or {}))
        others = iter(bot_specs)
        self.names = [name if p == seat else next(others) for p in range(num_players)]
        # Bot seeds follow the game seed, as in ``keltis demo``, so a game can be replayed.
        self.bots = {
            p: make_bot(self.names[p], seed=seed * 100 + p, game=game, num_players=num_players)
            for p in range(num_players) if p != seat
        }
        self.record, self.state = self.record_cls.start(config, seed, players=list(self.names))
        self._hand = self.spec.hand_text  # None: the game has no hidden hand to show

    @classmethod
    def from_args(cls, args: argparse.Namespace, console: Console) -> PlaySession:
        from keltis_env.bots import bot_names
        from keltis_env.core.output_files import OutputPathError, check_output_file

        if args.save is not None:  # before the game: a path that cannot be written loses nothing yet
            try:
                check_output_file(args.save, "the game record")
            except OutputPathError as exc:
                raise ValueError(f"--save: {exc}") from None
        specs = list(args.bots) if args.bots else []
        players = args.players or (len(specs) + 1 if len(specs) > 1 else 2)
        if not specs:
            specs = ["heuristic" if "heuristic" in bot_names(args.game) else "random"]
        if len(specs) == 1:
            specs = specs * (players - 1)
        if len(specs) != players - 1:
            raise ValueError(
                f"--bots needs one agent spec for every other seat ({players - 1}) or a single spec for all, "
                f"got {len(specs)}"
            )
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
        options = {"max_turns": args.max_turns} if args.max_turns is not None else {}
        return cls(args.game, players, specs, args.seat, seed, console, args.name, args.save, options)

    # ---------------------------------------------------------------- naming
    def label(self, p: int) -> str:
        return f"you (player {p})" if p == self.seat else f"player {p} ({self.names[p]})"

    def text(self, action: int) -> str:
        return self.record_cls.action_to_string(action)

    # ---------------------------------------------------------------- the game
    def play(self) -> int:
        say = self.console.say
        seats = ", ".join(self.label(p) for p in range(len(self.names)))
        say(f"{self.game}: seed {self.seed} (replay this deal with --seed {self.seed}); seats: {seats}")
        say("Type 'help' at any prompt for how to enter moves.")
        try:
            self.loop()
        except _StopPlayError as stop:
            return self.stopped(str(stop), stop.code)
        except KeyboardInterrupt:
            return self.stopped("interrupted", 130)
        return self.finished()

    def loop(self) -> None:
        """The game on the match loop: the person's seat is decided from outside, the bots'
        moves are announced together, one line per bot and turn."""
        from keltis_env.core.match import Match

        moves: list[tuple[int, int]] = []  # (seat, action) of the bots since the last announcement
        controllers = [None if p == self.seat else _Announced(self.bots[p], p, moves) for p in range(len(self.names))]
        match = Match(self.spec, self.state, controllers, record=True)
        self.record.actions = match.actions  # the record grows with every decision
        dirty = True  # the board changed since the person last saw it
        while True:
            match.play()  # the bots decide until it is the person's turn or the game is over
            self.announce(moves)
            if match.over:
                return
            if dirty:
                self.show_board()
                dirty = False
            action = self.ask_move()
            match.step(action)
            self.console.say(f"you: {self.text(action)}")
            dirty = True

    def announce(self, moves: list[tuple[int, int]]) -> None:
        """Say the bots' moves, consecutive moves of one seat on one line; empties ``moves``."""
        start = 0
        for i in range(1, len(moves) + 1):
            if i == len(moves) or moves[i][0] != moves[start][0]:
                texts = "; ".join(self.text(a) for _, a in moves[start:i])
                self.console.say(f"{self.label(moves[start][0])}: {texts}")
                start = i
        moves.clear()

    def show_board(self) -> None:
        self.console.say()
        self.console.say(call_supported(self.spec.board_text, self.state, show_hands=self.seat))

    def ask_move(self) -> int:
        """Ask until the person names a legal move; commands are handled on the way."""
        legal = self.state.legal_actions()
        self.show_moves(legal)
        while True:
            line = self.console.ask("your move> ")
            if line is None:
                raise _StopPlayError("end of input")
            action = self.interpret(line, legal)
            if action is not None:
                return action

    def show_moves(self, legal: Sequence[int]) -> None:
        say = self.console.say
        if self._hand is not None:
            say(f"Your hand: {self._hand(self.state, self.seat)}")
        step = getattr(self.state, "phase", None)
        step_name = f", {step.name.lower()} step" if step is not None else ""
        say(f"Your move (player {self.seat}{step_name}): type a number or the move's text")
        items = [f"{i:>3}  {self.text(a)}" for i, a in enumerate(legal, 1)]
        width = max(len(s) for s in items) + 3
        for start in range(0, len(items), _MOVE_COLUMNS):
            say("".join(s.ljust(width) for s in items[start : start + _MOVE_COLUMNS]).rstrip())

    def interpret(self, line: str, legal: Sequence[int]) -> int | None:
        """The legal action that ``line`` names, or ``None`` after printing why not (or
        after running a command)."""
        say = self.console.say
        text = " ".join(line.strip().lower().split())
        hint = f"type a number 1..{len(legal)}, a move's text such as '{self.text(legal[0])}', or 'help'"
        if not text:
            say(f"Nothing typed: {hint}.")
            return None
        word, _, rest = text.partition(" ")
        command = _ALIASES.get(word, word)
        if (command in ("help", "board", "moves", "quit") and not rest) or command == "save":
            self.command(command, rest.strip(), legal)
            return None
        if text.isdigit():
            n = int(text)
            if 1 <= n <= len(legal):
                return legal[n - 1]
            say(f"There is no move number {n}: {hint}.")
            return None
        try:
            action = self.record_cls.string_to_action(text)
        except ValueError as exc:
            texts = {a: self.text(a) for a in legal}
            matches = [a for a, t in texts.items() if t.startswith(text)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                shown = ", ".join(f"{legal.index(a) + 1} = {texts[a]}" for a in matches)
                say(f"'{text}' could be several moves: {shown}. Type more of it, or its number.")
            else:
                say(f"Not understood: {exc}. Or {hint}.")
            return None
        if action in legal:
            return action
        reason = self.state.illegal_reason(action) if hasattr(self.state, "illegal_reason") else None
        why = reason or "it is not in the list"
        say(f"'{self.text(action)}' is not a legal move now: {why}. {hint[0].upper()}{hint[1:]}.")
        return None

    def command(self, command: str, rest: str, legal: Sequence[int]) -> None:
        say = self.console.say
        if command == "help":
            say(
                "Enter a move by its number in the list or by its text, e.g. "
                f"'{self.text(legal[0])}'; the start of a text is enough when only one move begins with it."
            )
            for name, what in COMMANDS.items():
                say(f"  {name:<12} {what}")
        elif command == "board":
            self.show_board()
            self.show_moves(legal)
        elif command == "moves":
            self.show_moves(legal)
        elif command == "save":
            path = rest or self.save_path
            if not path:
                say("Save where? Type 'save PATH' (or start the game with --save PATH).")
            else:
                self.save(path)
        elif command == "quit":
            raise _StopPlayError("you quit")

    # ---------------------------------------------------------------- the end
    def save(self, path: str) -> bool:
        """Write the record so far to ``path`` atomically (an interrupted save leaves the
        old file or the new one); a failure is reported and returns False."""
        from keltis_env.core.output_files import OutputPathError, atomic_write_text, check_output_file

        try:
            atomic_write_text(check_output_file(path, "the game record"), json.dumps(self.record.to_dict(), indent=1))
        except OutputPathError as exc:
            self.console.say(f"Could not save the game record: {exc}")
            return False
        except OSError as exc:
            self.console.say(f"Could not save the game record to {path}: {exc}")
            return False
        self.console.say(f"Game record saved to {path} ({len(self.record.actions)} moves).")
        return True

    def offer_save(self) -> bool:
        """Save to ``--save``'s path, or ask whether and where to save. Returns False only
        when saving to ``--save``'s path failed."""
        if self.save_path:
            return self.save(self.save_path)
        default = f"{self.game}-{self.seed}.json"
        try:
            while True:
                answer = self.console.ask("Save the game record? [y/N] ")
                if answer is None or answer.strip().lower() not in ("y", "yes"):
                    return True
                path = self.console.ask(f"File name [{default}]: ")
                if path is None:
                    return True
                if self.save(path.strip() or default):
                    return True
        except KeyboardInterrupt:
            self.console.say()
            return True

    def scores_text(self) -> str:
        scores = self.state.scores()
        return ", ".join(f"{self.label(p)} {s}" for p, s in enumerate(scores))

    def finished(self) -> int:
        say = self.console.say
        state = self.state
        self.show_board()
        how = "was truncated" if getattr(state, "truncated", False) else "is over"
        end = getattr(state, "end", None)
        why = f" ({end.name.lower()})" if end is not None and not getattr(state, "truncated", False) else ""
        say(f"The game {how}{why} after {state.turn} turns.")
        say(f"Final scores: {self.scores_text()}")
        scores = state.scores()
        best = max(scores)
        winners = [p for p, s in enumerate(scores) if s == best]
        if winners == [self.seat]:
            say("You win!")
        elif self.seat in winners:
            say(f"You share the victory with {', '.join(self.label(p) for p in winners if p != self.seat)}.")
        else:
            say(f"Winner: {' and '.join(self.label(p) for p in winners)}.")
        return 0 if self.offer_save() else 1

    def stopped(self, why: str, code: int) -> int:
        self.console.say()
        self.console.say(f"Game stopped ({why}) after {self.state.turn} turns. Scores so far: {self.scores_text()}")
        if not self.offer_save():
            return 1
        return code


def call_supported(fn: Callable[..., Any], state: Any, **kwargs: Any) -> Any:
    """``fn(state, **kwargs)`` with only the keyword arguments ``fn`` accepts: a game's
    board function without ``show_hands`` belongs to a game without hidden hands."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):  # a forwarder, e.g. GameDescriptor.board_image
        return fn(state, **kwargs)
    return fn(state, **{k: v for k, v in kwargs.items() if k in params})
