"""The wording guards: what a drop turn must say, and undo-earliest wording that speaks of undo
history. Plain text patterns; :mod:`oracle.replay` applies them turn by turn (docs/oracle.md).
"""

from __future__ import annotations

import re
from typing import Final

DROP_REMOVAL: Final = re.compile(
    r"\bunspecified\b"
    r"|\b(?:remove|drop|delete|lift|take out|taking out)\b.*\brequirements?\b"
    r"|\brequirements?\b.*\b(?:removed|dropped|deleted|lifted|gone)\b"
    r"|\bno (?:longer (?:have |has |need |needs )?(?:a |any )?)?requirements?\b"
    r"|\bout of\b.*\brequirements?\b|\brequirements?\b.*\bout of\b"
)
"""A drop turn must say plainly that the requirement is removed (or the setting unspecified)."""

DROP_AMBIGUOUS: Final = re.compile(
    r"\bnone\b|\bno limits?\b|\bunlimited\b|\bdo(?:n't| not) care\b"
    r"|\bdo(?:es)?(?:n't| not) matter\b|\bno longer matters?\b"
    r"|\b(?:turn|switch)(?:s|ed|ing)?(?: it| that| this| them)? off\b"
    r"|\bdisabl\w*|\bdeactivat\w*|\bget(?:s|ting)? rid of\b"
)
"""Wording that also reads as setting a value (``none``, ``off``), so a drop may not use it."""

DROP_AMBIGUOUS_EXAMPLES: Final = (
    "none", "no limit", "unlimited", "don't care", "do not care", "doesn't matter",
    "does not matter", "no longer matters", "turn off", "switched off", "disable", "disabled",
    "deactivate", "get rid of",
)
"""Phrases the ambiguity pattern must catch (tested); documentation as much as data."""


HISTORY_WORDING: Final = re.compile(
    r"\b(?:undone|undid|un-done|reverted|rolled back|taken back|backed out|retracted"
    r"|withdrawn|cancell?ed)\b"
)
"""Undo-earliest wording that speaks of undo history ("not undone yet", "never undone",
"hasn't been undone") rather than of what is in effect: a past form of an undo verb. After its
target was undone and redone such a turn has a second reading, so it is then invalid."""

HISTORY_WORDING_EXAMPLES: Final = (
    "not undone yet", "never undone", "hasn't been undone", "that I haven't reverted",
    "not rolled back", "never taken back", "I undid",
)
"""Phrases the history pattern must catch (tested)."""


def history_wording(text: str) -> str | None:
    """The phrase of ``text`` that speaks of undo history, or None."""
    m = HISTORY_WORDING.search(normalise_text(text))
    return None if m is None else m.group(0)


def normalise_text(text: str) -> str:
    """Lower case, typographic apostrophes and quotes made plain, for the wording guards."""
    return text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")


def drop_wording_problem(text: str) -> str | None:
    """Why ``text`` is not a plain drop, or None if it is."""
    low = normalise_text(text)
    if not DROP_REMOVAL.search(low):
        return ("a drop turn must say plainly that the requirement is removed "
                "(e.g. 'remove the requirement on ...', '... unspecified')")
    m = DROP_AMBIGUOUS.search(low)
    if m:
        return f"drop wording {m.group(0)!r} also reads as a value, not as removal"
    return None
