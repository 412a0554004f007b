"""Text from files and records made safe for a terminal (standard library only).

A record's player names, a config's keys, a path given on the command line: text that
came from outside reaches the terminal through :func:`terminal_text`, which writes every
character a terminal would act on instead of show as a visible escape, so that a file
cannot retitle, clear or recolour the terminal (``ESC ] 0 ; ... BEL``, ``ESC [ 2 J``),
move the cursor to overwrite what was printed (``CR``, ``BS``), or stop the output with a
character that the terminal's encoding cannot write (a lone surrogate, as a JSON
``"\\ud800"`` or an undecodable file name gives).

Escaped (as ``\\xNN``, ``\\uNNNN``): the C0 controls (U+0000..U+001F) but the newline of
multi-line text, DEL (U+007F), the C1 controls (U+0080..U+009F, ``CSI`` among them), the
lone surrogates (U+D800..U+DFFF) and the bidirectional overrides and isolates (U+202A..U+202E,
U+2066..U+2069), which make a line read differently from what it holds.
"""

from __future__ import annotations

import re

#: every character :func:`terminal_text` escapes; the newline only in single-line text
_UNSAFE = "\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[\n{_UNSAFE}]")
_UNSAFE_LINES = re.compile(f"[{_UNSAFE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str, multiline: bool = False) -> str:
    """``text`` with every control character, lone surrogate and bidirectional override
    written as a visible escape (``"\\x1b"``, ``"\\ud800"``); ``multiline`` keeps the
    newlines (a board, a report), otherwise a newline is escaped too (a name, a path, an
    error message stays on its line). Text without such characters comes back as it is."""
    return (_UNSAFE_LINES if multiline else _UNSAFE_LINE).sub(_escape, text)


def is_plain_text(text: str) -> bool:
    """Whether ``text`` holds no character that :func:`terminal_text` would escape (on one line)."""
    return _UNSAFE_LINE.search(text) is None


__all__ = ["is_plain_text", "terminal_text"]
