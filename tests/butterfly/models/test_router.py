"""``--router FILE``: litellm's Router over replicas. Two loopback servers, a dead one (it
drops every connection, and counts them) and a closed port: calls spread over the live ones,
the dead ones are cooled down, nothing is lost, and the score is a single server's. The file
is checked before anything is created; no key reaches a file; the cache keys a router group
apart from any single server; a resume may change the replicas, never the model they serve.
Shards on two servers merge into one run's numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, same_answers
from fakeserver import EchoKeyServer, FakeServer

import butterfly
from butterfly.analysis.scoring import score_run
from butterfly.core.prompts import messages
from butterfly.core.wire import Request
from butterfly.errors import UserError
from butterfly.models.answer_cache import cache_key
from butterfly.models.registry import router_config
from butterfly.models.router import load_router
from butterfly.runs.merge import merge
from butterfly.suite.load import load_suite
from oracle import replay

LIMIT = 10
SCENARIOS = load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")[:LIMIT]
N_CALLS = sum(len(s.turns) for s in SCENARIOS)
KEY = "sk-router-SECRET-0123456789"
ENV_KEY = "sk-env-SECRET-9876543210"
SETTINGS = {"routing_strategy": "simple-shuffle", "cooldown_time": 5, "allowed_fails": 0,
            "num_retries": 3, "retry_after": 0}
COMMON: dict[str, Any] = {"suite": "butterfly-40", "limit": LIMIT, "concurrency": 3,
                          "retries": 1, "timeout": 10}


def _responder() -> Any:
    """The oracle's answers, except every third scenario stays at its initial spec: one
    deterministic answer per prompt, whichever replica is asked."""
    table: dict[tuple[str, ...], str] = {}
    for n, s in enumerate(SCENARIOS):
        specs = replay(s)
        answers = [json.dumps(specs[0] if n % 3 == 2 else x) for x in specs[1:]]
        for t in range(1, len(s.turns) + 1):
            users = tuple(m["content"] for m in messages(s, t, answers[: t - 1])
                          if m["role"] == "user")
            table[users] = answers[t - 1]
    return lambda body: table[tuple(m["content"] for m in body["messages"]
                                    if m["role"] == "user")]


def _deployment(api_base: str, key: str = KEY, model: str = "openai/fake") -> dict[str, Any]:
    return {"model_name": "grp", "litellm_params": {"model": model, "api_base": api_base,
                                                    "api_key": key}}


def _router_file(path: Path, *bases: str, model: str = "openai/fake") -> Path:
    deployments = [_deployment(b, KEY if i % 2 == 0 else "os.environ/BFLY_ROUTER_TEST_KEY",
                               model) for i, b in enumerate(bases)]
    path.write_text(json.dumps({"model_list": deployments, "router_settings": SETTINGS}))
    return path


def _closed_port() -> int:
    """A loopback port nothing listens on (connection refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[tuple[FakeServer, FakeServer, FakeServer]]:
    monkeypatch.setenv("BFLY_ROUTER_TEST_KEY", ENV_KEY)
    with FakeServer(_responder()) as a, FakeServer(_responder()) as b, FakeServer(
            faults=lambda i: "drop", raise_on_error=False) as dead:
        yield a, b, dead


def _score(out: Path) -> dict[str, Any]:
    report = same_answers(score_run(out).to_json())
    report.pop("model")
    return report


def test_calls_spread_over_live_replicas_and_the_dead_one_is_cooled_down(
        servers: tuple[FakeServer, FakeServer, FakeServer], tmp_path: Path) -> None:
    a, b, dead = servers
    file = _router_file(tmp_path / "router.json", a.api_base, dead.api_base, b.api_base,
                        f"http://127.0.0.1:{_closed_port()}/v1")
    routed = butterfly.run(model="grp", router=file, out=tmp_path / "routed",
                           cache=str(tmp_path / "cache.sqlite"), **COMMON)
    sent = sum(1 for r in routed.records.values() if not r.cached)  # a prompt seen twice
    assert a.count > 0 and b.count > 0 and a.count + b.count == sent >= N_CALLS - 2
    assert dead.count <= 6, dead.count  # cooled down after its first failures (a quarter: 10)
    m = routed.manifest
    assert m.status == "complete" and m.n_calls == N_CALLS and m.n_provider_errors == 0
    assert m.params.router is not None and m.params.router.models == ("openai/fake",)
    assert len(m.params.router.deployments) == 4
    assert m.transports == ("litellm",)  # whatever --via says: the Router is litellm's
    for name in ("manifest.json", "calls.jsonl"):
        text = (tmp_path / "routed" / name).read_text()
        assert KEY not in text and ENV_KEY not in text and "api_key" not in text
    single = butterfly.run(model="openai/fake", api_base=a.api_base, out=tmp_path / "single",
                           cache=None, **{**COMMON, "concurrency": 1})
    assert _score(tmp_path / "routed") == _score(single.path)
    assert all(r.cost_usd is None for r in routed.records.values())  # unpriced, as one server
    before = a.count + b.count
    butterfly.run(model="grp", router=file, out=tmp_path / "again",
                  cache=str(tmp_path / "cache.sqlite"), **COMMON)
    assert a.count + b.count == before  # the group's answers came from the cache


def test_a_resume_may_change_the_replicas_never_the_model(
        servers: tuple[FakeServer, FakeServer, FakeServer], tmp_path: Path) -> None:
    a, b, _ = servers
    out = tmp_path / "run"
    butterfly.run(model="grp", router=_router_file(tmp_path / "r1.json", a.api_base), out=out,
                  cache=None, **COMMON)
    moved = _router_file(tmp_path / "r2.json", b.api_base)
    assert butterfly.run(model="grp", router=moved, out=out, cache=None,
                         **COMMON).manifest.params.router.path == str(moved)  # type: ignore
    other = _router_file(tmp_path / "r3.json", b.api_base, model="openai/other")
    with pytest.raises(UserError, match="never the model they serve"):
        butterfly.run(model="grp", router=other, out=out, cache=None, **COMMON)


def test_shards_on_two_servers_merge_into_one_run(
        servers: tuple[FakeServer, FakeServer, FakeServer], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, _ = servers
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    one = {**COMMON, "model": "openai/fake", "cache": None}
    butterfly.run(**one, api_base=a.api_base, shard="1/2", out=tmp_path / "s1")
    butterfly.run(**one, api_base=b.api_base, shard="2/2", out=tmp_path / "s2")
    butterfly.run(**one, api_base=a.api_base, out=tmp_path / "whole")
    assert 0 < a.count - N_CALLS < N_CALLS and 0 < b.count < N_CALLS
    merge([tmp_path / "s2", tmp_path / "s1"], tmp_path / "merged")
    assert _score(tmp_path / "merged") == _score(tmp_path / "whole")


def _refused(tmp_path: Path, content: str, match: str, name: str = "r.json",
             model: str = "grp") -> None:
    file = tmp_path / name
    file.write_text(content)
    with pytest.raises(UserError, match=match):
        butterfly.run(model=model, router=file, out=tmp_path / "never", cache=None, **COMMON)
    assert not (tmp_path / "never").exists()


def test_a_bad_router_file_is_one_line_before_anything_is_created(tmp_path: Path) -> None:
    good = json.dumps({"model_list": [_deployment("http://127.0.0.1:9/v1")]})
    _refused(tmp_path, "{not json", "not valid JSON")
    _refused(tmp_path, "model_list: [\n", "not valid YAML", name="r.yaml")
    _refused(tmp_path, "[]", "one mapping with a model_list")
    _refused(tmp_path, json.dumps({"router_settings": {}}), "no model_list")
    _refused(tmp_path, json.dumps({"model_list": [{"model_name": "grp"}]}),
             "entry 1 .* has no litellm_params.model")
    _refused(tmp_path, json.dumps({"model_list": [_deployment("x")], "general_settings": {}}),
             "unknown key")
    _refused(tmp_path, good, r"no deployment named 'gpt'.*this file has: grp", model="gpt")
    _refused(tmp_path, json.dumps({"model_list": [_deployment("x")],
                                   "router_settings": {"cooldown_tme": 1}}),
             "cooldown_tme is not litellm.Router")
    (tmp_path / "ok.json").write_text(good)
    with pytest.raises(UserError, match="--router or --api-base, not both"):
        butterfly.run(model="grp", router=tmp_path / "ok.json", api_base="http://x/v1",
                      out=tmp_path / "never", cache=None, **COMMON)
    with pytest.raises(UserError, match="cannot read"):
        load_router(tmp_path / "missing.json", "grp")


def test_the_fingerprint_has_no_secret_and_the_cache_keys_the_group(tmp_path: Path) -> None:
    yaml_file = tmp_path / "r.yaml"
    yaml_file.write_text("model_list:\n  - model_name: grp\n    litellm_params:\n"
                         "      model: openai/fake\n      api_base: http://u:pw@h:1/v1\n"
                         f"      api_key: {KEY}\nrouter_settings:\n  num_retries: 2\n")
    config = router_config(yaml_file, "grp")
    other_key = load_router(_router_file(tmp_path / "k.json", "http://h:1/v1"), "grp")
    assert config.served() == (("openai/fake", "http://h:1/v1"),)  # credentials cut
    assert KEY in config.secrets() and "pw" not in config.identity()
    assert config.fingerprint() != other_key.fingerprint()  # settings differ, keys do not count
    same = tmp_path / "same.yaml"
    same.write_text(yaml_file.read_text().replace(KEY, "sk-another-key-000000"))
    assert load_router(same, "grp").fingerprint() == config.fingerprint()
    request = Request(model="grp", messages=({"role": "user", "content": "x"},),
                      temperature=0.0, max_tokens=8, seed=0)
    assert cache_key(request, config.identity()) != cache_key(request, "http://h:1/v1")


def test_when_every_replica_fails_the_run_is_incomplete_and_no_key_leaks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SETTINGS, "cooldown_time", 1)
    monkeypatch.setenv("BUTTERFLY_BACKOFF_BASE", "0.01")
    monkeypatch.setenv("BFLY_ROUTER_TEST_KEY", ENV_KEY)
    with FakeServer(faults=lambda i: "drop", raise_on_error=False) as d, FakeServer(
            faults=lambda i: "500", raise_on_error=False) as e:
        file = _router_file(tmp_path / "r.json", d.api_base, e.api_base)
        run = butterfly.run(model="grp", router=file, out=tmp_path / "o", cache=None,
                            **{**COMMON, "limit": 2})
    assert run.manifest.status == "incomplete" and run.manifest.n_calls == 0
    errors = [r.error for r in run.records.values() if r.error is not None]
    assert errors and {x.kind for x in errors} <= {"rate_limit", "connection", "server"}
    assert any("cooldown" in x.message for x in errors)  # the Router gave up: we retried
    for name in ("manifest.json", "calls.jsonl"):
        text = (tmp_path / "o" / name).read_text()
        assert KEY not in text and ENV_KEY not in text


def test_a_refused_key_fails_the_run_with_the_key_redacted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BFLY_ROUTER_TEST_KEY", ENV_KEY)
    with EchoKeyServer(401) as srv:
        file = _router_file(tmp_path / "r.json", srv.api_base, srv.api_base)
        with pytest.raises(butterfly.errors.RunFailed) as info:
            butterfly.run(model="grp", router=file, out=tmp_path / "o", cache=None, **COMMON)
    manifest = (tmp_path / "o" / "manifest.json").read_text()
    assert '"status": "failed"' in manifest and "Incorrect API key" in manifest
    for text in (manifest, str(info.value)):
        assert KEY not in text and ENV_KEY not in text


def test_a_cancel_that_comes_as_a_call_fails_is_not_lost() -> None:
    """A Router fails fast (every replica cooling down) and Python 3.11's ``wait_for`` then
    returns the failure instead of the cancel: the client must still stop, not retry."""
    import asyncio

    from butterfly.core.wire import ProviderError, Response
    from butterfly.models.client import ModelClient

    calls = []
    outer: dict[str, asyncio.Task[None]] = {}

    class FailsAsTheCancelComes:
        async def __call__(self, request: Request, timeout: float) -> Response:
            calls.append(1)
            asyncio.get_running_loop().call_soon(outer["task"].cancel)
            raise ProviderError("rate_limit", "every deployment is cooling down", 30.0)

        async def aclose(self) -> None:
            return None

    async def no_wait(_: float) -> None:
        await asyncio.sleep(0)

    client = ModelClient(FailsAsTheCancelComes(), retries=3, sleep=no_wait)
    request = Request(model="grp", messages=({"role": "user", "content": "x"},),
                      temperature=0.0, max_tokens=8, seed=0)

    async def main() -> None:
        await client.call(request)

    async def started() -> None:
        outer["task"] = asyncio.create_task(main())
        await outer["task"]

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(started())
    assert calls == [1]


def test_the_cli_takes_router_and_refuses_in_one_line(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    from butterfly.cli import main

    file = tmp_path / "r.yaml"
    file.write_text("model_list:\n  - model_name: qwen\n    litellm_params: {model: openai/q}\n")
    assert main(["run", "--router", str(file), "--model", "grp", "--out",
                 str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no deployment named 'grp'" in err and "qwen" in err
    assert not (tmp_path / "x").exists()


def test_a_routed_call_is_priced_as_one_server_prices_it(tmp_path: Path) -> None:
    """litellm.Router registers each deployment's model in litellm's price map without prices
    (litellm would then price an unpriced model at $0): unpriced stays unpriced, a priced model
    keeps its price, Ollama its 0."""
    import asyncio

    from butterfly.models.litellm_seam import RouterProvider, shipped_rates

    request = Request(model="g", messages=({"role": "user", "content": "x"},),
                      temperature=0.0, max_tokens=8, seed=0)
    costs = {}
    with FakeServer(lambda body: "ok") as srv:
        for model in ("openai/fake-unpriced", "openai/gpt-4o-mini"):
            file = tmp_path / f"{model.replace('/', '_')}.json"
            file.write_text(json.dumps({"model_list": [
                {"model_name": "g", "litellm_params": {"model": model, "api_base": srv.api_base,
                                                       "api_key": "sk-x"}}]}))
            costs[model] = asyncio.run(RouterProvider(load_router(file, "g"))(request, 10)
                                       ).cost_usd
    assert costs["openai/fake-unpriced"] is None and (costs["openai/gpt-4o-mini"] or 0) > 0
    file = tmp_path / "ollama.json"
    file.write_text(json.dumps({"model_list": [{"model_name": "g", "litellm_params": {
        "model": "ollama_chat/qwen2.5:7b"}}]}))
    RouterProvider(load_router(file, "g"))
    for model, cost in (("ollama_chat/qwen2.5:7b", 0.0),  # litellm prices Ollama at 0
                        ("openai/fake-unpriced", None)):
        shipped = shipped_rates(model)
        assert (None if shipped is None else shipped.usd(1000, 100)) == cost
