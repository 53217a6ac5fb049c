"""The scripted agents of the code track (contract section 7): each answers a program (pure).

- ``script/oracle``: the reference program for the oracle's spec;
- ``script/noop``: the initial program, unchanged (the no-op baseline);
- ``script/last-edit``: the program for the last-edit agent's spec (undo and redo ignored);
- ``script/refactor``: the oracle's program rewritten without changing behaviour
  (:func:`refactor`): it must score 100%;
- ``script/collateral``: the oracle's program with one setting no turn targets also changed:
  its change radius is exactly that setting.

The spec-track agents that answer by the request's seed (``noisy``, ``drift``), the recency
agent (``window:k=K``) and those that misread the rules (``lifo``, ``no-coupling``) answer their
spec's reference program too.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Final

from butterfly.code.conversation import answer_text, code_spec
from butterfly.code.program import render
from butterfly.core.agents import agent_specs
from butterfly.core.code_catalogue import DOMAINS, KEYS, apply_couplings, is_valid
from oracle import Scenario, replay, targeted

CODE_AGENTS: Final = ("oracle", "noop", "last-edit", "lifo", "no-coupling", "refactor",
                      "collateral")

COLLATERAL_KEYS: Final = ("date_format", "line_endings", "compression", "deduplicate",
                          "on_error", "sort_order", "max_rows")
"""Settings ``script/collateral`` may change: observable whatever the others hold, in no
coupling. The first one no turn of the scenario targets is changed, to the next value of its
domain; a scenario that targets all seven gets the oracle's answers."""


def collateral_change(scenario: Scenario) -> tuple[str, str] | None:
    """The setting ``script/collateral`` changes in ``scenario`` and its value, or None."""
    hit = targeted(scenario)
    for key in COLLATERAL_KEYS:
        if key not in hit:
            domain = DOMAINS[key]
            now = scenario.initial[key]
            return key, domain[(domain.index(now) + 1) % len(domain)]
    return None


def code_answers(name: str, scenario: Scenario) -> list[str]:
    """Agent ``name``'s answer after every turn (index 0: the initial program's)."""
    if name == "refactor":
        specs = [code_spec(s) for s in replay(scenario)]
        return [answer_text(refactor(render(s), s)) for s in specs]
    if name == "collateral":
        specs = [code_spec(s) for s in replay(scenario)]
        change = collateral_change(scenario)
        if change is not None:
            specs = [specs[0]] + [_changed(s, *change) for s in specs[1:]]
        return [answer_text(render(s)) for s in specs]
    return [answer_text(render(code_spec(s))) for s in agent_specs(name, scenario)]


def _changed(spec: dict[str, str], key: str, value: str) -> dict[str, str]:
    out = apply_couplings({**spec, key: value})
    if not is_valid(out) or set(out) != set(KEYS):
        raise ValueError(f"collateral: {key}={value} breaks a coupling")
    return out


# Behaviour-preserving rewrites of a rendered program (contract section 7, ``script/refactor``).
# Each rewrite changes how the program is written, never what it does, so the extractor must read
# the same spec from it. Three kinds beyond renaming, as the contract names them: another function
# layout (the functions in another order, reprinted by ``ast.unparse``), CSV written by hand instead
# of through the csv module (for each quoting style), and the HTML table inside a full page. JSON
# indented with sorted keys is a fourth. :func:`refactor` applies every rewrite that fits a spec.


def edit(source: str, old: str, new: str) -> str:
    """``source`` with ``old`` replaced; ``old`` must be there (a renderer change shows here)."""
    if old not in source:
        raise ValueError(f"rewrite: {old!r} is not in the program")
    return source.replace(old, new)


def reordered(source: str) -> str:
    """The functions in reverse order, reprinted by ``ast.unparse`` (other layout, no comments)."""
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    rest = [n for n in tree.body if not isinstance(n, ast.FunctionDef)]
    tree.body = rest[:-1] + defs[::-1] + rest[-1:]
    return ast.unparse(tree) + "\n"


def full_page(source: str) -> str:
    """The HTML table inside a full page: doctype, head, body, a class and a tbody."""
    source = edit(source, 'out.write("<table>\\n")',
                  'out.write("<!DOCTYPE html>\\n<html><head><title>Records</title></head>'
                  '<body>\\n<table class=\\"records\\">\\n<tbody>\\n")')
    return edit(source, 'out.write("</table>\\n")',
                'out.write("</tbody></table></body></html>\\n")')


def indented(source: str) -> str:
    """JSON written with an indent and sorted keys (the same values)."""
    return edit(source, "json.dumps(rows, ensure_ascii=False)",
                "json.dumps(rows, ensure_ascii=False, indent=4, sort_keys=True)")


_QUOTE: Final = {
    "minimal": ("'\"' + v.replace('\"', '\"\"') + '\"' if any(ch in v for ch in ',\"\\r\\n') "
                "else v"),
    "all": "'\"' + v.replace('\"', '\"\"') + '\"'",
    "none": "''.join('\\\\' + ch if ch in ',\"\\\\\\r\\n' else ch for ch in v)",
}
_HAND_CSV: Final = '''        def line(values: list[str]) -> str:
            fields = [{quote} for v in values]
            return ",".join(fields) + "\\n"

        out.write(line(columns))
        for record in records:
            out.write(line(cells(columns, record)))'''


def by_hand(source: str, quote_style: str) -> str:
    """CSV written by hand instead of through the csv module, quoting as ``quote_style``."""
    start = source.index("        writer = csv.writer(")
    end = source.index("\n\n", start)
    return source[:start] + _HAND_CSV.format(quote=_QUOTE[quote_style]) + source[end:]


def renamed(source: str) -> str:
    """Other names (never a rewrite alone: ``refactor`` always changes the layout too)."""
    return edit(edit(source, "transform(", "process_rows("), "records", "rows_in")


def refactor(source: str, spec: Mapping[str, str]) -> str:
    """``source`` (rendered for ``spec``) rewritten by every rewrite that fits it: the one of its
    output format (CSV by hand, the HTML page, indented JSON), then other names, then another
    function layout."""
    fmt = spec["output_format"]
    if fmt == "csv":
        source = by_hand(source, spec["quote_style"])
    elif fmt == "html":
        source = full_page(source)
    elif fmt == "json":
        source = indented(source)
    return reordered(renamed(source))
