"""``butterfly show``: a conversation's transcript in the terminal, turn by turn.

Each turn: the user's words, the model's raw answer (truncated unless ``--full``), the reasoning
the provider returned beside it (and its reasoning tokens) when there is one, and its spec
against the oracle's. Settings are marked with a sign as well as a colour, so the meaning
survives a pipe, where there is no colour:

- ``~`` collateral (magenta): changed from the model's previous answer though nothing asked for it;
- ``!`` wrong (red): differs from the oracle (an edit not made, or an old mistake carried on);
- ``>`` the first divergent turn.

A run asked at chosen turns (``--ask-at``) shows its turns not asked as "not asked", a stretch of
them on one line: they have no answer and are not scored (not failures).

Model answers are untrusted text: they are printed as plain text, never as rich markup, and
every control character in them (or in an id, a model name, a user's words) is shown escaped
(``\x1b``), never sent to the terminal as it is (:func:`butterfly.core.printable.printable`).
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from butterfly.analysis.transcripts import ShowInfo
from butterfly.core.transcript import Transcript, TranscriptTurn

WRONG = "red"
COLLATERAL = "magenta"
MATCH = "green"
ABSTAIN = "yellow"


def _clip(raw: str, lines: int | None) -> tuple[str, int]:
    rows = raw.splitlines() or [""]
    if lines is None or len(rows) <= lines:
        return raw, 0
    return "\n".join(rows[:lines]), len(rows) - lines


def _more(hidden: int, indent: int) -> list[Text]:
    """The line saying how many lines a clipped text hides (none when it hides none)."""
    return [Text(f"{' ' * indent}... {hidden} more lines (--full shows them)", style="dim")
            ] if hidden else []


def render(info: ShowInfo, conv: Transcript, *, lines: int | None = 12) -> list[Text]:
    """The transcript as rich Text lines (plain text when the console has no colour)."""
    out: list[Text] = []
    verdict = {"P": "final match", "F": "final answer wrong", "A": "abstained at the final turn",
               "-": "incomplete (a turn has no answer yet)"}[conv["verdict"]]
    head = Text(f"{conv['id']} ({conv['category']})", style="bold")
    head.append(f"  model {info['model']}, layout {info['layout']}, repeat {info['repeat']}")
    if info["samples"] > 1:
        head.append(f", self-consistency over {info['samples']} samples")
    out.append(head)
    if info.get("asked"):
        out.append(Text(str(info["asked"]), style="dim"))
    fd = conv["first_divergent"]
    which = " (of the asked turns)" if conv.get("asked_turns_only") else ""
    out.append(Text(f"{verdict}; first divergent turn{which}: "
                    f"{fd if fd is not None else 'none'}",
                    style=MATCH if conv["verdict"] == "P" else WRONG))
    turns = conv["turns"]
    for i, row in enumerate(turns):
        if row["status"] == "not_asked":
            if i == 0 or turns[i - 1]["status"] != "not_asked":
                out += [Text(""), _not_asked(turns, i)]
            continue
        out.append(Text(""))
        marker = ">" if row["turn"] == fd else " "
        status = {"match": ("match", MATCH), "wrong": ("WRONG", WRONG),
                  "abstained": ("ABSTAINED", ABSTAIN), "missing": ("no answer", ABSTAIN)}
        word, style = status[row["status"]]
        line = Text(f"{marker} turn {row['turn']} ({row['op']}): ", style="bold")
        line.append(word, style=style)
        if row["turn"] == fd:
            line.append("  <- first divergent turn", style=WRONG)
        out.append(line)
        out.append(Text("  user:  ", style="bold").append(Text(row["user"])))
        if row["status"] == "missing":
            continue
        out += _answer(row, lines)
        out += _reasoning(row, lines)
        if row["samples"]:
            out.append(Text(f"  {len(row['samples'])} samples voted; the spec below is the "
                            "vote", style="dim"))
        if row["status"] == "abstained":
            out.append(Text(f"  abstention: {row['abstention']} {row['detail']}".rstrip(),
                            style=ABSTAIN))
            continue
        if row["status"] == "match":
            out.append(Text("  spec: matches the oracle", style=MATCH))
            continue
        spec = row["spec"] or {}  # status "wrong": the answer parsed
        for k in row["wrong"]:
            sign, style, why = (("~", COLLATERAL, "changed, not asked") if k in row["collateral"]
                                else ("!", WRONG, "edit not made" if k in row["missed"]
                                      else "broken: no value of the setting" if spec[k] ==
                                      "broken" else "wrong"))
            item = Text(f"  {sign} {k} = ", style=style)
            item.append(Text(repr(spec[k]), style=style))
            item.append(Text(f"  oracle {row['oracle'][k]!r}  ({why})"))
            out.append(item)
        for k in row["collateral"]:
            if k not in row["wrong"]:  # moved off an earlier mistake without being asked
                out.append(Text(f"  ~ {k} = {spec[k]!r}  changed, not asked "
                                "(now equal to the oracle)", style=COLLATERAL))
    return out


def _not_asked(turns: list[TranscriptTurn], i: int) -> Text:
    """One line for the stretch of turns not asked that starts at ``turns[i]``."""
    j = i
    while j + 1 < len(turns) and turns[j + 1]["status"] == "not_asked":
        j += 1
    a, b = turns[i]["turn"], turns[j]["turn"]
    span = f"turn {a}" if a == b else f"turns {a}-{b}"
    return Text(f"  {span}: not asked (no answer, not scored; the next ask's prompt holds "
                f"{'its edit' if a == b else 'their edits'})", style="dim")


def _answer(row: TranscriptTurn, lines: int | None) -> list[Text]:
    """The model's raw answer (clipped), or on the code track its program's diff: the whole
    answer only with ``--full``."""
    diff = row.get("program_diff")
    out: list[Text] = []
    if diff is None or lines is None:
        raw, hidden = _clip(row["raw"] or "", lines)
        out.append(Text("  model: ", style="bold").append(Text(raw.replace("\n", "\n         "))))
        out += _more(hidden, 9)
    if diff is None:
        return out
    if not diff:
        return [*out, Text("  program: unchanged", style="dim")]
    shown, hidden = _clip("\n".join(diff), None if lines is None else 2 * lines)
    out.append(Text("  program diff:", style="bold"))
    for d in shown.splitlines():
        style = "green" if d.startswith("+") else "red" if d.startswith("-") else "dim"
        out.append(Text(f"    {d}", style=style))
    return out + _more(hidden, 4)


def _reasoning(row: TranscriptTurn, lines: int | None) -> list[Text]:
    """The turn's reasoning (clipped like the answer) and its reasoning tokens, if any."""
    text, tokens = row.get("reasoning"), row.get("reasoning_tokens")
    if not text and not tokens:
        return []
    head = Text("  reasoning" + (f" ({tokens} tokens)" if tokens else "") + ": ", style="dim")
    shown, hidden = _clip(text or "(not returned)", lines)
    return [head.append(Text(shown.replace("\n", "\n         "), style="dim")),
            *_more(hidden, 9)]


def listing(info: ShowInfo, convs: list[Transcript]) -> list[Text]:
    """One line per scenario: verdict, first divergent turn, and how to show it."""
    out = [Text(f"{info['run']}: {info['model']}, layout {info['layout']}, repeat "
                f"{info['repeat']} (P pass, F fail, A abstained, - incomplete)", style="bold")]
    if info.get("asked"):
        out.append(Text(str(info["asked"]), style="dim"))
    width = max(len(c["id"]) for c in convs) if convs else 10
    for c in convs:
        fd = c["first_divergent"]
        style = MATCH if c["verdict"] == "P" else WRONG
        line = Text(f"{c['verdict']} ", style=style)
        line.append(f"{c['id']:{width}}  {c['category']:15}  first divergent turn "
                    f"{fd if fd is not None else '-'}")
        out.append(line)
    out.append(Text("butterfly show RUN --scenario ID for a transcript", style="dim"))
    return out


def print_shown(info: ShowInfo, convs: list[Transcript], one: bool, *, full: bool = False,
                lines: int = 12, console: Console | None = None) -> int:
    """Print one transcript (``one``) or the listing of every scenario's verdict."""
    console = console or Console(highlight=False)
    texts = render(info, convs[0], lines=None if full else lines) if one else listing(
        info, convs)
    for t in texts:
        console.print(t, soft_wrap=True)
    return 0
