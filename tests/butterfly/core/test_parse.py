"""The answer parser: golden raw answers, properties (never raises, round trips, lenient is a
superset of structured), the synonym table, pathological input and the CLI seam."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sweep import examples

from butterfly.core.parse import (
    ABSTENTION_REASONS,
    MAX_CHARS,
    RAW_SYNONYMS,
    SYNONYMS,
    UNSPECIFIED_SYNONYMS,
    Parsed,
    main_parse,
    parse_answer,
)
from butterfly.core.vocab import PARSE_MODES as MODES
from oracle.catalogue import DOMAINS, KEYS, SPEC_VALUES, UNSPECIFIED, canonical_initial

GOLDEN = Path(__file__).resolve().parent / "golden" / "parse"
EXPECTED: dict[str, dict[str, Any]] = json.loads((GOLDEN / "expected.json").read_text("utf-8"))

PROPS = settings(
    derandomize=True,  # the same examples on every run: a failure is never a matter of luck
    database=None,
    deadline=None,
    max_examples=int(os.environ.get("PARSE_EXAMPLES", examples(300))),  # raise it for a long soak
    suppress_health_check=[HealthCheck.too_slow],
)


def check_invariants(p: Parsed) -> None:
    """What every result satisfies, whatever the input."""
    assert isinstance(p, Parsed)
    if p.spec is None:
        assert p.reason in ABSTENTION_REASONS
        assert p.reason != "parser_error", p.detail  # the safety net must never be needed
        assert p.detail
        p.detail.encode("ascii")  # details are ASCII (safe to print anywhere)
    else:
        assert p.reason is None
        assert tuple(p.spec) == KEYS
        assert all(p.spec[k] in SPEC_VALUES[k] for k in KEYS)


# ------------------------------------------------------------------------------------------
# Golden raw answers


def test_golden_files_and_expectations_match_one_to_one() -> None:
    names = {p.name for p in GOLDEN.glob("*.txt")}
    assert names == set(EXPECTED)
    assert len(names) >= 25
    for name, modes in EXPECTED.items():
        assert set(modes) - {"truncated"} == set(MODES), name
        for mode in MODES:
            want = modes[mode]
            if isinstance(want, str):
                assert want in ABSTENTION_REASONS, (name, mode)
            else:
                assert tuple(want) == KEYS, (name, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_golden(name: str, mode: str) -> None:
    text = (GOLDEN / name).read_text(encoding="utf-8")
    want = EXPECTED[name][mode]
    p = parse_answer(text, mode, truncated=EXPECTED[name].get("truncated", False))  # type: ignore[arg-type]
    check_invariants(p)
    if isinstance(want, str):
        assert p.spec is None and p.reason == want, p
    else:
        assert p.spec == want, p


def test_golden_echo_is_never_the_answer() -> None:
    """Seed 000: the echoed prompt's spec (the initial one) is never read as the answer."""
    initial = canonical_initial()
    for name in EXPECTED:
        if "echo" not in name:
            continue
        text = (GOLDEN / name).read_text(encoding="utf-8")
        assert json.dumps(initial, indent=2) in text  # the echo really holds a valid spec
        for mode in MODES:
            assert parse_answer(text, mode).spec != initial, (name, mode)


# ------------------------------------------------------------------------------------------
# Never raises

FRAGMENTS = [
    "{", "}", "[", "]", '"', "'", "\\", ":", ",", " ", "\n", "\t", "```", "```json\n", "\n```",
    '"python_version"', '"3.10"', "3.1", "60", "true", "null", "None", "NaN", "-", "1e999",
    '{"', '": "', '",', "UNSURE", "unsure", "<end_of_turn>", "\\u00e9", "\\ud800", "é", "\x00",
    "{timeout}", '"utf-8"', "Python Version", '"encoding": "UTF8"', "//", "/*", "*/",
]  # fmt: skip
jsonish = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=80).map("".join)


@PROPS
@given(text=st.text(), mode=st.sampled_from(MODES), truncated=st.booleans())
def test_never_raises_on_any_text(text: str, mode: str, truncated: bool) -> None:
    check_invariants(parse_answer(text, mode, truncated=truncated))  # type: ignore[arg-type]


@PROPS
@given(text=jsonish, mode=st.sampled_from(MODES))
@example(text="{" * 50_000, mode="lenient")
@example(text="[" * 50_000, mode="strict")
@example(text='{"a":' * 20_000, mode="structured")
@example(text='{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", mode="lenient")
@example(text='{"a": 1' + "9" * 5000 + "}", mode="lenient")
@example(text="\ud800{\"python_version\": '\udfff'}", mode="lenient")
def test_never_raises_on_jsonish_text(text: str, mode: str) -> None:
    check_invariants(parse_answer(text, mode))  # type: ignore[arg-type]


def test_never_raises_on_odd_callers() -> None:
    check_invariants(parse_answer(None))
    assert parse_answer(None).reason == "empty"
    spec = canonical_initial()
    assert parse_answer(json.dumps(spec).encode()).spec == spec  # type: ignore[arg-type]
    assert parse_answer(42).reason == "parser_error"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown parse mode"):
        parse_answer("{}", "loose")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Round trips

specs = st.fixed_dictionaries({k: st.sampled_from(sorted(SPEC_VALUES[k])) for k in KEYS})
prose = st.text(
    st.characters(exclude_characters="{`", exclude_categories=("Cs",)), max_size=200
).filter(lambda s: "unsure" not in s.lower())


@st.composite
def rendered(draw: st.DrawFn, spec: dict[str, str]) -> str:
    """``spec`` serialised with json.dumps in one of many shapes."""
    order = draw(st.permutations(KEYS))
    obj = {k: spec[k] for k in order}
    indent = draw(st.sampled_from([None, 0, 1, 2, 4, "\t"]))
    seps = draw(st.sampled_from([None, (",", ":"), (", ", ": "), (" , ", " : ")]))
    return json.dumps(obj, indent=indent, separators=seps, ensure_ascii=draw(st.booleans()))


@st.composite
def wrapped(draw: st.DrawFn) -> tuple[dict[str, str], str, bool]:
    """(spec, answer text, whether the answer is the bare object)."""
    spec = draw(specs)
    body = draw(rendered(spec))
    kind = draw(st.sampled_from(["bare", "prose", "fence", "bare_fence", "echo", "echo_fence"]))
    ws = draw(st.sampled_from(["", "\n", "  \n\t", "\r\n"]))
    before, after = draw(prose), draw(prose)
    if kind == "bare":
        text = ws + body + ws
    elif kind == "prose":
        text = f"{before}\n{body}\n{after}"
    elif kind == "fence":
        text = f"{before}\n```json\n{body}\n```\n{after}"
    elif kind == "bare_fence":
        text = f"{before}\n```\n{body}\n```\n{after}"
    else:
        other = draw(rendered(draw(specs)))  # an echoed prompt holding another spec
        if kind == "echo_fence":
            other = f"```json\n{other}\n```"
        text = f"Here is the current spec:\n{other}\n{before}\nAnswer:\n{body}{ws}"
    return spec, text, text.strip() == body


@PROPS
@given(case=wrapped())
def test_valid_spec_round_trips(case: tuple[dict[str, str], str, bool]) -> None:
    spec, text, bare = case
    for mode in ("structured", "lenient"):
        p = parse_answer(text, mode)  # type: ignore[arg-type]
        assert p.spec == spec, (mode, p)
        assert list(p.spec) == list(KEYS)  # catalogue order, whatever the answer's order
    strict = parse_answer(text, "strict")
    if bare:
        assert strict.spec == spec, strict
    else:
        assert strict.spec is None and strict.reason in ("bad_json", "no_json"), strict


@PROPS
@given(spec=specs, data=st.data())
def test_strict_accepts_exactly_the_bare_object(spec: dict[str, str], data: st.DataObject) -> None:
    body = data.draw(rendered(spec))
    assert parse_answer(body, "strict").spec == spec
    assert parse_answer(f" \n{body}\n ", "strict").spec == spec
    extra = data.draw(st.sampled_from(["x", "```", "{}", "Answer:", "// ok", ","]))
    assert parse_answer(f"{extra}\n{body}", "strict").spec is None
    assert parse_answer(f"{body}\n{extra}", "strict").spec is None


@st.composite
def mixtures(draw: st.DrawFn) -> str:
    """Text that sometimes parses: valid specs, broken ones and fragments, glued together."""
    parts = draw(
        st.lists(
            st.one_of(
                wrapped().map(lambda c: c[1]),
                jsonish,
                st.tuples(specs.flatmap(rendered), st.integers(0, 3)).map(
                    lambda t: t[0].replace('"', "'", t[1])
                ),
                specs.map(
                    lambda s: json.dumps(s).replace('"3.10"', "3.10").replace('"yes"', "true")
                ),
            ),
            min_size=1,
            max_size=4,
        )
    )
    return "\n".join(parts)


@PROPS
@given(text=st.one_of(mixtures(), jsonish, st.text()))
def test_lenient_is_a_superset_of_structured(text: str) -> None:
    structured = parse_answer(text, "structured")
    lenient = parse_answer(text, "lenient")
    check_invariants(structured)
    check_invariants(lenient)
    if structured.spec is not None:
        assert lenient.spec == structured.spec
    strict = parse_answer(text, "strict")
    if strict.spec is not None:  # and structured is a superset of strict
        assert structured.spec == strict.spec


# ------------------------------------------------------------------------------------------
# Lenient normalisation

ON_OFF = [k for k in KEYS if DOMAINS[k] == {"on", "off"}]
YES_NO = [k for k in KEYS if DOMAINS[k] == {"yes", "no"}]


def variants(key: str, value: str) -> list[object]:
    """Ways a model may write ``value`` of ``key`` that lenient must read back as ``value``."""
    out: list[object] = [value, value.upper(), value.title(), f" {value} "]
    if value == UNSPECIFIED:
        out += [None, *UNSPECIFIED_SYNONYMS, "Not Specified"]
    out += [src for src, dst in SYNONYMS.get(key, {}).items() if dst == value]
    out += [src for src, dst in RAW_SYNONYMS.get(key, {}).items() if dst == value]
    if key in ON_OFF and value != UNSPECIFIED:
        out += [value == "on", str(value == "on").lower(), "yes" if value == "on" else "no"]
    if key in YES_NO and value != UNSPECIFIED:
        out += [value == "yes", "True" if value == "yes" else "False"]
    if value.replace(".", "", 1).isdigit():
        out.append(float(value) if "." in value else int(value))  # 3.10 -> 3.1, "60" -> 60
    return out


@PROPS
@given(spec=specs, data=st.data())
def test_lenient_reads_every_documented_spelling(spec: dict[str, str], data: st.DataObject) -> None:
    def key_variant(k: str) -> str:
        return data.draw(
            st.sampled_from(
                [
                    k,
                    k.upper(),
                    k.replace("_", " ").title(),
                    k.replace("_", "-"),
                    "".join(w.title() for w in k.split("_")),
                ]
            )
        )

    obj = {key_variant(k): data.draw(st.sampled_from(variants(k, v))) for k, v in spec.items()}
    obj["comment"] = "extra keys are ignored"
    text = json.dumps(obj, indent=data.draw(st.sampled_from([None, 2])))
    if data.draw(st.booleans()):
        text = text.replace("}", ",}")  # a trailing comma, repaired
    p = parse_answer(text, "lenient")
    assert p.spec == spec, (p, text)


def test_synonym_table_is_consistent() -> None:
    for key, table in SYNONYMS.items():
        canonical = {v.lower() for v in SPEC_VALUES[key]}
        for src, dst in table.items():
            assert dst in SPEC_VALUES[key], (key, src)
            assert src == " ".join(src.lower().split()), (key, src)  # stored normalised
            assert src not in canonical, (key, src)  # never shadows a real value
            assert src not in UNSPECIFIED_SYNONYMS
    for table in SYNONYMS.values():
        assert UNSPECIFIED not in table.values()  # only the listed spellings mean unspecified


def test_docs_synonym_table_matches_the_code() -> None:
    doc = (GOLDEN.parents[4] / "docs" / "parser.md").read_text("utf-8")
    table = doc.split("<!-- synonyms:start")[1].split("<!-- synonyms:end")[0]
    documented: dict[str, dict[str, str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or cells[0] not in KEYS:
            continue
        dst = cells[2].strip("`")
        for src in re.findall(r"`([^`]+)`", cells[1]):
            documented.setdefault(cells[0], {})[src.replace("\\|", "|")] = dst
    assert documented == SYNONYMS


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("timeout_seconds", "none", "none"),  # "none" is a real value ...
        ("compression", "None", "none"),
        ("max_rows", "NONE", "none"),
        ("timeout_seconds", None, UNSPECIFIED),  # ... JSON null is unspecified
        ("null_marker", "null", "null"),  # the string "null" is the null marker "null"
        ("null_marker", None, UNSPECIFIED),
        ("null_marker", "na", "NA"),
        ("null_marker", "N/A", "NA"),
        ("python_version", 3.1, "3.10"),
        ("python_version", "Python 3.12", "3.12"),
        ("python_version", 3.9, "3.9"),
        ("timeout_seconds", 60, "60"),
        ("timeout_seconds", 60.0, "60"),
        ("timeout_seconds", "60s", "60"),
        ("max_rows", "10,000", "10000"),
        ("max_rows", "100k", "100000"),
        ("retries", "none", "0"),
        ("header_row", True, "yes"),
        ("deduplicate", False, "off"),
        ("delimiter", "\t", "tab"),
        ("delimiter", ",", "comma"),
        ("line_endings", "\r\n", "crlf"),
        ("encoding", "ISO-8859-1", "latin-1"),
        ("date_format", "ISO 8601", "iso-8601"),
        ("sort_order", "asc", "ascending"),
    ],
)
def test_lenient_value(key: str, value: object, want: str) -> None:
    spec = canonical_initial()
    obj: dict[str, object] = dict(spec)
    obj[key] = value
    p = parse_answer(json.dumps(obj), "lenient")
    assert p.spec == {**spec, key: want}, p


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("timeout_seconds", "n/a"),  # n/a is not unspecified (and not none)
        ("timeout_seconds", ""),
        ("timeout_seconds", "null"),  # the string null is ambiguous outside null_marker
        ("compression", "default"),
        ("compression", False),  # booleans only for yes/no and on/off settings
        ("null_marker", "None"),
        ("python_version", "3.1"),  # only the *number* 3.1 is 3.10
        ("python_version", 3),
        ("retries", 3.1),
        ("timeout_seconds", "45"),
    ],
)
def test_lenient_refuses_ambiguous_values(key: str, value: object) -> None:
    obj: dict[str, object] = dict(canonical_initial())
    obj[key] = value
    p = parse_answer(json.dumps(obj), "lenient")
    assert p.spec is None and p.reason == "out_of_domain", p
    assert key in p.detail


def test_lenient_ignores_unknown_keys_but_not_conflicts() -> None:
    spec = canonical_initial()
    text = json.dumps({**spec, "Encoding": "latin-1"})  # two spellings, two values
    p = parse_answer(text, "lenient")
    assert p.reason == "duplicate_key" and "encoding" in p.detail
    same = json.dumps({**spec, "Encoding": "UTF-8"})  # two spellings, one value
    assert parse_answer(same, "lenient").spec == spec


# ------------------------------------------------------------------------------------------
# Selection rules, reasons and details


def test_truncated_flag_wins_over_everything() -> None:
    spec = json.dumps(canonical_initial())
    for mode in MODES:
        for text in (spec, "", None, "UNSURE"):
            p = parse_answer(text, mode, truncated=True)  # type: ignore[arg-type]
            assert p.reason == "truncated"


@pytest.mark.parametrize(
    "text",
    ["UNSURE", " unsure ", "UNSURE.", "**UNSURE**", "`UNSURE`", '"UNSURE"', "Answer: UNSURE",
     "```\nUNSURE\n```", "UNSURE<end_of_turn>", "Final answer: Unsure!"],
)  # fmt: skip
def test_unsure_in_every_mode(text: str) -> None:
    for mode in MODES:
        assert parse_answer(text, mode).reason == "unsure", (text, mode)  # type: ignore[arg-type]


def test_unsure_only_when_it_is_the_answer() -> None:
    spec = canonical_initial()
    body = json.dumps(spec)
    hedge = "If the request is unclear, answer UNSURE instead of a spec.\n"
    assert parse_answer(hedge + body).spec == spec  # the instruction in an echo is not the answer
    assert parse_answer(body + "\nI was unsure about the delimiter.").spec == spec
    assert parse_answer(body + "\n\nUNSURE").reason == "unsure"  # the last word is UNSURE
    assert parse_answer("I'm unsure which format you mean.").reason == "no_json"


def test_structured_never_falls_back_to_an_earlier_object() -> None:
    """A malformed last object is an abstention, not a licence to read the echo above it."""
    echo = json.dumps(canonical_initial(), indent=2)
    broken = json.dumps({**canonical_initial(), "retries": "3"}).replace('"3"}', '"3",}')
    p = parse_answer(f"Current spec:\n{echo}\nAnswer:\n{broken}", "structured")
    assert p.reason == "bad_json" and "offset" in p.detail
    lenient = parse_answer(f"Current spec:\n{echo}\nAnswer:\n{broken}", "lenient")
    assert lenient.spec is not None and lenient.spec["retries"] == "3"


def test_prose_braces_are_not_objects() -> None:
    spec = canonical_initial()
    body = json.dumps(spec)
    assert parse_answer(f"{body}\nI kept {{timeout}} and {{ x + y }} as they were.").spec == spec
    assert parse_answer(f"Use {{ to open a block. {body}").spec == spec
    assert parse_answer(f'Prose with a "quote. {body} and "another').spec == spec
    nested = json.dumps({"a": {"b": "}{"}, "s": '\\"}'})
    assert parse_answer(f"{body}\n{nested}").reason == "unknown_key"  # last object, not its parts


def test_reason_details_name_the_problem() -> None:
    spec = canonical_initial()
    missing = {k: v for k, v in spec.items() if k not in ("retries", "encoding")}
    p = parse_answer(json.dumps(missing))
    assert p.reason == "missing_key" and "retries" in p.detail and "encoding" in p.detail
    p = parse_answer(json.dumps({**spec, "timeout_seconds": "45"}))
    assert p.reason == "out_of_domain" and "timeout_seconds='45'" in p.detail
    p = parse_answer(json.dumps({**spec, "x": "1"}))
    assert p.reason == "unknown_key" and "'x'" in p.detail
    p = parse_answer(json.dumps({**spec, "retries": 3}))
    assert p.reason == "bad_type" and "retries" in p.detail
    assert parse_answer('{"python_version": NaN}', "strict").reason == "bad_json"
    assert parse_answer("[1, 2]", "strict").reason == "not_object"
    assert parse_answer("hello", "strict").reason == "no_json"


@pytest.mark.timeout(120)  # a hang guard (json_repair is quadratic), not a speed target
def test_pathological_input_is_bounded() -> None:
    cases = [
        "x" * (MAX_CHARS + 1),
        "{" * 200_000,
        "[{" * 100_000,
        '{"' * 100_000,
        '{"a": ' + "[" * 200_000,
        "```\n" * 200_000,
        '{"a": "' + "\\" * 300_000,
        "{" + 'a"' * 3_900,  # quadratic for json_repair: must not reach it
    ]
    for text in cases:
        for mode in MODES:
            p = parse_answer(text, mode)  # type: ignore[arg-type]
            check_invariants(p)
    assert parse_answer("x" * (MAX_CHARS + 1)).reason == "too_large"


# ------------------------------------------------------------------------------------------
# The CLI seam


def test_main_parse() -> None:
    spec = canonical_initial()
    code, out = main_parse("structured", f"Sure:\n{json.dumps(spec, indent=2)}\n")
    assert code == 0 and json.loads(out) == spec and "\n" not in out
    code, out = main_parse("strict", "UNSURE\n")
    assert (code, out) == (3, "abstention: unsure: the answer is UNSURE")
    code, out = main_parse("lenient", "")
    assert code == 3 and out.startswith("abstention: empty: ")
    code, out = main_parse("sloppy", "{}")
    assert code == 2 and "unknown parse mode" in out


def test_cli_parse_command() -> None:
    from conftest import run_inproc as run_cli  # in this process: no interpreter start per call

    spec = canonical_initial()
    r = run_cli("parse", "--mode", "structured", stdin=f"Answer:\n{json.dumps(spec)}\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == spec
    r = run_cli("parse", "--mode", "strict", stdin=f"Answer:\n{json.dumps(spec)}\n")
    assert r.returncode == 3
    assert "abstention: bad_json" in r.stdout + r.stderr


def test_random_texts_match_between_calls() -> None:
    """Parsing is a pure function of its input."""
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(40)))
        for mode in MODES:
            assert parse_answer(text, mode) == parse_answer(text, mode)  # type: ignore[arg-type]
