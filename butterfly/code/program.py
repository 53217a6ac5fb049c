'''The reference renderer: a code-catalogue spec -> the source of ``tool.py`` (pure).

Each setting is realised as code a person would write (a reader per input format, a writer per
output format, a ``gzip.open``, a ``strftime`` pattern, ...), never as a table read at run time.
The program's behaviour, stated once, is docs/code-track.md's "one reading".
'''

from __future__ import annotations

import textwrap
from collections.abc import Mapping

DELIMITERS = {"comma": ",", "tab": "\\t", "semicolon": ";", "pipe": "|"}
NULLS = {"empty": "", "NA": "NA", "null": "null"}
DATES = {"us": "%m/%d/%Y", "eu": "%d/%m/%Y"}

_HEAD = '''"""tool.py: convert a table of records from {input} to {output}.

Usage: python tool.py INPUT OUTPUT

{steps}
"""

from __future__ import annotations

{imports}

ENCODING = "{encoding}"
DATE = re.compile(r"\\d{{4}}-\\d{{2}}-\\d{{2}}")

Record = dict[str, str | None]
'''

_MAIN = '''

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: an input file and an output file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="the file to read")
    parser.add_argument("output", help="the file to write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Read, transform, write; the exit status is 0 unless a record stopped the run."""
    args = parse_args(argv)
    columns, records = read_records(args.input)
    records = transform(columns, records)
    write_records(args.output, columns, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _reject(on_error: str) -> str:
    body = {
        "fail": '    sys.exit(f"error: {message}")',
        "skip": "    return  # bad records are dropped without a word",
        "warn": '    print(f"warning: skipped {message}", file=sys.stderr)',
    }[on_error]
    doc = {"fail": "Stop at a record that cannot be read: a message, exit status 1.",
           "skip": "Drop a record that cannot be read, silently.",
           "warn": "Drop a record that cannot be read, with a warning on stderr."}[on_error]
    return f'''

def reject(message: str) -> None:
    """{doc}"""
{body}
'''


def _read_table(spec: Mapping[str, str]) -> str:
    delimiter = "\\t" if spec["input_format"] == "tsv" else DELIMITERS[spec["delimiter"]]
    if spec["header_row"] == "yes":
        head = "    columns, body, first = rows[0], rows[1:], 2"
    else:
        head = ('    columns = [f"col{i}" for i in range(1, len(rows[0]) + 1)]\n'
                "    body, first = rows, 1")
    return f'''

def read_records(path: str) -> tuple[list[str], list[Record]]:
    """Read delimited text; an empty field is a missing value."""
    with open(path, encoding=ENCODING, newline="") as f:
        rows = [row for row in csv.reader(f, delimiter="{delimiter}") if row]
    if not rows:
        return [], []
{head}
    records = []
    for number, row in enumerate(body, start=first):
        if len(row) != len(columns):
            reject(f"line {{number}}: expected {{len(columns)}} fields, found {{len(row)}}")
            continue
        records.append({{c: (v if v != "" else None) for c, v in zip(columns, row)}})
    return columns, records
'''


def _read_json(spec: Mapping[str, str]) -> str:
    if spec["input_format"] == "json":
        load = '''    with open(path, encoding=ENCODING) as f:
        items = list(enumerate(json.load(f), start=1))'''
    else:
        load = '''    items = []
    with open(path, encoding=ENCODING) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                items.append((number, json.loads(line)))
            except json.JSONDecodeError:
                reject(f"line {number}: not JSON")'''
    return f'''

def read_records(path: str) -> tuple[list[str], list[Record]]:
    """Read JSON objects; their keys, in order of first appearance, are the columns."""
{load}
    records = []
    for number, item in items:
        if not isinstance(item, dict):
            reject(f"record {{number}}: not an object")
            continue
        records.append({{k: (None if v is None else str(v)) for k, v in item.items()}})
    columns = list(dict.fromkeys(key for record in records for key in record))
    return columns, records
'''


def _dedupe() -> str:
    return '''

def drop_duplicates(columns: list[str], records: list[Record]) -> list[Record]:
    """Drop every record equal to an earlier one in all columns (the first is kept)."""
    seen = set()
    unique = []
    for record in records:
        key = tuple(record.get(c) for c in columns)
        if key not in seen:
            seen.add(key)
            unique.append(record)
    return unique
'''


def _sort(order: str) -> str:
    reverse = ", reverse=True" if order == "descending" else ""
    return f'''

def sort_records(columns: list[str], records: list[Record]) -> list[Record]:
    """Sort by the first column, as text, {order} (a stable sort)."""
    if not columns:
        return records
    return sorted(records, key=lambda r: r.get(columns[0]) or ""{reverse})
'''


def _transform(spec: Mapping[str, str]) -> str:
    helpers, lines = "", []
    if spec["deduplicate"] == "on":
        helpers += _dedupe()
        lines.append("    records = drop_duplicates(columns, records)")
    if spec["sort_order"] != "none":
        helpers += _sort(spec["sort_order"])
        lines.append("    records = sort_records(columns, records)")
    if spec["max_rows"] != "none":
        lines += [f"    # keep the first {spec['max_rows']} records",
                  f"    records = records[:{spec['max_rows']}]"]
    lines.append("    return records")
    steps = "\n".join(lines)
    doc = textwrap.fill(f"The records between reading and writing: {_steps(spec)}.", width=88,
                        subsequent_indent="    ")
    return f'''{helpers}

def transform(columns: list[str], records: list[Record]) -> list[Record]:
    """{doc}"""
{steps}
'''


_DATE_OUT = {"iso-8601": "day.isoformat()", "unix": "str(calendar.timegm(day.timetuple()))"}
"""How ``show`` prints a day in the date formats that are no ``strftime`` pattern."""


def _format_date(spec: Mapping[str, str]) -> str:
    out = _DATE_OUT.get(spec["date_format"]) or f'day.strftime("{DATES[spec["date_format"]]}")'
    return f'''

def show(value: str) -> str:
    """A value as printed: an ISO date (YYYY-MM-DD) in the output's date format."""
    if not DATE.fullmatch(value):
        return value
    try:
        day = datetime.date.fromisoformat(value)
    except ValueError:
        return value
    return {out}
'''


def _cells(spec: Mapping[str, str]) -> str:
    return f'''

def cells(columns: list[str], record: Record) -> list[str]:
    """A record's printed values; a missing value is "{NULLS[spec["null_marker"]]}"."""
    return [show(v) if v is not None else "{NULLS[spec["null_marker"]]}"
            for v in (record.get(c) for c in columns)]
'''


def _open(spec: Mapping[str, str]) -> str:
    opener = {"none": "open(path, \"w\"", "gzip": "gzip.open(path, \"wt\"",
              "bz2": "bz2.open(path, \"wt\""}[spec["compression"]]
    newline = "\\r\\n" if spec["line_endings"] == "crlf" else "\\n"
    ending = spec["line_endings"].upper()
    return f'''

def open_output(path: str) -> TextIO:
    """The output file, as text; every line ends with {ending}."""
    return {opener}, encoding=ENCODING, newline="{newline}")
'''


_WRITERS = {
    "csv": '''        writer = csv.writer(out, quoting=QUOTING, lineterminator="\\n")
        writer.writerow(columns)
        for record in records:
            writer.writerow(cells(columns, record))''',
    "json": '''        rows = [{c: show_json(record.get(c)) for c in columns}
                for record in records]
        out.write(json.dumps(rows, ensure_ascii=False) + "\\n")''',
    "jsonl": '''        for record in records:
            row = {c: show_json(record.get(c)) for c in columns}
            out.write(json.dumps(row, ensure_ascii=False) + "\\n")''',
    "markdown": '''        out.write(markdown_row(columns))
        out.write(markdown_row(["---"] * len(columns)))
        for record in records:
            out.write(markdown_row(cells(columns, record)))''',
    "html": '''        out.write("<table>\\n")
        out.write(html_row("th", columns))
        for record in records:
            out.write(html_row("td", cells(columns, record)))
        out.write("</table>\\n")''',
}
"""The body of ``write_records`` for each output format (CSV's ``QUOTING``: the quote style's,
:data:`_QUOTING`)."""
_QUOTING = {"minimal": "csv.QUOTE_MINIMAL", "all": "csv.QUOTE_ALL",
            "none": 'csv.QUOTE_NONE, escapechar="\\\\"'}


def _write(spec: Mapping[str, str]) -> str:
    fmt = spec["output_format"]
    body = _WRITERS[fmt].replace("QUOTING", _QUOTING[spec["quote_style"]])
    return f'''

def write_records(path: str, columns: list[str], records: list[Record]) -> None:
    """Write the records as {fmt.upper()}."""
    with open_output(path) as out:
{body}
'''


_HELPERS = {
    "json": '''

def show_json(value: str | None) -> str | None:
    """A JSON value: a missing value is null."""
    return None if value is None else show(value)
''',
    "markdown": '''

def markdown_row(values: list[str]) -> str:
    """One row of a Markdown table; a "|" inside a value is escaped."""
    escaped = [v.replace("|", "\\\\|") for v in values]
    return "| " + " | ".join(escaped) + " |\\n"
''',
    "html": '''

def html_row(tag: str, values: list[str]) -> str:
    """One row of an HTML table, its values escaped."""
    inner = "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values)
    return f"  <tr>{inner}</tr>\\n"
''',
}


def _imports(spec: Mapping[str, str]) -> str:
    names = {"calendar" if spec["date_format"] == "unix" else "", "argparse", "datetime", "re",
             "sys"}
    if spec["input_format"] in ("csv", "tsv") or spec["output_format"] == "csv":
        names.add("csv")
    if spec["input_format"] in ("json", "jsonl") or spec["output_format"] in ("json", "jsonl"):
        names.add("json")
    if spec["output_format"] == "html":
        names.add("html")
    if spec["compression"] != "none":
        names.add(spec["compression"])
    lines = [f"import {n}" for n in sorted(names - {""})]
    return "\n".join([*lines, "from typing import TextIO"])


def _steps(spec: Mapping[str, str]) -> str:
    steps = []
    if spec["deduplicate"] == "on":
        steps.append("drops repeated records")
    if spec["sort_order"] != "none":
        steps.append(f"sorts by the first column ({spec['sort_order']}, as text)")
    if spec["max_rows"] != "none":
        steps.append(f"keeps the first {spec['max_rows']} records")
    return ", ".join(steps) or "keeps the records as they are, in their order"


def render(spec: Mapping[str, str]) -> str:
    """The reference ``tool.py`` for ``spec`` (a valid code-catalogue spec)."""
    reader = _read_table if spec["input_format"] in ("csv", "tsv") else _read_json
    fmt = spec["output_format"]
    helper = _HELPERS.get("json" if fmt == "jsonl" else fmt, "")
    what = textwrap.fill(f"Reads INPUT, handles unreadable records, {_steps(spec)}, and writes "
                         "OUTPUT.", width=88)
    head = _HEAD.format(input=spec["input_format"].upper(), output=fmt.upper(), steps=what,
                        imports=_imports(spec), encoding=spec["encoding"])
    parts = [head, _reject(spec["on_error"]), reader(spec), _transform(spec),
             _format_date(spec), _cells(spec), helper, _open(spec), _write(spec), _MAIN]
    return "".join(parts)
