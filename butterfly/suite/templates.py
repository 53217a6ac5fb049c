"""Paraphrase families: the user's words for each op.

Every op has a family of at least three paraphrases (five for undo-earliest, so that "cannot
track history" can be told apart from "this sentence is hard"). A generated turn records the id
of the paraphrase it used, ``<family>.<index>``. Indices are stable: append new paraphrases at
the end of a family, never reorder, or every committed suite changes.

Placeholders: ``{name}`` (the setting's name), ``{description}`` (its indirect description),
``{phrase}`` (a value phrase of the setting), ``{old}`` (the phrase of the value it replaces).

Generator v3 words no turn in a way that a second reading (``oracle.readings``, contract v3)
triggers: where the drawn paraphrase would, a one-reading paraphrase appended to the same
family stands in for it (:data:`ONE_READING`).
"""

from __future__ import annotations

from typing import Final

FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "set": (
        "Switch to {phrase}.",
        "Let's go with {phrase} instead.",
        "Please change {name}: I want {phrase}.",
        "From now on I'd like {phrase}.",
        "I'd rather have {phrase}.",
        # v3, one reading: used only in place of a wording a second reading triggers
        "Let's go with {phrase} instead of {old}.",
        "Let's go with {phrase}; so far {name} has been left unspecified.",
    ),
    "drop": (
        "Remove the requirement on {name}; leave it unspecified.",
        "We no longer have a requirement for {name}. Mark it as unspecified.",
        "Drop {name} from the requirements entirely, so it is unspecified.",
        "Take {name} out of the spec as a requirement: it should be unspecified now.",
    ),
    "undo_last": (
        "Undo that last change.",
        "Actually, revert my most recent change.",
        "Scratch the change I just made.",
        "Go back on my last change, please.",
        # v4, one reading: right after an undo ("the change I just made" is not the undo)
        "Undo my most recent change that is still in effect.",
    ),
    "undo_ref": (
        "Undo the change I made to {description}.",
        "Revert my change to {description}; it should go back to what it was before that change.",
        "Let's roll back what I changed about {description}.",
        "Put {description} back the way it was before I changed it.",
        # v3, one reading
        "Undo my change to {description} that is still in effect.",
        "Of my changes to {description}, undo the one that is still in effect.",
    ),
    "undo_earliest": (
        "Undo the earliest change that is still in effect.",
        "Of the changes still in effect, revert the one I made first.",
        "Roll back my oldest change that hasn't been undone yet.",
        "Take back the first of my changes that still stands.",
        "Among my edits that are still active, undo the earliest one.",
        "Go back on the earliest change that is still in place, and keep the rest.",
    ),
    "redo": (
        "Actually, put back the change I just undid.",
        "Redo the change I just undid.",
        "On second thought, restore what I just reverted.",
        "Bring back the change I undid most recently.",
        # v3, one reading: a redo right after a redo
        "Redo once more: bring back the change I undid before that one.",
    ),
    "distractor": (
        "By the way, my teammate runs this tool with {phrase} on her machine. "
        "That's just her setup, not ours.",
        "Quick question, no change needed: does {name} affect memory use much?",
        "For context, the last project I worked on used {phrase}. Nothing to change here.",
        "Someone in the meeting suggested {phrase}, but we decided against it.",
        "Just thinking out loud about {name}. We'll keep it as it is.",
    ),
    # Indirect references: set turns whose value is resolved by the generator.
    "indirect.same_format": (
        "Use the same format for the output as for the input.",
        "Write the output in whatever format the input files are in.",
        "Make the output format match the input format.",
        # v3, one reading: the copy is made once
        "Set the output format to whatever the input format is right now.",
    ),
    "indirect.double_timeout": (
        "Double the timeout per file.",
        "Give each file twice as long as it gets now.",
        "Make the per-file timeout twice what it is currently.",
    ),
    "indirect.tenfold_rows": (
        "Raise the row limit tenfold.",
        "Allow ten times as many rows as the current limit.",
        "Multiply the row limit by ten.",
    ),
}

DRAWN: Final[dict[str, int]] = {
    "set": 5, "drop": 4, "undo_last": 4, "undo_ref": 4, "undo_earliest": 6, "redo": 4,
    "distractor": 5, "indirect.same_format": 3, "indirect.double_timeout": 3,
    "indirect.tenfold_rows": 3,
}
"""How many paraphrases of each family the generator draws from at random: the first ones, as
many as generator v2 had. Paraphrases appended after them (v3) are never drawn: each stands in
for a drawn wording that a second reading triggers (:data:`ONE_READING`), so the random stream,
and with it every op sequence, is the one generator v2 drew."""

ONE_READING: Final[dict[str, tuple[str, ...]]] = {
    "set.1": ("set.5", "set.6"),  # "instead" -> "X instead of Y" (or Y is unspecified)
    **{f"undo_last.{i}": ("undo_last.4",) for i in range(4)},  # right after an undo
    "undo_ref.0": ("undo_ref.4",),
    "undo_ref.1": ("undo_ref.0", "undo_ref.4"),  # "still in effect" only after another change
    "undo_ref.2": ("undo_ref.5",),
    "undo_ref.3": ("undo_ref.2", "undo_ref.5"),
    **{f"undo_earliest.{i}": ("undo_earliest.1",) for i in (0, 2, 3, 4, 5)},  # "made first"
    **{f"redo.{i}": ("redo.4",) for i in range(4)},
    **{f"indirect.same_format.{i}": ("indirect.same_format.3",) for i in range(3)},
}
"""Drawn paraphrase -> the wordings with one reading that stand in for it where a second
reading (``oracle.readings``) is triggered, in order of preference (``set.5`` names the
replaced value, so it needs one; ``set.6`` is for a setting left unspecified)."""

ONE_READING_DESCRIPTIONS: Final[dict[str, str]] = {
    "output_format": "which data format the output is written in (CSV, JSON and so on)",
}
"""Setting -> an indirect description with one reading, used in place of the catalogue's where
that one triggers a second reading (reading 7: "what kind of files the tool writes" while a
compression change is in effect, since compressing also changes the kind of files written)."""

DEEP_REDO: Final = "redo.4"
"""A redo right after a redo. "The change I undid before that one" is the next change on the
redo stack only while the undos since the last set or drop all came before the redos (undo A,
undo B, redo, redo); the generator uses it only then."""

HISTORY_PARAPHRASES: Final = frozenset({"undo_earliest.2"})
"""Undo-earliest paraphrases that speak of undo history ("hasn't been undone yet") rather than of
what is in effect. The oracle recognises them by its own text pattern (``HISTORY_WORDING``; a
test keeps the two in step) and rejects them once their target has been undone and redone; the
generator then uses the next paraphrase of the family."""

DISTRACTOR_MENTIONS_VALUE: Final = frozenset({0, 2, 3})
"""Distractor paraphrases whose text names a value (the generator picks one not in force)."""
