"""Behaviour-preserving rewrites of a rendered program (contract section 7, ``script/refactor``).

Each rewrite changes how the program is written, never what it does, so the extractor must read
the same spec from it. Three kinds beyond renaming, as the contract names them: another function
layout (the functions in another order, reprinted by ``ast.unparse``), CSV written by hand instead
of through the csv module (for each quoting style), and the HTML table inside a full page. JSON
indented with sorted keys is a fourth. :func:`refactor` applies every rewrite that fits a spec.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Final


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


Rewrite = Callable[[str], str]


def rewrites_for(spec: Mapping[str, str]) -> list[tuple[str, Rewrite]]:
    """The rewrites that fit a program rendered for ``spec``, in the order they are applied."""
    fmt = spec["output_format"]
    out: list[tuple[str, Rewrite]] = []
    if fmt == "csv":
        out.append(("by_hand", lambda s: by_hand(s, spec["quote_style"])))
    elif fmt == "html":
        out.append(("full_page", full_page))
    elif fmt == "json":
        out.append(("indented", indented))
    out += [("renamed", renamed), ("reordered", reordered)]
    return out


def refactor(source: str, spec: Mapping[str, str]) -> str:
    """``source`` (rendered for ``spec``) rewritten by every rewrite that fits it."""
    for _, rewrite in rewrites_for(spec):
        source = rewrite(source)
    return source
