"""The code track's conversation (contract section 7): what the model is told, and how a program
is taken from its answer.

Chat mode only. The system message says what ``tool.py`` does, one reading per behaviour (the
same text ``docs/code-track.md`` states and the extractor observes), the couplings, the
contract's definitions of a change, an undo and a redo (``core.prompts.CHANGES``), the
keep-the-code rule, and the answer format. The first user message holds the program rendered
from the scenario's initial spec and the first edit; each later turn is the spec track's words.
The program is the answer's last fenced ``python`` block: never an echo of the prompt (which
comes before the answer), and an unchanged program is a valid answer.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Final

from butterfly.code.program import render
from butterfly.core.code_catalogue import COUPLINGS, DOMAINS, KEYS, canonical
from butterfly.core.prompts import CHANGES, Message
from oracle import Scenario
from oracle.catalogue import BY_KEY

CODE_PROMPT_VERSION: Final = 1
"""The code conversation's version, part of its fingerprint (a run refuses to resume on another)."""

BEHAVIOUR: Final[tuple[str, ...]] = (
    "`python tool.py INPUT OUTPUT` reads the file INPUT and writes the file OUTPUT; it reads and "
    "writes nothing else.",
    "Input: CSV and TSV are read with the csv module (TSV honours quotes as CSV does); an empty "
    "field is a missing value; with a header row its names are the columns, without one the "
    "columns are col1, col2, ... JSON is an array of objects, JSON Lines one object per line; a "
    "JSON null is a missing value; the keys, in order of first appearance, are the columns. The "
    "input is decoded with the encoding (UTF-16 input starts with a byte-order mark).",
    "Unreadable records: a CSV or TSV row with another number of fields than the header (or "
    "than the first row, without a header), a JSON element that is not an object, a JSON line "
    "that does not parse. fail: print one line on stderr and exit with status 1 (not a "
    "traceback); skip: drop the record without a word; warn: drop it and print one line on "
    "stderr. Nothing else is ever written to stderr, and the exit status is 0 otherwise.",
    "The records, in this order: unreadable records handled, then duplicates dropped (a record "
    "equal to an earlier one in every column; the first is kept), then sorted by the first "
    "column compared as text, a missing value as the empty string (Python's stable sort; "
    "descending is reverse=True, so records with equal first columns keep their order), then "
    "the first max_rows records kept. The row limit counts readable records after the other "
    "three steps.",
    "Output: every value that is an ISO date (YYYY-MM-DD) is printed in the date format (us: "
    "MM/DD/YYYY, eu: DD/MM/YYYY, unix: the whole number of seconds from 1970-01-01 to UTC "
    "midnight of that day, as 1711324800 for 2024-03-25). A "
    "missing value is printed as the null marker in CSV, Markdown and HTML (empty: nothing), and "
    "is JSON null in JSON and JSON Lines. CSV output is always comma-separated with a header row "
    "(the delimiter and the header row describe the input); the quoting style applies to CSV "
    "output only (minimal: quotes only around a field that needs them; all: around every "
    "field, an empty one too; none: no quotes, and a comma, quote or backslash inside a field "
    "is escaped with a backslash, as the csv module's QUOTE_NONE with escapechar does). JSON "
    "and JSON Lines "
    "write non-ASCII characters as themselves. HTML output is a table with a header row, "
    "each value escaped (html.escape); Markdown a table with a header row and a separator "
    "row, a | inside a value escaped as \\|. Every line ends with the line "
    "ending, the last one too. The output is encoded with the encoding (UTF-16 as Python's "
    "utf-16 codec writes it: little-endian, after a byte-order mark where Python writes one), "
    "and compression wraps the whole file (gzip or bz2).",
)
"""What ``tool.py`` does, stated once (docs/code-track.md, "One reading of the program")."""

KEEP_THE_CODE: Final = (
    "Some settings do not show while others hold: the delimiter and the header row while the "
    "input is JSON or JSON Lines, the quoting style while the output is not CSV, the null marker "
    "while the output is JSON or JSON Lines. Such a setting keeps its value while it does not "
    "apply, and it applies again when the other setting comes back. So keep its code in the "
    "program, unchanged, even while nothing calls it: the CSV reading code (with its delimiter "
    "and header row) while the input is JSON, the CSV writing code (with its quoting) while the "
    "output is another format, the code that prints the null marker while the output is JSON."
)
"""The keep-the-code rule: a reader must not take "no longer applies" as leave to delete."""

ANSWER_FORMAT: Final = (
    "Reply with the complete program after this message in one fenced ```python block (a "
    "sentence before it is fine: the program is the last python block of your reply). Change "
    "only what the message asks for (and what a coupling rule forces); when it asks for no "
    "change, reply with the program unchanged."
)
PROGRAM_INTRO: Final = "Here is the current program, tool.py:"


def system_message() -> str:
    """The code track's system message (one text for every run)."""
    lines = [
        "You keep a Python program, tool.py, up to date while a user edits what it should do "
        "over several turns. tool.py is a command-line data tool: it converts a table of "
        "records from one format to another, standard library only (Python 3.11). Its "
        "behaviour has exactly these 14 settings, each with the values it can take:",
        "",
        *(f"- {BY_KEY[k].name} ({k}): {', '.join(DOMAINS[k])}" for k in KEYS),
        "",
        "What the program does, for any values of the settings:",
        *(f"- {b}" for b in BEHAVIOUR),
        "",
        "Coupling rules, always in force:",
        *(f"{i}. {t} = {w} forces {f} = {v}." for i, (t, w, f, v) in enumerate(COUPLINGS, 1)),
        "When a rule stops applying, the forced setting goes back to the value it would have "
        "without the rule.",
        "",
        KEEP_THE_CODE,
        "",
        CHANGES.replace("sets a value or removes a requirement", "sets a value").replace(
            "its effect on the spec", "its effect on the settings"),
        "",
        ANSWER_FORMAT,
    ]
    return "\n".join(lines)


SYSTEM: Final = system_message()


def code_spec(spec: dict[str, str]) -> dict[str, str]:
    """A scenario's spec projected onto the code catalogue (its other settings are inert)."""
    return {k: spec[k] for k in KEYS}


def program_block(source: str) -> str:
    """A program as the conversation shows it: one fenced python block."""
    return f"```python\n{source.rstrip()}\n```"


def answer_text(source: str) -> str:
    """An answer that gives ``source`` as the updated program (the scripted agents' answers,
    and the one the dry run counts)."""
    return f"Here is the updated program.\n\n{program_block(source)}\n"


def user_message(scenario: Scenario, turn: int) -> str:
    """The user's message for ``turn`` (1-based): the initial program only in the first."""
    text = scenario.turns[turn - 1].text
    if turn > 1:
        return f"{text}\n\n{ANSWER_FORMAT}"
    program = program_block(render(code_spec(scenario.initial)))
    return f"{PROGRAM_INTRO}\n\n{program}\n\n{text}\n\n{ANSWER_FORMAT}"


def added_messages(scenario: Scenario, turn: int, previous: str | None) -> list[Message]:
    """What ``turn`` adds to the conversation: the system message and the first user message
    (turn 1), then the model's ``previous`` answer and this turn's message."""
    user: Message = {"role": "user", "content": user_message(scenario, turn)}
    if turn == 1:
        return [{"role": "system", "content": SYSTEM}, user]
    if previous is None:
        raise ValueError(f"turn {turn} adds the answer to turn {turn - 1}: give it")
    return [{"role": "assistant", "content": previous}, user]


def fingerprint() -> str:
    """What a code run's prompts are made of (a run refuses to resume when any of it changed)."""
    initial = hashlib.sha256(render(canonical()).encode("utf-8")).hexdigest()
    parts = [f"code_prompt_version={CODE_PROMPT_VERSION}", SYSTEM, ANSWER_FORMAT, PROGRAM_INTRO,
             "join:\\n\\n", f"canonical_program_sha256={initial}"]
    return json.dumps(parts)


FENCE: Final = re.compile(r"^[ \t]*```[ \t]*(python3?|py)?[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$",
                          re.DOTALL | re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ProgramParse:
    """A program taken from an answer, or the reason there is none."""

    program: str | None
    reason: str | None = None
    detail: str = ""


def _blocks(text: str) -> list[tuple[str | None, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def program_of(text: str, truncated: bool = False) -> ProgramParse:
    """The answer's program: its last fenced ``python`` block (a bare ``` block when the
    answer has no block marked python), which must compile."""
    if not text.strip():
        return ProgramParse(None, "empty", "the answer is empty")
    blocks = _blocks(text)
    marked = [body for lang, body in blocks if lang]
    chosen = marked or [body for _, body in blocks]
    if not chosen:
        reason = "truncated" if truncated else "no_program"
        return ProgramParse(None, reason, "the answer has no fenced python block")
    source = chosen[-1]
    try:
        ast.parse(source)
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        return ProgramParse(None, "syntax", f"the program does not compile: {e.__class__.__name__}"
                            + (f" at line {line}" if line else ""))
    return ProgramParse(source)
