"""The op mix of a suite by turn band, and how far its undos reach back, as a Markdown table
(``butterfly.suite.mix``).

    python tools/ladder_mix.py [SUITE]            # print the table (default butterfly-horizon)
    python tools/ladder_mix.py --write            # rewrite it in docs/ladder.md

With ``--write`` the table of butterfly-horizon replaces the one between the markers
``<!-- horizon-mix -->`` and ``<!-- /horizon-mix -->`` of docs/ladder.md
(tests/butterfly/suite/test_horizon_suite.py holds the page to a fresh computation).
"""

from __future__ import annotations

import sys
from pathlib import Path

from butterfly.suite.load import ROOT, load_suite, resolve_suite
from butterfly.suite.mix import mix_table, op_mix

DOC = ROOT / "docs" / "ladder.md"
BEGIN, END = "<!-- horizon-mix -->\n", "<!-- /horizon-mix -->"


def main(argv: list[str]) -> None:
    write = "--write" in argv
    names = [a for a in argv if a != "--write"] or ["butterfly-horizon"]
    table = mix_table(op_mix(load_suite(resolve_suite(names[0]))))
    if not write:
        sys.stdout.write(table)
        return
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    Path(DOC).write_text(head + BEGIN + table + END + tail, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
