"""The conversation a model sees: a system message, then one user message per turn.

Chat mode (the write-up's setting): the system message declares the task, the catalogue (names
and domains), the three coupling rules and the answer format; the first user message gives the
initial spec together with the first edit; every later user message is that turn's words; the
model's own answers stay in the history, whatever they were (an unparsable answer is what the
model said, and it sees it again).

Layout E (evidence first): the spec (first message only), then the user's edit, then the answer
format. The other layouts and modes (issue "prompt sensitivity") reorder the same content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from oracle import COUPLINGS, SETTINGS, Scenario

Message = dict[str, str]

ANSWER_FORMAT: Final = (
    "Reply with the complete current spec as one JSON object: all 20 keys, each with a string "
    "value from its list. Reply with the JSON object only."
)


def system_message() -> str:
    lines = [
        "You keep the configuration spec of a command-line data tool up to date while a user "
        "edits it over several turns. The spec has exactly these 20 settings; each value is one "
        "of the strings listed:",
        "",
    ]
    for s in SETTINGS:
        lines.append(f"- {s.key} ({s.name}): {', '.join(s.domain)}")
    lines += [
        "",
        'Any setting may also be "unspecified" when the user removes that requirement. "none" '
        'is a real value (no limit, no compression, no sorting), never the same as "unspecified".',
        "",
        "Coupling rules, always in force:",
    ]
    for i, c in enumerate(COUPLINGS, 1):
        lines.append(f"{i}. {c.trigger} = {c.when} forces {c.forced} = {c.then}.")
    lines += [
        "When a rule stops applying, the forced setting goes back to the value it would have "
        "without the rule.",
        "",
        "Every edit the user makes is a change. Undoing a change removes its effect, as if it "
        "had never been made, and keeps every other change; redo puts back the change that was "
        "undone most recently. Change only what the user asks for (and what a rule forces).",
        "",
        ANSWER_FORMAT,
    ]
    return "\n".join(lines)


SYSTEM: Final = system_message()


def spec_block(spec: dict[str, str]) -> str:
    return json.dumps(spec, indent=2)


def user_message(scenario: Scenario, turn: int) -> str:
    """The user's message for ``turn`` (1-based), layout E."""
    text = scenario.turns[turn - 1].text
    if turn == 1:
        spec = spec_block(scenario.initial)
        return f"Here is the current spec:\n{spec}\n\n{text}\n\n{ANSWER_FORMAT}"
    return f"{text}\n\n{ANSWER_FORMAT}"


def messages(scenario: Scenario, turn: int, answers: Sequence[str]) -> list[Message]:
    """Everything sent for ``turn``: the history with the model's ``answers`` to turns before it."""
    if len(answers) != turn - 1:
        raise ValueError(f"turn {turn} needs {turn - 1} earlier answers, got {len(answers)}")
    out: list[Message] = [{"role": "system", "content": SYSTEM}]
    for t in range(1, turn + 1):
        out.append({"role": "user", "content": user_message(scenario, t)})
        if t < turn:
            out.append({"role": "assistant", "content": answers[t - 1]})
    return out
