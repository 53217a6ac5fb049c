"""Issue 21, item 1: what the manifest says is what is sent. Every key the harness owns
(model, messages, temperature, seed, max tokens, response format, tools, n, stream, and the
connection's) is refused through every door a model argument comes in by: ``-M``,
``--model-args`` (JSON and YAML), ``extra_body``, nested provider options, ``sequential``
and the Python API; one line naming the key, nothing created, nothing sent.

Each check is tested where its logic lives (issue 36): every owned key at every nesting the
check reads, at the check itself (``parse_model_args``, one pure call each); every door once,
through the command line, with one key (the door only hands its arguments to that check)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from conftest import run_inproc
from fakeserver import FakeServer

import butterfly
from butterfly.errors import UserError
from butterfly.runs.run_flags import OWNED, parse_model_args

VALUE: dict[str, Any] = {"model": "other-model", "temperature": 1.5, "seed": 7,
                         "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
                         "n": 2, "stream": True, "tools": []}
"""A plausible value for some keys (any value is refused: only the name matters)."""

Door = Callable[[str, Any, Path], list[str]]
"""(key, value, scratch dir) -> the argv of ``butterfly`` that sends the key through a door."""


def _run(tmp: Path, *extra: str) -> list[str]:
    return ["run", "--model", "script/oracle", "--limit", "1", "--no-cache",
            "--out", str(tmp / "out"), *extra]


def _file(tmp: Path, args: dict[str, Any], suffix: str) -> str:
    path = tmp / f"args{suffix}"
    path.write_text(yaml.safe_dump(args) if suffix == ".yaml" else json.dumps(args))
    return str(path)


DOORS: dict[str, Door] = {
    "-M": lambda k, v, t: _run(t, "-M", f"{k}={json.dumps(v)}"),
    "-M extra_body": lambda k, v, t: _run(t, "-M", f"extra_body={json.dumps({k: v})}"),
    "-M options": lambda k, v, t: _run(t, "-M", f"options={json.dumps({k: v})}"),
    "-M extra_body.generationConfig": lambda k, v, t: _run(
        t, "-M", "extra_body=" + json.dumps({"generationConfig": {k: v}})),
    "--model-args json": lambda k, v, t: _run(t, "--model-args", _file(t, {k: v}, ".json")),
    "--model-args yaml extra_body.options": lambda k, v, t: _run(
        t, "--model-args", _file(t, {"extra_body": {"options": {k: v}}}, ".yaml")),
    "sequential -M extra_body": lambda k, v, t: [
        "sequential", "--model-a", "script/oracle", "--model-b", "script/noop", "--limit", "1",
        "--cap", "1", "--no-cache", "--out-a", str(t / "a"), "--out-b", str(t / "b"),
        "-M", f"extra_body={json.dumps({k: v})}"],
}
PATHS = {"-M": "{k}", "-M extra_body": "extra_body.{k}", "-M options": "options.{k}",
         "-M extra_body.generationConfig": "extra_body.generationConfig.{k}",
         "--model-args json": "{k}", "--model-args yaml extra_body.options":
         "extra_body.options.{k}", "sequential -M extra_body": "extra_body.{k}"}


NESTINGS = {"{k}": lambda k, v: {k: v}, "extra_body.{k}": lambda k, v: {"extra_body": {k: v}},
            "options.{k}": lambda k, v: {"options": {k: v}},
            "extra_body.generationConfig.{k}": lambda k, v: {
                "extra_body": {"generationConfig": {k: v}}},
            "extra_body.options.{k}": lambda k, v: {"extra_body": {"options": {k: v}}}}
"""Every nesting the doors reach the check with (``PATHS``' values)."""


@pytest.mark.parametrize("nesting", sorted(NESTINGS))
@pytest.mark.parametrize("key", sorted(OWNED))
def test_the_check_refuses_each_owned_key_at_each_nesting(key: str, nesting: str) -> None:
    args = NESTINGS[nesting](key, VALUE.get(key, 1))
    pairs = [f"{k}={json.dumps(v)}" for k, v in args.items()]
    with pytest.raises(UserError) as e:
        parse_model_args(pairs)
    line = str(e.value)
    assert "\n" not in line and line.startswith("model argument ") and "harness owns" in line
    assert repr(nesting.format(k=key)) in line


def test_every_door_path_is_a_nesting_the_check_is_tested_at() -> None:
    assert set(PATHS.values()) <= set(NESTINGS)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_each_door_refuses_an_owned_key(tmp_path: Path, door: str) -> None:
    key = "temperature"
    argv = DOORS[door](key, VALUE[key], tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run_inproc(*argv)
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("butterfly: error: model argument "), lines
    assert repr(PATHS[door].format(k=key)) in lines[0] and "harness owns" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no run directory, no lock


def test_the_python_api_refuses_them_too(tmp_path: Path) -> None:
    for args in ({"temperature": 1}, {"extra_body": {"seed": 1}},
                 {"extra_body": {"options": {"num_predict": 5}}}):
        with pytest.raises(UserError, match="harness owns"):
            butterfly.run(model="script/oracle", limit=1, out=tmp_path / "x", cache=None,
                          model_args=args)
    assert not (tmp_path / "x").exists()


def test_the_finding_reaches_neither_transport(tmp_path: Path) -> None:
    """The issue's ``extra_body``: another model, temperature, seed, limit and messages."""
    finding = json.dumps({"model": "other-model", "temperature": 1.5, "seed": 7,
                          "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    for via in ("auto", "litellm"):
        with FakeServer() as srv:
            r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base,
                           "--via", via, "--limit", "1", "--no-cache", "--out",
                           str(tmp_path / via), "-M", f"extra_body={finding}")
            assert srv.count == 0
        assert r.returncode == 1 and "'extra_body.model'" in r.stderr, r.stderr
        assert not (tmp_path / via).exists()


def test_arguments_the_harness_does_not_own_still_pass(tmp_path: Path) -> None:
    got = parse_model_args(['extra_body={"chat_template_kwargs": {"enable_thinking": false},'
                            ' "options": {"top_k": 3}}', "reasoning_effort=low",
                            'options={"mirostat": 1}'])
    assert got["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False},
                                 "options": {"top_k": 3}}
    # a free-form mapping that is not a provider's options may use any names
    assert parse_model_args(['metadata={"model": "tag"}']) == {"metadata": {"model": "tag"}}
