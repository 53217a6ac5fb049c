"""Text from data made safe for a terminal: control characters shown escaped, never executed.

A model answer, a scenario id or a model name may hold ANSI colours, an OSC window title, a
clear-screen or a bidi override. :func:`printable` writes each such character as a visible
escape (``\\x1b``, ``\\u202e``), so the terminal shows it instead of obeying it. Pure.
"""

from __future__ import annotations

import re
from typing import Final

_CONTROLS: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROLS_AND_NEWLINES: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character escaped; newlines and tabs are kept unless
    ``newlines`` is False (one line, e.g. an error message)."""
    pattern = _CONTROLS if newlines else _CONTROLS_AND_NEWLINES
    return pattern.sub(_escape, text)
