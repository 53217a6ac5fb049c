'''The reference renderer: a code-catalogue spec -> the source of ``tool.py`` (pure).

Each setting is realised as code a person would write (a reader per input format, a writer per
output format, a ``gzip.open``, a ``strftime`` pattern, ...), never as a table read at run time.
The program's behaviour, stated once, is docs/code-track.md's "one reading".
'''

from __future__ import annotations

from collections.abc import Mapping

DELIMITERS = {"comma": ",", "tab": "\\t", "semicolon": ";", "pipe": "|"}
NULLS = {"empty": "", "NA": "NA", "null": "null"}
DATES = {"us": "%m/%d/%Y", "eu": "%d/%m/%Y"}

_HEAD = '''"""tool.py: convert a table of records from {input} to {output}.

Usage: python tool.py INPUT OUTPUT

Reads INPUT, drops or reports bad records, {steps}, and writes OUTPUT.
"""

from __future__ import annotations

{imports}

ENCODING = "{encoding}"
DATE = re.compile(r"\\d{{4}}-\\d{{2}}-\\d{{2}}")

Record = dict[str, str | None]
'''

_MAIN = '''

def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: tool.py INPUT OUTPUT", file=sys.stderr)
        return 2
    columns, records = read_records(argv[1])
    records = transform(columns, records)
    write_records(argv[2], columns, records)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''


def _reject(on_error: str) -> str:
    body = {
        "fail": '    sys.exit(f"error: {message}")',
        "skip": "    return  # bad records are dropped without a word",
        "warn": '    print(f"warning: skipped {message}", file=sys.stderr)',
    }[on_error]
    return f'''

def reject(message: str) -> None:
    """What happens to a record that cannot be read."""
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


def _transform(spec: Mapping[str, str]) -> str:
    lines = []
    if spec["deduplicate"] == "on":
        lines += ["    seen = set()", "    unique = []", "    for record in records:",
                  "        key = tuple(record.get(c) for c in columns)",
                  "        if key not in seen:", "            seen.add(key)",
                  "            unique.append(record)", "    records = unique"]
    if spec["sort_order"] != "none":
        reverse = ", reverse=True" if spec["sort_order"] == "descending" else ""
        lines += ["    if columns:",
                  f'        records.sort(key=lambda r: r.get(columns[0]) or ""{reverse})']
    if spec["max_rows"] != "none":
        lines.append(f"    records = records[:{spec['max_rows']}]")
    lines.append("    return records")
    steps = "\n".join(lines)
    return f'''

def transform(columns: list[str], records: list[Record]) -> list[Record]:
    """The records between reading and writing."""
{steps}
'''


def _format_date(spec: Mapping[str, str]) -> str:
    if spec["date_format"] == "iso-8601":
        out = "    return day.isoformat()"
    elif spec["date_format"] == "unix":
        out = "    return str(calendar.timegm(day.timetuple()))"
    else:
        out = f'    return day.strftime("{DATES[spec["date_format"]]}")'
    return f'''

def show(value: str) -> str:
    """A value as printed: an ISO date (YYYY-MM-DD) in the output's date format."""
    if not DATE.fullmatch(value):
        return value
    try:
        day = datetime.date.fromisoformat(value)
    except ValueError:
        return value
{out}
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
    return f'''

def open_output(path: str) -> TextIO:
    """The output file, as text; every line ends with "{newline}"."""
    return {opener}, encoding=ENCODING, newline="{newline}")
'''


def _write(spec: Mapping[str, str]) -> str:
    fmt = spec["output_format"]
    if fmt == "csv":
        quoting = {"minimal": "csv.QUOTE_MINIMAL", "all": "csv.QUOTE_ALL",
                   "none": 'csv.QUOTE_NONE, escapechar="\\\\"'}[spec["quote_style"]]
        body = f'''        writer = csv.writer(out, quoting={quoting}, lineterminator="\\n")
        writer.writerow(columns)
        for record in records:
            writer.writerow(cells(columns, record))'''
    elif fmt == "json":
        body = '''        rows = [{c: show_json(record.get(c)) for c in columns}
                for record in records]
        out.write(json.dumps(rows, ensure_ascii=False) + "\\n")'''
    elif fmt == "jsonl":
        body = '''        for record in records:
            row = {c: show_json(record.get(c)) for c in columns}
            out.write(json.dumps(row, ensure_ascii=False) + "\\n")'''
    elif fmt == "markdown":
        body = '''        out.write(markdown_row(columns))
        out.write(markdown_row(["---"] * len(columns)))
        for record in records:
            out.write(markdown_row(cells(columns, record)))'''
    else:
        body = '''        out.write("<table>\\n")
        out.write(html_row("th", columns))
        for record in records:
            out.write(html_row("td", cells(columns, record)))
        out.write("</table>\\n")'''
    return f'''

def write_records(path: str, columns: list[str], records: list[Record]) -> None:
    """Write the records as {fmt}."""
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
    escaped = [v.replace("|", "\\\\|") for v in values]
    return "| " + " | ".join(escaped) + " |\\n"
''',
    "html": '''

def html_row(tag: str, values: list[str]) -> str:
    inner = "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values)
    return f"  <tr>{inner}</tr>\\n"
''',
}


def _imports(spec: Mapping[str, str]) -> str:
    names = {"calendar" if spec["date_format"] == "unix" else "", "datetime", "re", "sys"}
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
    return ", ".join(steps) or "keeps the records as they are"


def render(spec: Mapping[str, str]) -> str:
    """The reference ``tool.py`` for ``spec`` (a valid code-catalogue spec)."""
    reader = _read_table if spec["input_format"] in ("csv", "tsv") else _read_json
    fmt = spec["output_format"]
    helper = _HELPERS.get("json" if fmt == "jsonl" else fmt, "")
    head = _HEAD.format(input=spec["input_format"].upper(), output=fmt.upper(),
                        steps=_steps(spec), imports=_imports(spec), encoding=spec["encoding"])
    parts = [head, _reject(spec["on_error"]), reader(spec), _transform(spec),
             _format_date(spec), _cells(spec), helper, _open(spec), _write(spec), _MAIN]
    return "".join(parts)
