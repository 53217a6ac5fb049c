"""``butterfly run --dry-run``: it sends exactly the calls the run would, counts their tokens with
the model's tokenizer, and writes nothing."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_in_process
from fakeserver import FakeServer

from butterfly import api
from butterfly.core.prompts import messages
from butterfly.models.tokens import PER_CALL, PER_MESSAGE, counter_for
from butterfly.runs.dryrun import DryRun
from butterfly.suite.load import load_suite
from oracle import replay

SUITE = ROOT / "scenarios" / "butterfly-40.jsonl"

SHAPES: list[dict[str, Any]] = [
    {"limit": 6},
    {"limit": 6, "mode": "restate"},
    {"limit": 3, "layouts": "E,Q,H", "repeats": 2},
    {"limit": 3, "strategy": "self-consistency", "samples": 3, "temperature": 0.7},
    {"limit": 3, "strategy": "cot", "protocol": "json-last", "layouts": "H"},
    {"limit": 3, "strategy": "few-shot", "protocol": "schema"},
    {"per_category": 1, "limit": 5},
    {"limit": 6, "shard": "2/3"},
    {"suite": "butterfly-long", "limit": 2, "mode": "restate"},
    {"suite": "butterfly-code", "limit": 2},
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_the_dry_run_makes_as_many_calls_as_the_run(tmp_path: Path, shape: dict[str, Any]) -> None:
    agent = "script/oracle" if shape.get("suite") == "butterfly-code" else "script/last-edit"
    played = api.run(model=agent, out=tmp_path / "run", cache=None, **shape)
    dry = api.dry_run(model=agent, out=tmp_path / "dry", **shape)
    assert dry.total.calls == played.manifest.n_calls > 0
    assert sum(b.calls for b in dry.slices) == dry.total.calls
    assert not (tmp_path / "dry").exists()


def test_a_partly_played_run_is_priced_as_its_resume(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("BUTTERFLY_BACKOFF_BASE", "0.01")
    out = tmp_path / "run"
    flags: dict[str, Any] = {"model": "openai/fake", "out": out, "limit": 4, "cache": None,
                             "retries": 0}
    answer = json.dumps(load_suite(SUITE)[0].initial)
    with FakeServer(lambda body: answer, faults=lambda i: "500" if i % 7 == 3 else None) as srv:
        first = api.run(api_base=srv.api_base, **flags)
    assert first.manifest.status == "incomplete"
    with FakeServer(lambda body: answer) as srv:
        dry = api.dry_run(api_base=srv.api_base, **flags)
        assert srv.count == 0
        api.run(api_base=srv.api_base, **flags)
        assert dry.total.calls == srv.count > 0
    assert dry.recorded == first.manifest.n_calls


@pytest.mark.parametrize("mode", ["restate", "chat"])
def test_prompt_tokens_are_tiktokens_of_the_messages_plus_the_template(tmp_path: Path,
                                                                       mode: str) -> None:
    import tiktoken

    from butterfly.models.tokens import TOKENIZER_DIR

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(TOKENIZER_DIR))
        enc = tiktoken.get_encoding("o200k_base")
    dry = api.dry_run(model="openai/gpt-4o-mini", limit=3, mode=mode, out=tmp_path / "d")
    want = 0
    for s in load_suite(SUITE)[:3]:
        answers = [json.dumps(spec) for spec in replay(s)[1:]]  # the oracle's, as sent back
        for t in range(1, len(s.turns) + 1):
            msgs = messages(s, t, answers[: t - 1], mode=mode)
            want += sum(len(enc.encode(m["content"])) + PER_MESSAGE for m in msgs) + PER_CALL
    assert dry.total.prompt_tokens == want
    assert dry.tokenizer.startswith("o200k_base") and dry.tokenizer_exact


def test_chat_mode_counts_the_answers_it_sends_back(tmp_path: Path) -> None:
    chat = api.dry_run(model="openai/gpt-4o-mini", limit=4, out=tmp_path / "a")
    restate = api.dry_run(model="openai/gpt-4o-mini", limit=4, mode="restate",
                          out=tmp_path / "b")
    assert chat.total.calls == restate.total.calls
    assert chat.total.completion_tokens == restate.total.completion_tokens > 0
    assert chat.total.cached_tokens is not None and chat.total.cached_tokens > 0
    assert 0 < chat.total.cached_tokens <= chat.total.prompt_tokens


def test_the_cost_is_the_models_rates_or_none(tmp_path: Path) -> None:
    priced = api.dry_run(model="openai/gpt-4o-mini", limit=2, out=tmp_path / "a")
    rates = priced.rates_usd_per_mtok
    assert rates is not None
    t = priced.total
    assert t.cached_tokens is not None and t.cost_usd is not None
    want = ((t.prompt_tokens - t.cached_tokens) * rates[0] + t.cached_tokens * rates[2]
            + t.completion_tokens * rates[1]) / 1e6
    assert t.cost_usd == pytest.approx(want, rel=1e-6)
    unpriced = api.dry_run(model="hosted_vllm/my-model", limit=2, out=tmp_path / "b")
    assert unpriced.total.cost_usd is None and unpriced.rates_usd_per_mtok is None
    assert not unpriced.tokenizer_exact and "estimate" in unpriced.tokenizer
    # the user's price (run --price / --price-per-mtok) prices it, and wins over the map's
    mine = api.dry_run(model="hosted_vllm/my-model", limit=2, out=tmp_path / "c",
                       price_per_mtok="2,8")
    assert mine.rates_usd_per_mtok == pytest.approx((2, 8, 2))
    m = mine.total
    assert m.cost_usd == pytest.approx((m.prompt_tokens * 2 + m.completion_tokens * 8) / 1e6)
    over = api.dry_run(model="openai/gpt-4o-mini", limit=2, out=tmp_path / "d",
                       price_per_mtok="1,1,1")
    assert over.rates_usd_per_mtok == pytest.approx((1, 1, 1))


def test_slices_are_lengths_for_a_suite_built_by_length(tmp_path: Path) -> None:
    long = api.dry_run(model="script/oracle", suite="butterfly-long", per_category=3,
                       out=tmp_path / "a")
    assert long.sliced_by == "length"
    by_cat = api.dry_run(model="script/oracle", per_category=1, out=tmp_path / "b")
    assert by_cat.sliced_by == "category"
    assert len(by_cat.slices) == len({s.category for s in load_suite(SUITE)})


def test_the_text_and_the_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli_in_process(capsys, "run", "--model", "hosted_vllm/x", "--limit", "2",
                                  "--dry-run", "--out", str(tmp_path / "d"))
    assert code == 0
    assert "no price known for hosted_vllm/x" in out and "total" in out
    assert "cl100k_base as an estimate" in out
    assert "--max-cost" not in out
    code, out, _ = cli_in_process(capsys, "run", "--model", "openai/gpt-4o-mini", "--limit", "2",
                                  "--dry-run", "--max-cost", "0.0001", "--out", str(tmp_path / "d"))
    assert code == 0 and "is above it; the run would stop" in out
    code, out, _ = cli_in_process(capsys, "run", "--model", "openai/gpt-4o", "--limit", "2",
                                  "--dry-run", "--json", "--out", str(tmp_path / "d"))
    assert code == 0
    parsed = DryRun.model_validate_json(out)
    assert parsed.total.calls == sum(b.calls for b in parsed.slices)
    assert not (tmp_path / "d").exists()


def test_refusals(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli_in_process(capsys, "run", "--model", "script/oracle", "--json")
    assert code == 1 and "--json goes with --dry-run" in err
    code, _, err = cli_in_process(capsys, "run", "--model", "gpt4", "--dry-run")
    assert code == 1 and "name a provider and a model" in err
    api.run(model="script/noop", limit=1, out=tmp_path / "r", cache=None)
    code, _, err = cli_in_process(capsys, "run", "--model", "script/oracle", "--limit", "1",
                                  "--dry-run", "--out", str(tmp_path / "r"))
    assert code == 1 and "holds a run of script/noop" in err


def test_a_dry_run_never_imports_litellm(tmp_path: Path) -> None:
    """A dry run of each provider's model, one after another in one new interpreter, litellm
    not imported after any of them."""
    probe = ("import json, runpy, sys\n"
             "models, rest = json.loads(sys.argv[1]), sys.argv[2:]\n"
             "for model in models:\n"
             "    sys.argv = ['butterfly', 'run', '--model', model, *rest]\n"
             "    try:\n"
             "        runpy.run_module('butterfly.cli', run_name='__main__')\n"
             "    except SystemExit as e:\n"
             "        assert not e.code, (model, e.code)\n"
             "    assert 'litellm' not in sys.modules, f'{model}: litellm was imported'\n")
    models = ["anthropic/claude-sonnet-4-5", "openai/gpt-4o-mini", "gemini/gemini-2.0-flash"]
    r = subprocess.run([sys.executable, "-c", probe, json.dumps(models), "--limit", "1",
                        "--dry-run", "--out", str(tmp_path / "d")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert all(f"dry run: {model} on" in r.stdout for model in models), r.stdout


def test_known_tokenizers() -> None:
    assert counter_for("openai/gpt-4o-mini").name == "o200k_base"
    assert counter_for("openai/gpt-4-turbo").name == "cl100k_base"
    assert counter_for("anthropic/claude-3-5-haiku-latest").name == "anthropic"
    assert counter_for("deepseek/deepseek-chat").name == "deepseek"
    assert not counter_for("ollama_chat/qwen2.5:7b").exact


def _one_chain(tmp_path: Path, turns: int) -> Path:
    """A suite of one horizon chain cut to ``turns`` turns (its manifest allows asking it)."""
    from butterfly.suite.load import resolve_suite

    horizon = resolve_suite("butterfly-horizon")
    chain = load_suite(horizon)[0]
    cut = chain.model_copy(update={"turns": chain.turns[:turns]})
    path = tmp_path / "chain.jsonl"
    path.write_text(cut.to_json() + "\n")
    manifest = json.loads(horizon.with_name("butterfly-horizon.manifest.json").read_text())
    manifest.update(name="chain", file=str(path), n_scenarios=1, lengths={str(turns): 1},
                    ask_at=[10, turns])
    path.with_name("chain.manifest.json").write_text(json.dumps(manifest))
    return path


def test_a_long_chain_asked_at_every_turn_is_counted_in_linear_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: the dry run of one 5,000-turn horizon chain asked at every turn took 1 min 46
    s, encoding every restated prompt whole (230 million tokens) and comparing token lists of
    each pair. Each prompt is now counted from the one before it: the characters the tokenizer
    sees grow with the chain, not with the sum of its prompts; and the figures are those of
    encoding every prompt whole (``NEAR = 0`` turns the counting from a recent prompt off)."""
    from butterfly.api import running
    from butterfly.models import tokens

    suite = _one_chain(tmp_path, 300)
    real = counter_for("openai/gpt-4o-mini")
    seen: list[int] = []

    def encode(text: str) -> list[int]:
        seen.append(len(text))
        return real.encode(text)

    monkeypatch.setattr(running, "counter_for",
                        lambda model: dataclasses.replace(real, encode=encode))
    flags: dict[str, Any] = {"model": "openai/gpt-4o-mini", "suite": str(suite),
                             "mode": "restate", "ask_at": "all", "out": tmp_path / "d"}
    fast = api.dry_run(**flags)
    sent = sum(len(m["content"]) for t in range(1, 301)
               for m in messages(load_suite(suite)[0], t, [], mode="restate"))
    assert fast.total.calls == 300
    assert sum(seen) < sent / 5, (sum(seen), sent)
    assert max(seen[len(seen) // 2:]) < 3000  # a few hundred characters a call, at any length
    monkeypatch.setattr(tokens, "NEAR", 0)
    whole = api.dry_run(**flags)
    assert whole.total == fast.total and sum(seen) > sent


def test_the_dry_run_says_how_many_prompts_exceed_the_context_window(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 34: the chat-mode dry run of butterfly-horizon priced 31.9 billion prompt tokens
    without saying no model's context holds them. The window is litellm's map's
    max_input_tokens (read without importing litellm)."""
    suite = _one_chain(tmp_path, 2500)
    chat = api.dry_run(model="openai/gpt-4o-mini", suite=str(suite), out=tmp_path / "d")
    assert chat.context_window == 128_000
    assert 0 < chat.calls_over_window < chat.total.calls
    assert chat.largest_prompt_tokens > 128_000
    code, out, _ = cli_in_process(capsys, "run", "--model", "openai/gpt-4o-mini", "--suite",
                                  str(suite), "--dry-run", "--out", str(tmp_path / "d"))
    assert code == 0
    assert (f"context window: {chat.calls_over_window:,} of 2,500 calls have prompts over the "
            "model's 128,000 tokens") in out and "the run would stop at the first" in out
    asked = api.dry_run(model="openai/gpt-4o-mini", suite=str(suite), mode="restate",
                        out=tmp_path / "d")
    assert asked.calls_over_window == 0 and asked.ask_at == [10, 2500]
    unknown = api.dry_run(model="hosted_vllm/x", limit=1, out=tmp_path / "d")
    assert unknown.context_window is None and unknown.calls_over_window == 0
