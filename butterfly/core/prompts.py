"""The conversation a model sees: a system message, then one user message per turn.

Chat mode (the write-up's setting): the system message declares the task, the catalogue (names
and domains), the three coupling rules, what a change, an undo and a redo are, and the answer
format (:data:`PROMPT_VERSION` names this wording); the first user message gives the
initial spec together with the first edit; every later user message is that turn's words; the
model's own answers stay in the history, whatever they were (an unparsable answer is what the
model said, and it sees it again).

Layout E (evidence first): the spec (first message only), then the user's edit, then the answer
format. The other layouts and modes (issue "prompt sensitivity") reorder the same content.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Final

from butterfly.core.vocab import LAYOUTS, MODES, STRATEGIES
from oracle import COUPLINGS, SETTINGS, Scenario, canonical_initial, replay

Message = dict[str, str]

PROMPT_VERSION: Final = 3
"""The prompt's version, recorded in every new run's manifest (``prompt_version``). v3 (contract
v3, section 3): the system message says that an undo or a redo is not a change, that a new change
clears what redo could bring back, and that "unspecified" is an answer beside each setting's
listed values. v2: the prompt before it, from before versions were recorded (runs made with it
are known by their fingerprint: ``butterfly/runs/versions.py``, docs/prompt-versions.md)."""

VALUES: Final = ('each value is a string: one of the values listed for that setting, or '
                 '"unspecified"')
"""What each value of an answer may be (v2 said "a string value from its list", while
"unspecified" is in no list)."""

ANSWER_FORMAT: Final = (
    f"Reply with the complete current spec as one JSON object with all 20 keys; {VALUES}. "
    "Reply with the JSON object only."
)


FORMATS: Final = {
    "schema": ANSWER_FORMAT,
    "json": ANSWER_FORMAT,
    "json-first": (
        "Reply with the complete current spec as one JSON object first, then one short "
        f"paragraph saying what you changed. The object has all 20 keys; {VALUES}."
    ),
    "json-last": (
        "First explain briefly what this message changes, then end your reply with the "
        f"complete current spec as one JSON object. The object has all 20 keys; {VALUES}."
    ),
}

COT: Final = (
    "Think step by step before you give the spec: list the changes in effect, say which change "
    "this message makes, undoes or redoes, and which coupling rules apply."
)

ADAPTIVE_COT: Final = (
    "If the message only sets one setting to a new value, give the spec directly. Otherwise "
    "(an undo, a redo, a removed requirement, a reference to another setting, or a coupling "
    "rule that applies), think step by step before you give the spec: list the changes in "
    "effect, say which change this message makes, undoes or redoes, and which coupling rules "
    "apply."
)
"""PromptAudit's adaptive chain of thought: reason only when the edit is not a plain set."""

REASONS_FIRST: Final = frozenset({"cot", "adaptive-cot"})
"""Strategies whose instructions put reasoning before the spec: only ``json-last`` lets the
spec come after it (every other protocol asks for the spec first or alone)."""


def compatible(strategy: str, protocol: str, sc_base: str = "zero-shot") -> bool:
    """Whether the strategy's instructions and the protocol's answer format agree on order."""
    prompt = sc_base if strategy == "self-consistency" else strategy
    return prompt not in REASONS_FIRST or protocol == "json-last"

FEW_SHOT_TURNS: Final = (
    ("set", "log_level", "warning", "Quieter logs, please: nothing below the warning level."),
    ("set", "input_format", "tsv", "Our supplier is moving to TSV exports; read those."),
    ("undo_last", None, None, "Hmm, cancel that request of mine."),
)
"""The few-shot conversation (op, setting, value, text). Contract v2: its wording stays apart
from every turn of every shipped suite (a test bounds the similarity); v1's "Only log warnings
and errors from now on." nearly repeated a turn of gen-undo-ref-04."""


def _few_shot_block() -> str:
    """Worked examples from a fixed conversation that is in no suite (the oracle answers it)."""
    turns = [
        {"op": op, "text": text, **({"setting": k, "value": v} if k else {})}
        for op, k, v, text in FEW_SHOT_TURNS
    ]
    example = Scenario.model_validate(
        {"id": "few-shot-example", "category": "long_chain", "source": "handwritten",
         "initial": canonical_initial(), "turns": tuple(turns)},
        strict=False,
    )
    specs = replay(example)
    lines = ["Worked examples from another conversation (not this one), with the spec after "
             "each message:", f"Initial spec: {json.dumps(specs[0])}"]
    for t, turn in enumerate(example.turns, 1):
        lines.append(f'User: "{turn.text}"')
        lines.append(f"Spec: {json.dumps(specs[t])}")
    return "\n".join(lines)


BLOCKS: Final = {"zero-shot": "", "cot": COT, "adaptive-cot": ADAPTIVE_COT}
"""The strategies' instructions in the system message (few-shot's is built: its examples)."""


def strategy_block(strategy: str, sc_base: str = "zero-shot") -> str:
    if strategy == "self-consistency":  # samples its base prompt n times and votes
        return strategy_block(sc_base)
    if strategy == "few-shot":
        return _few_shot_block()
    if strategy not in BLOCKS:
        raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    return BLOCKS[strategy]


CHANGES: Final = (
    "Each message that sets a value or removes a requirement makes one new change. An undo or "
    'a redo is not itself a change: "my last change" never means an undo or a redo; it means '
    "the change made most recently among those still in effect. Undoing a change removes its "
    "effect on the spec, as if it had never been made, and keeps every other change. A change "
    'is "in effect" from when it is made until it is undone, even while a later change to the '
    "same setting hides its value. A new "
    "change clears what redo could bring back. A redo brings back one change: of the changes "
    "undone since the latest new change that are still undone, the one undone most recently. "
    "A change brought back by a redo keeps its place in the order the changes were made: "
    '"earliest", "first" and "oldest" count from when each change was made. '
    "Change only what the user asks for (and what a rule forces)."
)
"""What a change, an undo and a redo are (contract v3, section 3: v2 said "every edit the user
makes is a change", which a careful reader took to include undos and redos, and left unsaid that
a new change clears what redo could bring back; and, found by careful readers of the v3 suites,
whether a redone change counts as made when it was redone, for "the earliest change")."""


def system_message(strategy: str = "zero-shot", protocol: str = "schema",
                   sc_base: str = "zero-shot") -> str:
    lines = [
        "You keep the configuration spec of a command-line data tool up to date while a user "
        "edits it over several turns. The spec has exactly these 20 settings, each with the "
        "values it can take:",
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
        CHANGES,
        "",
    ]
    block = strategy_block(strategy, sc_base)
    if block:
        lines += [block, ""]
    lines.append(FORMATS[protocol])
    return "\n".join(lines)


SYSTEM: Final = system_message()
_DEFAULT_STYLE: Final = {("zero-shot", "schema"), ("zero-shot", "json")}


@functools.cache
def _system(strategy: str, protocol: str, sc_base: str = "zero-shot") -> str:
    """The system message of a style: :data:`SYSTEM` for the default styles, else built once."""
    if (strategy, protocol) in _DEFAULT_STYLE and sc_base == "zero-shot":
        return SYSTEM
    return system_message(strategy, protocol, sc_base)


HEDGE: Final = "If the request is unclear, answer UNSURE instead of a spec."
SPEC_INTRO: Final = "Here is the current spec:"
INITIAL_INTRO: Final = "Here is the initial spec:"
EDITS_INTRO: Final = "The user's messages so far, in the order they were sent:"
RESTATE_QUESTION: Final = "What is the spec now, after all of these messages?"


def spec_block(spec: dict[str, str]) -> str:
    return json.dumps(spec, indent=2)


def _arrange(layout: str, evidence: list[str], edit: str, question: str) -> str:
    """The same parts in the layout's order: E evidence, edit, question; Q question, edit,
    evidence; H as E plus the hedge sentence."""
    if layout == "E":
        parts = [*evidence, edit, question]
    elif layout == "Q":
        parts = [question, edit, *evidence]
    elif layout == "H":
        parts = [*evidence, edit, question, HEDGE]
    else:
        raise ValueError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    return "\n\n".join(p for p in parts if p)


def user_message(scenario: Scenario, turn: int, layout: str = "E",
                 protocol: str = "schema") -> str:
    """Chat mode: the user's message for ``turn`` (1-based); the spec only in the first one."""
    text = scenario.turns[turn - 1].text
    evidence = [f"{SPEC_INTRO}\n{spec_block(scenario.initial)}"] if turn == 1 else []
    return _arrange(layout, evidence, text, FORMATS[protocol])


NUMBERED_KEPT: Final = 16
"""How many scenarios' numbered edit lines are kept (a run plays up to ``--concurrency``
conversations at once)."""
_NUMBERED: list[tuple[object, list[str]]] = []
"""The numbered edit lines of the scenarios restated last (each with its turns, held so that
the identity check cannot match another), so that restating a 5,000-turn chain at every turn
formats each line once, not 12.5 million times (issue 34: its dry run took 1 min 46 s)."""


def _numbered(scenario: Scenario) -> list[str]:
    """``"i. text"`` of every turn of ``scenario``, made once while it is among the last
    :data:`NUMBERED_KEPT` scenarios restated."""
    for turns, lines in list(_NUMBERED):
        if turns is scenario.turns:
            return lines
    lines = [f"{i}. {turn.text}" for i, turn in enumerate(scenario.turns, 1)]
    _NUMBERED[:] = [*_NUMBERED[-(NUMBERED_KEPT - 1):], (scenario.turns, lines)]
    return lines


def restate_message(scenario: Scenario, turn: int, layout: str = "E",
                    protocol: str = "schema") -> str:
    """Restate mode: one stateless message with the initial spec and every edit up to ``turn``."""
    edits = "\n".join(_numbered(scenario)[:turn])
    evidence = [f"{INITIAL_INTRO}\n{spec_block(scenario.initial)}"]
    return _arrange(layout, evidence, f"{EDITS_INTRO}\n{edits}",
                    f"{RESTATE_QUESTION} {FORMATS[protocol]}")


def added_messages(
    scenario: Scenario,
    turn: int,
    previous: str | None,
    layout: str = "E",
    mode: str = "chat",
    strategy: str = "zero-shot",
    protocol: str = "schema",
    sc_base: str = "zero-shot",
) -> list[Message]:
    """What ``turn`` adds to what was sent for the turn before it. Chat mode: the system
    message and the first user message (turn 1), then the model's ``previous`` answer and this
    turn's user message, so a conversation of n turns builds n user messages, not n(n+1)/2.
    Restate mode: the whole (stateless) message list, every turn."""
    if mode == "restate":
        return [{"role": "system", "content": _system(strategy, protocol, sc_base)},
                {"role": "user", "content": restate_message(scenario, turn, layout, protocol)}]
    if mode != "chat":
        raise ValueError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    user: Message = {"role": "user", "content": user_message(scenario, turn, layout, protocol)}
    if turn > 1:
        if previous is None:
            raise ValueError(f"turn {turn} adds the answer to turn {turn - 1}: give it")
        return [{"role": "assistant", "content": previous}, user]
    return [{"role": "system", "content": _system(strategy, protocol, sc_base)}, user]


def messages(
    scenario: Scenario,
    turn: int,
    answers: Sequence[str],
    layout: str = "E",
    mode: str = "chat",
    strategy: str = "zero-shot",
    protocol: str = "schema",
    sc_base: str = "zero-shot",
) -> list[Message]:
    """Everything sent for ``turn``. Chat mode: the history with the model's ``answers`` to the
    turns before it. Restate mode: the system message and one stateless user message.
    ``sc_base``: the prompt self-consistency samples (zero-shot, cot or adaptive-cot). The
    concatenation of :func:`added_messages` over turns 1..``turn`` (a runner that keeps what
    it sent calls that instead)."""
    style = (layout, mode, strategy, protocol, sc_base)
    if mode == "restate":
        return added_messages(scenario, turn, None, *style)
    if mode == "chat" and len(answers) != turn - 1:
        raise ValueError(f"turn {turn} needs {turn - 1} earlier answers, got {len(answers)}")
    out: list[Message] = []
    for t in range(1, turn + 1):
        out += added_messages(scenario, t, answers[t - 2] if t > 1 else None, *style)
    return out


def prompt_fingerprint(strategy: str = "zero-shot", protocol: str = "schema",
                       sc_base: str = "zero-shot") -> str:
    """What a run's prompts are made of: a run refuses to resume when any of it changed.

    The zero-shot JSON-only fingerprint is the base list alone, so adding strategies and
    protocols does not invalidate runs made without them."""
    parts = [f"prompt_version={PROMPT_VERSION}", SYSTEM, ANSWER_FORMAT, HEDGE, SPEC_INTRO,
             INITIAL_INTRO, EDITS_INTRO, RESTATE_QUESTION,
             "layouts:E=evidence,edit,question;Q=question,edit,evidence;H=E+hedge", "join:\\n\\n"]
    if (strategy, protocol) not in _DEFAULT_STYLE:
        parts += [f"strategy={strategy}", f"protocol={protocol}", _system(strategy, protocol),
                  FORMATS[protocol]]
    if strategy == "self-consistency" and sc_base != "zero-shot":
        parts += [f"sc_base={sc_base}", _system(strategy, protocol, sc_base)]
    return json.dumps(parts)


BLOCK: Final = 1 << 12
"""Characters compared at a time when finding where two long texts part."""


def shared_start(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start: compared a block at a time
    (slices compared in C), then the differing block halved."""
    n = min(len(a), len(b))
    lo = 0
    while lo < n and a[lo:lo + BLOCK] == b[lo:lo + BLOCK]:
        lo += BLOCK
    if lo >= n:
        return n
    hi = min(lo + BLOCK, n)
    while lo < hi:  # a[:lo] == b[:lo]; they part before hi
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
