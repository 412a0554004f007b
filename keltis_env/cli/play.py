"""``keltis play``: a person plays against bots in the terminal.

The board is shown as text with only the person's own hand (R10: other hands are
private), sized for an 80x24 terminal: every line is at most 80 columns, and one turn's
screen (board, hand, moves, prompt) fits 24 lines. At each of the person's decisions the
legal moves are numbered, as a list or, where a list would not fit, as a table (a row per
kind of move, a column per card or colour, the move's number in the cell). The person
answers with a number, with the move's text (``play red 7 large``, ``draw green``,
``bonus advance yellow``, ``pass``; a unique beginning such as ``draw g`` is enough),
or with a command: ``help`` (with a legend of the board's marks), ``board``, ``moves``,
``save [PATH]``, ``quit``. Dice are kept or re-rolled by naming them (``keep 3 5`` keeps
dice 3 and 5 and re-rolls the others, ``reroll 1 4``, ``keep``), not from a list. A move
that is the only legal one is played for the person, with a line saying so.

Bad input gets a one-line message on standard error and a new prompt. The bots' moves
are printed as they are made (the bots are asked in one place, :meth:`_Announced.act`).
The game record (with the players' names) is saved with ``--save`` or on request; end
of input or Ctrl-C stops the game cleanly and offers to save it. ``--save``'s path is
checked before the game starts, and records are written atomically
(:mod:`keltis_env.core.output_files`).

Generic over the games of :mod:`keltis_env.games`: it uses the game's descriptor
(options, record class, text board, hand line), the ``LEGEND`` of the module that
defines the game's text board, and the state's ``legal_actions`` / ``apply`` /
``illegal_reason`` / ``view`` / ``scores``. :class:`PlaySession` takes its input and
output streams as arguments, so tests drive it with scripted input.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from keltis_env.core.text import is_plain_text, terminal_text

from .arguments import add_agent_options
from .screen import (
    DICE_HELP,
    KEEP,
    REROLL,
    ROWS,
    WIDTH,
    board_legend,
    call_supported,
    dice_choices,
    layout_moves,
    legend_lines,
    numbered_list,
    parse_dice,
    wrap,
)

#: the bots' per-move time limit unless --move-seconds is given (a bot over it loses on time)
DEFAULT_MOVE_SECONDS = 60.0

HELP = "play against bots in the terminal (your own hand only; moves by number or text)"

#: Commands understood at the move prompt, besides a move's number or text.
COMMANDS = {
    "help": "this help",
    "board": "the board again",
    "moves": "every legal move, numbered",
    "save [PATH]": "save the game record so far (to --save's path by default)",
    "quit": "stop the game (you are offered to save it)",
}
_ALIASES = {"?": "help", "h": "help", "b": "board", "m": "moves", "q": "quit", "exit": "quit"}


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
    add_agent_options(p, DEFAULT_MOVE_SECONDS)


def run(
    args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    console = Console(stdin, stdout, stderr)
    try:
        session = PlaySession.from_args(args, console)
    except ValueError as exc:
        console.error(f"keltis play: error: {exc}", wrapped=False)
        return 2
    return session.play()


class Console:
    """Line input and output. With the process's own terminal, input goes through
    :func:`input` (line editing); otherwise lines are read from ``stdin``.

    Messages about bad input go to ``stderr``: the process's standard error, or, for a
    caller that gives ``stdout`` and no ``stderr``, that same stream (one transcript).
    ``rows`` is the height a screen must fit: the terminal's, else :data:`ROWS`."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        if stderr is None:
            stderr = sys.stderr if stdout is None else self.stdout
        self.stderr = stderr
        self._terminal = (
            self.stdin is sys.stdin and self.stdout is sys.stdout and sys.stdin.isatty() and sys.stdout.isatty()
        )
        self.rows = shutil.get_terminal_size((WIDTH, ROWS)).lines if self._terminal else ROWS

    def say(self, text: str = "") -> None:
        """``text`` as it is laid out (a board keeps its lines), its control characters
        escaped (:func:`~keltis_env.core.text.terminal_text`: a record's names cannot
        command the terminal)."""
        print(terminal_text(text, multiline=True), file=self.stdout, flush=True)

    def note(self, text: str) -> None:
        """A message, wrapped to :data:`WIDTH` columns."""
        self.say(wrap(text))

    def error(self, text: str, wrapped: bool = True) -> None:
        """A message about bad input or a failure on the error stream, wrapped unless it
        names a file (a path stays whole on its line, to be copied)."""
        self.stdout.flush()
        text = terminal_text(text, multiline=True)
        print(wrap(text) if wrapped else text, file=self.stderr, flush=True)

    def ask(self, prompt: str) -> str | None:
        """One line without its newline; ``None`` at end of input. Ctrl-C propagates."""
        prompt = terminal_text(prompt)
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
        action = self.bot.act(view)  # a failure is the match loop's to report (guard=True), with the seat
        self.log.append((self.seat, action))
        return action

    def __repr__(self) -> str:
        from keltis_env.core.errors import describe_value

        return describe_value(self.bot)


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
        move_seconds: float | None = DEFAULT_MOVE_SECONDS,
        traceback: bool = False,
    ) -> None:
        from keltis_env.bots import make_bot
        from keltis_env.core.game import get_game
        from keltis_env.core.match import check_move_seconds

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
        self.move_seconds = check_move_seconds(move_seconds)
        self.traceback = traceback
        self.forfeit: Any = None  # a bot's loss on time, when it took longer than move_seconds on a move
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
        if not is_plain_text(args.name):
            raise ValueError(f"--name must be a name of printable characters, got {terminal_text(repr(args.name))} "
                             "(no control characters, no undecodable bytes)")
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
        return cls(args.game, players, specs, args.seat, seed, console, args.name, args.save, options,
                   getattr(args, "move_seconds", DEFAULT_MOVE_SECONDS), getattr(args, "traceback", False))

    # ---------------------------------------------------------------- naming
    def label(self, p: int) -> str:
        return f"you (player {p})" if p == self.seat else f"player {p} ({self.names[p]})"

    def text(self, action: int) -> str:
        return self.record_cls.action_to_string(action)

    # ---------------------------------------------------------------- the game
    def play(self) -> int:
        seats = ", ".join(self.label(p) for p in range(len(self.names)))
        self.console.note(f"{self.game}: seed {self.seed} (replay this deal with --seed {self.seed})")
        self.console.note(f"Seats: {seats}")
        self.console.note("Type 'help' at any prompt for how to enter moves and what the board shows.")
        from keltis_env.evaluation.play import Terminated, sigterm_interrupts

        try:
            with sigterm_interrupts():  # Ctrl-C is the person's; a bot's own KeyboardInterrupt is its failure
                self.loop()
        except _StopPlayError as stop:
            return self.stopped(str(stop), stop.code)
        except KeyboardInterrupt as stop:
            return self.stopped("terminated" if isinstance(stop, Terminated) else "interrupted",
                                143 if isinstance(stop, Terminated) else 130)
        return self.finished()

    def bots_play(self, match: Any) -> None:
        """The bots decide until the person is to move or the game is over; a bot that
        fails (raises, exits, answers illegally) stops the game with a line naming it."""
        from keltis_env.core.errors import ActionError, ControllerError
        from keltis_env.evaluation.play import failed_text

        try:
            match.play()
        except ControllerError as exc:
            self.console.error(f"keltis play: error: {self.label(exc.seat)} {failed_text(exc)}", wrapped=False)
            if self.traceback and exc.trace:
                self.console.error(exc.trace.rstrip(), wrapped=False)
            raise _StopPlayError(f"{self.label(exc.seat)} failed", code=1) from None
        except ActionError as exc:
            seat = match.to_move
            self.console.error(f"keltis play: error: {self.label(seat)} chose an illegal action: {exc}", wrapped=False)
            raise _StopPlayError(f"{self.label(seat)} failed", code=1) from None
        self.forfeit = match.forfeit

    def loop(self) -> None:
        """The game on the match loop: the person's seat is decided from outside, the bots'
        moves are announced together, one line per bot and turn. A decision with one legal
        move is taken for the person, with a line saying so."""
        from keltis_env.core.match import Match

        moves: list[tuple[int, int]] = []  # (seat, action) of the bots since the last announcement
        controllers = [None if p == self.seat else _Announced(self.bots[p], p, moves) for p in range(len(self.names))]
        match = Match(self.spec, self.state, controllers, record=True, move_seconds=self.move_seconds, guard=True)
        self.record.actions = match.actions  # the record grows with every decision
        dirty = True  # the board changed since the person last saw it
        while True:
            self.bots_play(match)  # the bots decide until it is the person's turn or the game is over
            self.announce(moves)
            if match.over:
                return
            legal = self.state.legal_actions()
            if len(legal) == 1:
                match.step(legal[0])
                self.console.note(f"you: {self.text(legal[0])} (your only legal move, played for you)")
                dirty = True
                continue
            if dirty:
                self.show_board()
                dirty = False
            action = self.ask_move(legal)
            match.step(action)
            self.console.note(f"you: {self.text(action)}")
            dirty = True

    def announce(self, moves: list[tuple[int, int]]) -> None:
        """Say the bots' moves, consecutive moves of one seat on one line; empties ``moves``."""
        start = 0
        for i in range(1, len(moves) + 1):
            if i == len(moves) or moves[i][0] != moves[start][0]:
                texts = "; ".join(self.text(a) for _, a in moves[start:i])
                self.console.note(f"{self.label(moves[start][0])}: {texts}")
                start = i
        moves.clear()

    def board_lines(self) -> list[str]:
        """The board as the person sees it: their hand is the line under the board where
        the game has a hand line (:meth:`hand_line`), else the board shows it."""
        hands = None if self._hand is not None else self.seat
        return str(call_supported(self.spec.board_text, self.state, show_hands=hands)).splitlines()

    def hand_line(self) -> list[str]:
        return [] if self._hand is None else [wrap(f"Your hand: {self._hand(self.state, self.seat)}")]

    def show_board(self) -> None:
        self.console.say()
        self.console.say("\n".join(self.board_lines() + self.hand_line()))

    def prompt(self) -> str:
        step = getattr(self.state, "phase", None)
        return f"your move ({step.name.lower()} step)> " if step is not None else "your move> "

    def ask_move(self, legal: Sequence[int]) -> int:
        """Ask until the person names a legal move; commands are handled on the way."""
        self.show_moves(legal)
        while True:
            line = self.console.ask(self.prompt())
            if line is None:
                raise _StopPlayError("end of input")
            action = self.interpret(line, legal)
            if action is not None:
                return action

    def show_moves(self, legal: Sequence[int], full: bool = False) -> None:
        """The legal moves: the dice forms in a keep-or-re-roll step; else numbered, as a
        list where it fits the screen under the board (or ``full``), else as a table."""
        texts = [self.text(a) for a in legal]
        if dice_choices(texts) is not None:
            self.console.note(DICE_HELP)
            return
        room = self.console.rows - len(self.board_lines()) - len(self.hand_line()) - 1  # 1: the prompt
        for line in numbered_list(texts) if full else layout_moves(texts, room):
            self.console.say(line)

    def interpret(self, line: str, legal: Sequence[int]) -> int | None:
        """The legal action that ``line`` names, or ``None`` after saying why not (or
        after running a command)."""
        text = " ".join(line.strip().lower().split())
        texts = [self.text(a) for a in legal]
        dice = dice_choices(texts)
        hint = (
            "name dice to keep or re-roll ('keep 3 5', 'reroll 1 4', 'keep'), or type 'help'"
            if dice is not None
            else f"type a number 1..{len(legal)}, a move's text such as '{texts[0]}', or 'help'"
        )
        if not text:
            self.console.error(f"Nothing typed: {hint}.")
            return None
        word, _, rest = text.partition(" ")
        command = _ALIASES.get(word, word)
        if (command in ("help", "board", "moves", "quit") and not rest) or command == "save":
            self.command(command, rest.strip(), legal)
            return None
        if dice is not None and word in (KEEP, REROLL):
            return self.dice_move(word, rest, dice, legal)
        if text.isdigit():
            n = int(text)
            if dice is not None:
                self.console.error(f"'{text}' names no move here: {hint}.")
            elif 1 <= n <= len(legal):
                return legal[n - 1]
            else:
                self.console.error(f"There is no move number {n}: {hint}.")
            return None
        return self.move_by_text(text, legal, texts, hint)

    def move_by_text(self, text: str, legal: Sequence[int], texts: list[str], hint: str) -> int | None:
        """The legal move whose text is ``text`` or the only one that begins with it."""
        try:
            action = self.record_cls.string_to_action(text)
        except ValueError as exc:
            matches = [a for a, t in zip(legal, texts, strict=True) if t.startswith(text)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                shown = ", ".join(f"{legal.index(a) + 1} = {self.text(a)}" for a in matches)
                self.console.error(f"'{text}' could be several moves: {shown}. Type more of it, or its number.")
            else:
                self.console.error(f"Not understood: {exc}. Or {hint}.")
            return None
        if action in legal:
            return action
        reason = self.state.illegal_reason(action) if hasattr(self.state, "illegal_reason") else None
        why = reason or "it is not in the list"
        self.console.error(f"'{self.text(action)}' is not a legal move now: {why}. {hint[0].upper()}{hint[1:]}.")
        return None

    def dice_move(self, word: str, rest: str, dice: dict[frozenset[int], int], legal: Sequence[int]) -> int | None:
        """The keep-or-re-roll move that ``keep DICE`` / ``reroll DICE`` names (dice by
        their numbers on the board, ``all`` or ``none``; ``keep`` alone keeps all)."""
        every = frozenset().union(*dice)
        if not rest:  # 'keep': all of them; 'reroll': all of them again
            named = every
        else:
            try:
                named = parse_dice(rest, every)
            except ValueError as exc:
                self.console.error(f"'{word} {rest}': {exc}.")
                return None
        rerolled = every - named if word == KEEP else named
        if rerolled in dice:
            return legal[dice[rerolled]]
        shown = ", ".join(map(str, sorted(rerolled)))
        self.console.error(f"Re-rolling dice {shown} is not a legal move now.")
        return None

    def help_lines(self, legal: Sequence[int]) -> list[str]:
        """How to enter moves, the commands, and the legend of the board's marks."""
        texts = [self.text(a) for a in legal]
        lines = [wrap(
            f"Enter a move by its number or by its text, e.g. '{texts[0]}'; the start of a text is enough when "
            "only one move begins with it. In a table of moves the number is in the row of the kind of move and "
            "the column of its card or colour. A move that is your only legal one is played for you."
        )]
        if dice_choices(texts) is not None:
            lines.append(DICE_HELP)
        lines.append(wrap("Commands: " + "; ".join(f"{name}: {what}" for name, what in COMMANDS.items()) + "."))
        legend = board_legend(self.spec.board_text)
        if legend:
            lines.append("Board:")
            lines += legend_lines(legend)
        return lines

    def command(self, command: str, rest: str, legal: Sequence[int]) -> None:
        if command == "help":
            for line in self.help_lines(legal):
                self.console.say(line)
        elif command == "board":
            self.show_board()
            self.show_moves(legal)
        elif command == "moves":
            self.show_moves(legal, full=True)
        elif command == "save":
            path = rest or self.save_path
            if not path:
                self.console.error("Save where? Type 'save PATH' (or start the game with --save PATH).")
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
            self.console.error(f"Could not save the game record: {exc}", wrapped=False)
            return False
        except OSError as exc:
            self.console.error(f"Could not save the game record to {path}: {exc}", wrapped=False)
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
        say = self.console.note
        state = self.state
        self.show_board()
        if self.forfeit is not None:
            late = self.forfeit
            say(f"{self.label(late.seat)} took {late.seconds:.2f} s on a move, over the limit of {late.limit:g} s "
                f"(--move-seconds): it loses the game on time after {state.turn} turns.")
            say(f"Scores when it stopped: {self.scores_text()}")
            return 0 if self.offer_save() else 1
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
        self.console.say(f"Game stopped ({why}) after {self.state.turn} turns.")  # whole: it may name a file
        self.console.note(f"Scores so far: {self.scores_text()}")
        if not self.offer_save():
            return 1
        return code
