"""The same numbers in both harnesses (issues 26 and 35): a suite slice played by ``butterfly
run`` and by ``inspect eval`` with the same answers gives equal per-conversation verdicts, equal
raw answers, message lists and seeds, and equal suite-level figures: in chat and restate mode,
at chosen ask points, under self-consistency (its vote in the next turn's history), with the
response-size cap, over the context window, on both tracks.

The answers come from our scripted agents (``script/NAME`` in butterfly,
``butterfly/script/NAME`` in inspect) and from inspect's ``mockllm`` answering as a fake server
answered ``butterfly run`` (replaying its answers, or by the same function). inspect runs in
this process, offline, without a display, its logs in ``tmp_path``; tiktoken is made to fail, so
nothing counts tokens by downloading an encoding (item 5).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import same_answers
from fakeserver import FakeServer

from butterfly.analysis.scoring import score_run
from butterfly.api.running import run as butterfly_run
from butterfly.core.metric_registry import METRICS as REGISTRY
from butterfly.core.scores import RunScore
from butterfly.engine.conversation import SAMPLE_SEED_STRIDE
from butterfly.errors import UserError
from butterfly.runs.calls import iter_records

if TYPE_CHECKING:  # inspect is imported by the tests that run, not when the file is collected
    from inspect_ai.log import EvalLog
    from inspect_ai.model import ChatMessage, ModelOutput


@pytest.fixture(autouse=True, scope="module")
def _put_back() -> Iterator[None]:
    """inspect's first eval sets the root logger's level and adds its handler to it; importing
    butterflybench sets ``TIKTOKEN_CACHE_DIR`` (docs/inspect.md, "Offline"): all are put back
    when this module ends, so no later test in the process depends on them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    cache = os.environ.get("TIKTOKEN_CACHE_DIR")
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    if cache is None:
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
    else:
        os.environ["TIKTOKEN_CACHE_DIR"] = cache


@pytest.fixture(autouse=True)
def _no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any use of tiktoken fails the sample that made it (and so the test)."""
    import tiktoken

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("tiktoken was asked for an encoding")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    monkeypatch.setattr(tiktoken, "encoding_for_model", refuse)
    yield


def task(name: str, **args: Any) -> Any:
    """The task ``name`` of butterflybench.tasks with ``args`` (imported on first use)."""
    return getattr(importlib.import_module("butterflybench.tasks"), name)(**args)


def evaluate(played: Any, model: Any, tmp: Path, **kw: Any) -> EvalLog:
    """The eval's log as read back from its file (long texts resolved from attachments)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    ran = inspect_eval(played, model=model, log_dir=str(tmp / "logs"), display="none", **kw)[0]
    log = read_eval_log(ran.location, resolve_attachments=True)
    assert log.status == "success", log.error
    assert log.samples is not None and not [s.error for s in log.samples if s.error]
    return log


def play(tmp: Path, model: str, name: str, **opts: Any) -> RunScore:
    run = butterfly_run(model=model, out=tmp / name, cache=None, **opts)
    assert run.manifest.status == "complete"
    return score_run(run)


def inspect_verdicts(log: EvalLog) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    out = {}
    for s in log.samples or []:
        m = s.scores["butterfly_scorer"].metadata or {}
        assert s.id == f"{m['scenario']}/{m['layout']}" and s.epoch == m["repeat"] + 1
        out[m["scenario"], m["layout"], m["repeat"]] = (
            m["final_match"], m["first_divergent"], m["change_radius"], m["wobble"],
            m["abstentions"])
    return out


def butterfly_verdicts(score: RunScore) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {(c.id, c.layout, c.repeat): (c.final_match, c.first_divergent_turn,
                                         c.change_radius, c.wobble, c.abstentions)
            for c in score.scenarios}


def same_figures(log: EvalLog, score: RunScore, *, same_usage: bool = True) -> None:
    """Every inspect metric is the figure of the same name in ``score --json`` (an efficiency
    figure: in its ``efficiency``; latency: known in both or in neither, each harness timing its
    own calls; ``same_usage`` false: the harnesses' servers reported other usage, so the other
    efficiency figures are only known in both or in neither); they are the registry's metrics
    but its histogram, effective final match and the efficiency figures."""
    from butterflybench.metrics import EFFICIENCY

    assert log.results is not None
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    want = score.to_json()
    spent = want["efficiency"]
    timed = {"latency_median_s", "latency_p95_s"}  # each harness's own clock
    for name, got in metrics.items():
        if name in timed or (name in EFFICIENCY and not same_usage):
            assert (spent[name] is None) == math.isnan(got), name
            continue
        value = spent[name] if name in EFFICIENCY else want[name]
        assert (value is None and math.isnan(got)) or got == pytest.approx(value), name
    assert set(REGISTRY) - set(metrics) == {"first_divergent_turn"}
    assert set(metrics) - set(REGISTRY) == {"effective_final_match", *EFFICIENCY}


def sha256_of(messages: list[ChatMessage]) -> str:
    plain = [{"role": m.role, "content": m.text} for m in messages]
    return hashlib.sha256(json.dumps(plain, ensure_ascii=False).encode("utf-8")).hexdigest()


def same_calls(log: EvalLog, run_dir: Path) -> None:
    """Every call sent the same messages and got the same raw answer in both harnesses, each
    sample of a turn with its own seed (``seed + repeat + sample x stride``, as butterfly's
    engine seeds it)."""
    want = {(r.scenario, r.turn, r.layout, r.repeat, r.sample): (r.messages_sha256, r.raw)
            for _, _, r in iter_records(run_dir / "calls.jsonl")}
    seed = log.eval.metadata["butterfly"]["seed"]
    got = {}
    for s in log.samples or []:
        m = s.metadata
        stored = {(e["turn"], e["sample"]): e for e in s.store["butterfly_turns"]}
        events = [e for e in s.events if e.event == "model"]
        assert len(events) == len(stored)
        for event in events:
            tag = event.input[-1].metadata["butterfly"]
            k, repeat = tag.get("sample", 0), s.epoch - 1
            rec = stored[tag["turn"], k]
            assert rec["messages_sent"] == len(event.input)
            assert tag["seed"] == event.config.seed == seed + repeat + k * SAMPLE_SEED_STRIDE
            got[m["scenario"], tag["turn"], m["layout"], repeat, k] = (sha256_of(event.input),
                                                                       rec["raw"])
    assert got == want


@pytest.mark.parametrize(("agent", "layouts", "epochs"),
                         [("lifo", "E,H", 1), ("noisy:p=0.3", "E", 2)])
def test_a_scripted_agent_scores_alike_in_both_harnesses(tmp_path: Path, agent: str,
                                                         layouts: str, epochs: int) -> None:
    score = play(tmp_path, f"script/{agent}", "run", per_category=1, layouts=layouts,
                 repeats=epochs)
    log = evaluate(task("butterfly_40", per_category=1, layouts=layouts),
                   f"butterfly/script/{agent}", tmp_path, epochs=epochs)
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    assert len(log.samples or []) == score.n_conversations
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    assert score.final_match is not None and score.final_match < 1  # a test that can fail
    same_after_import(log, tmp_path, score)


@pytest.mark.parametrize("given", [
    {"strategy": "few-shot", "layouts": "Q", "protocol": "json-first", "parse": "strict"},
    {"strategy": "cot", "layouts": "H", "protocol": "json-last"},
    {"strategy": "adaptive-cot", "protocol": "json-last", "parse": "lenient", "mode": "restate"},
    {"protocol": "schema"},
], ids=["few-shot-Q-json-first-strict", "cot-H-json-last", "restate-adaptive-cot-lenient",
        "schema"])
def test_the_prompts_a_task_offers_are_the_clis(tmp_path: Path, given: dict[str, str]) -> None:
    """Strategies, protocols (the schema's response format too), parse modes and layouts: the
    same messages, answers, verdicts and figures as ``butterfly run``'s (the parity table of
    docs/design.md names this test for them)."""
    score = play(tmp_path, "script/noisy:p=0.3", "run", limit=4, **given)
    log = evaluate(task("butterfly_40", limit=4, **given), "butterfly/script/noisy:p=0.3",
                   tmp_path)
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    assert score.final_matches < score.n_conversations  # a test that can fail


SPENT = ("cost_usd", "tokens", "reasoning_tokens")
"""What a conversation's verdict says it cost (``score --json``'s ``scenarios``)."""


def same_after_import(log: EvalLog, tmp: Path, score: RunScore,
                      but: tuple[str, ...] = ()) -> None:
    """Logs both ways: the eval's log, imported by ``butterfly import-inspect``, is a run that
    scores exactly as the run ``butterfly run`` made (every figure of ``score --json`` but the
    run's path, and ``but``: mockllm's name and usage are not the fake server's)."""
    from butterfly import load_run
    from butterfly.api.running import import_inspect

    imported = import_inspect(log.location, tmp / "imported")
    again, want = score_run(load_run(imported.out)).to_json(), score.to_json()
    assert again["run"] != want["run"]
    again, want = same_answers(again), same_answers(want)  # the calls took other times
    for key in but:
        again.pop(key), want.pop(key)
    if "usage" in but:  # nor are the efficiency figures drawn from it
        for score_json in (again, want):
            score_json.pop("efficiency")
            score_json["scenarios"] = [{k: v for k, v in c.items() if k not in SPENT}
                                       for c in score_json["scenarios"]]
    assert again == want


def test_self_consistency_votes_alike_and_sends_the_vote_in_the_history(tmp_path: Path) -> None:
    """Three samples a turn, each with its own seed; the engine votes; the next turn's history
    holds the vote's text, so every later turn's message hash checks it (same_calls)."""
    opts = {"per_category": 1, "strategy": "self-consistency", "samples": 3,
            "temperature": 0.7}
    score = play(tmp_path, "script/noisy:p=0.3", "run", **opts)
    log = evaluate(task("butterfly_40", **opts), "butterfly/script/noisy:p=0.3", tmp_path)
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    same_after_import(log, tmp_path, score)
    assert voted_otherwise(tmp_path / "run") > 0  # a test that can fail: the vote is sent


def voted_otherwise(run_dir: Path) -> int:
    """Turns, but a conversation's last, whose vote's text is not their sample 0's answer."""
    from butterfly.core.turns import make_turn

    turns: dict[tuple[str, str, int], dict[int, list[Any]]] = {}
    for _, _, r in iter_records(run_dir / "calls.jsonl"):
        turns.setdefault((r.scenario, r.layout, r.repeat), {}).setdefault(r.turn, []).append(r)
    return sum(1 for conv in turns.values() for t, recs in conv.items()
               if t < max(conv) and make_turn(sorted(recs, key=lambda r: r.sample)).shown
               != recs[0].raw)


CAP = 2000
"""The response-size cap of the cap's test (a spec as JSON is about 600 characters)."""


def text_of(content: Any) -> str:
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def padded(body: dict[str, Any]) -> str:
    """A fake model that answers the initial spec, every third answer (by its messages) padded
    with spaces past the cap: whole, it would parse as the spec; cut, it is too large."""
    msgs = [text_of(m["content"]) for m in body["messages"]]
    spec = msgs[1].split("Here is the current spec:\n")[1].split("\n\n")[0]
    text = json.dumps(json.loads(spec))
    return text + " " * CAP if hashlib.sha256("".join(msgs).encode()).digest()[0] % 3 == 0 \
        else text


def answering(responder: Any) -> Any:
    """mockllm's outputs: what ``responder`` (a fake server's) answers the same messages."""
    def output(input: list[ChatMessage], *_: Any) -> ModelOutput:
        return answer(responder({"messages": [{"role": m.role, "content": m.text}
                                              for m in input]}))

    return output


def test_the_answer_size_cap_cuts_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """An answer over --max-answer-chars is kept as its first N characters, an abstention
    (too_large), and sent back cut in the history, in both harnesses."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(padded) as srv:
        score = play(tmp_path, "openai/fake", "run", per_category=1, api_base=srv.api_base,
                     timeout=5, max_answer_chars=CAP)
    log = evaluate(task("butterfly_40", per_category=1, max_answer_chars=CAP), "mockllm/model",
                   tmp_path, model_args={"custom_outputs": answering(padded)})
    assert score.abstention_by_reason["too_large"] > 0  # a test that can fail
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    cut = [e for s in log.samples or [] for e in s.store["butterfly_turns"] if e["raw_chars"]]
    assert cut and all(len(e["raw"]) == CAP and e["abstention"] == "too_large" for e in cut)
    same_after_import(log, tmp_path, score, but=("model", "usage"))


def over_the_window() -> set[str]:
    """The restate messages of the 10-turn chains' turn 10 among butterfly-long's first 24."""
    from butterfly.core.prompts import restate_message
    from butterfly.suite.load import load_suite, resolve_suite

    first = load_suite(resolve_suite("butterfly-long"))[:24]
    return {restate_message(s, 10) for s in first if len(s.turns) == 10}


def restate_oracle(body: dict[str, Any]) -> str:
    """A perfect model of butterfly-long in restate mode, from the one user message."""
    from butterfly.core.prompts import restate_message
    from butterfly.suite.load import load_suite, resolve_suite
    from oracle import replay as oracle_replay

    last = text_of(body["messages"][-1]["content"])
    for s in load_suite(resolve_suite("butterfly-long"))[:24]:
        for t in range(1, len(s.turns) + 1):
            if restate_message(s, t) == last:
                return json.dumps(oracle_replay(s)[t])
    raise AssertionError("not a restate message of butterfly-long's first 24")


@pytest.mark.parametrize("how", ["exception", "stop_reason"])
def test_an_ask_over_the_context_window_abstains_alike(tmp_path: Path, how: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Restate mode at chosen ask points: an ask over the context window is an abstention
    (reason context), the conversation going on. inspect says it by a provider's exception
    (llama.cpp's words) or by the stop reason model_length."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    over = over_the_window()
    opts = {"mode": "restate", "ask_at": [5, 10], "limit": 24}

    def fault(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if text_of(body["messages"][-1]["content"]) in over else None

    with FakeServer(restate_oracle, faults=fault) as srv:
        score = play(tmp_path, "openai/fake", "run", suite="butterfly-long",
                     api_base=srv.api_base, timeout=5, retries=0, **opts)

    def output(input: list[ChatMessage], *_: Any) -> ModelOutput:
        if input[-1].text not in over:
            return answer(restate_oracle({"messages": [{"role": m.role, "content": m.text}
                                                       for m in input]}))
        if how == "exception":
            raise RuntimeError("the request exceeds the available context size, try "
                               "increasing it")
        over_it = answer("")
        over_it.choices[0].stop_reason = "model_length"
        return over_it

    log = evaluate(task("butterfly_long", **opts), "mockllm/model", tmp_path,
                   model_args={"custom_outputs": output})
    assert score.abstention_by_reason == {"context": 12} and score.incomplete == 0
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score, same_usage=False)  # mockllm reports its own usage
    reasons = [t["abstention"] for s in log.samples or []
               for t in s.scores["butterfly_scorer"].metadata["turns"]]
    assert reasons.count("context") == 12


def test_restate_asked_at_chosen_turns_scores_alike(tmp_path: Path) -> None:
    opts = {"mode": "restate", "ask_at": [5, 20], "limit": 6}
    score = play(tmp_path, "script/lifo", "run", suite="butterfly-long", **opts)
    log = evaluate(task("butterfly_long", **opts), "butterfly/script/lifo", tmp_path)
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    meta = log.eval.metadata["butterfly"]
    assert (meta["mode"], meta["ask_at"], meta["suite"]) == ("restate", [5, 20],
                                                            "butterfly-long")


def test_the_code_track_observes_and_judges_programs_alike(tmp_path: Path) -> None:
    """script/collateral edits the program and also one setting no turn targets: both
    harnesses run its programs in the sandbox and find that setting."""
    score = play(tmp_path, "script/collateral", "run", suite="butterfly-code", limit=1)
    log = evaluate(task("butterfly_code", limit=1), "butterfly/script/collateral", tmp_path)
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    same_figures(log, score)
    same_calls(log, tmp_path / "run")
    assert score.change_radius == 1 and log.eval.metadata["butterfly"]["track"] == "code"


def test_the_oracle_scores_every_conversation(tmp_path: Path) -> None:
    log = evaluate(task("butterfly_40", per_category=1, layouts="Q"), "butterfly/script/oracle",
                   tmp_path)
    assert log.results is not None
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["final_match"] == metrics["turn_match"] == 1.0
    assert metrics["change_radius"] == 0 and metrics["n_conversations"] == 10
    for s in log.samples or []:
        assert s.scores["butterfly_scorer"].value == 1.0
        assert all(t["match"] for t in s.scores["butterfly_scorer"].metadata["turns"])


def mixed(body: dict[str, Any]) -> str:
    """A fake model's answers: the initial spec, some edited, some unparsable."""
    spec = json.loads(body["messages"][1]["content"].split("Here is the current spec:\n")[1]
                      .split("\n\n")[0])
    kind = hashlib.sha256(json.dumps(body["messages"]).encode()).digest()[0] % 4
    if kind == 0:
        return "UNSURE"
    if kind == 1:
        spec["log_level"] = "debug"
    if kind == 2:
        return f"Here it is:\n```json\n{json.dumps(spec)}\n```"
    return json.dumps(spec)


def replay(run_dir: Path) -> Any:
    """mockllm's outputs: what the fake server answered each call of the run."""
    raws = {(r.scenario, r.turn, r.layout, r.repeat): r.raw
            for _, _, r in iter_records(run_dir / "calls.jsonl")}

    def output(input: list[ChatMessage], *_: Any) -> ModelOutput:
        tag = next(m.metadata["butterfly"] for m in reversed(input) if m.metadata)
        return answer(raws[tag["scenario"], tag["turn"], tag["layout"], tag["repeat"]] or "")

    return output


def answer(text: str) -> ModelOutput:
    """mockllm's output with its usage given: mockllm counts tokens with tiktoken otherwise."""
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content(model="mockllm", content=text)
    out.usage = ModelUsage(input_tokens=3, input_tokens_cache_read=2, output_tokens=1,
                           total_tokens=6)
    return out


def test_mockllm_with_the_same_answers_scores_alike(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("BUTTERFLY_BACKOFF_BASE", "0.01")
    with FakeServer(mixed) as srv:
        score = play(tmp_path, "openai/fake", "run", per_category=1, api_base=srv.api_base,
                     timeout=5)
    log = evaluate(task("butterfly_40", per_category=1), "mockllm/model", tmp_path,
                   model_args={"custom_outputs": replay(tmp_path / "run")})
    assert score.abstention is not None and score.abstention > 0  # abstentions are compared
    assert inspect_verdicts(log) == butterfly_verdicts(score)
    usage = (log.samples or [])[0].store["butterfly_turns"][0]["usage"]
    assert usage == {"prompt_tokens": 5, "completion_tokens": 1, "reasoning_tokens": None,
                     "cached_tokens": 2, "cache_write_tokens": None}  # the prompt's whole
    same_figures(log, score)
    same_calls(log, tmp_path / "run")


def test_a_failed_call_leaves_its_conversation_incomplete(tmp_path: Path) -> None:
    def output(input: list[ChatMessage], *_: Any) -> ModelOutput:
        tag = next(m.metadata["butterfly"] for m in reversed(input) if m.metadata)
        if tag["scenario"] == "gen-undo-ref-01" and tag["turn"] == 2:
            raise RuntimeError("the server went away")
        return answer("UNSURE")

    log = evaluate(task("butterfly_40", limit=3), "mockllm/model", tmp_path,
                   model_args={"custom_outputs": output})
    assert log.results is not None and log.results.scores[0].unscored_samples == 1
    assert log.results.scores[0].metrics["n_conversations"].value == 2
    broken = next(s for s in log.samples or [] if s.id == "gen-undo-ref-01/E")
    score = broken.scores["butterfly_scorer"]
    assert math.isnan(float(score.value)) and score.metadata is not None
    assert score.metadata["complete"] is False and "went away" in score.metadata["error"]
    turns = broken.store["butterfly_turns"]
    assert [t["turn"] for t in turns] == [1, 2] and turns[1]["raw"] == ""
    assert "went away" in turns[1]["error"]


@pytest.mark.parametrize(("name", "args", "says"), [
    ("butterfly_40", {"strategy": "self-consistency"}, "samples at a temperature above 0"),
    ("butterfly_40", {"samples": 3}, "--samples is only for --strategy self-consistency"),
    ("butterfly_40", {"max_answer_chars": 0}, "--max-answer-chars takes 1 to"),
    ("butterfly_code", {"limit": 0}, "--limit must be at least 1"),
    ("butterfly_suite", {"suite": "butterfly-code", "mode": "restate"}, "code track plays"),
    ("butterfly_40", {"ask_at": [3]}, "--ask-at is for --mode restate"),
    ("butterfly_40", {"layouts": "E,X"}, "--layouts takes"),
])
def test_what_butterfly_run_refuses_a_task_refuses_in_one_line(name: str, args: dict[str, Any],
                                                                says: str) -> None:
    """Nothing is refused for inspect's sake (self-consistency and the cap are played): a task
    refuses what ``butterfly run`` refuses, by butterfly's own checks."""
    with pytest.raises(UserError, match=says) as caught:
        task(name, **args)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("name", "args", "says"), [
    ("butterfly_40", {"layout": "Q"},
     "butterfly_40: unknown parameter layout (did you mean layouts?); it takes layouts, mode, "),
    ("butterfly_code", {"mode": "restate", "layouts": "Q"},
     "butterfly_code: unknown parameters layouts, mode; it takes per_category, limit, seed, "
     "temperature, max_tokens"),
    ("butterfly_suite", {"suite": "butterfly-40", "per_categroy": 1, "limt": 2},
     "unknown parameters limt (did you mean limit?), per_categroy (did you mean per_category?)"),
    ("butterfly_long", {"epochs": 2}, "butterfly_long: unknown parameter epochs; it takes "),
    ("butterfly_hard", {"temprature": 0.5}, "temprature (did you mean temperature?)"),
])
def test_inspect_eval_refuses_a_parameter_no_task_takes(tmp_path: Path, name: str,
                                                        args: dict[str, Any], says: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through inspect's own eval, by the task's registered name, as ``inspect eval
    butterflybench/NAME -T KEY=VALUE`` passes them: inspect only logs a warning for a parameter
    a task does not declare and plays the defaults (``-T layout=Q`` played layout E); each task
    takes ``**unknown`` and refuses in one line, naming the parameter and the known ones. The
    refusal is inspect's PrerequisiteError too, which its command line prints as the message
    alone (its exception hook, called here), never as a traceback."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai._util.error import exception_hook
    from rich import get_console

    importlib.import_module("butterflybench._registry")
    with pytest.raises(UserError) as caught:
        inspect_eval(f"butterflybench/{name}", task_args=args, model="butterfly/script/oracle",
                     log_dir=str(tmp_path / "logs"), display="none")
    message = str(caught.value)
    assert says in message and "\n" not in message
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").iterdir())
    monkeypatch.setattr(get_console(), "quiet", False)  # display="none" made it quiet
    with get_console().capture() as shown:  # rich's print, wrapped at the console's width
        exception_hook()(type(caught.value), caught.value, caught.value.__traceback__)
    assert shown.get().split() == message.split()


def test_a_task_refuses_what_butterfly_run_refuses_as_inspect_prints_it() -> None:
    """The refusals of butterfly's own checks are inspect's PrerequisiteError as well."""
    from inspect_ai._util.error import PrerequisiteError

    with pytest.raises(PrerequisiteError, match="temperature above 0"):
        task("butterfly_40", strategy="self-consistency", samples=3)


def test_a_calls_usage_counts_the_prompt_whole_with_cache_reads_and_writes() -> None:
    """inspect's input_tokens leaves out the tokens read from and written to a prompt cache; our
    records count the prompt whole and keep both apart (writes cost more on Anthropic)."""
    from inspect_ai.model import ModelUsage

    from butterflybench.solver import usage_of

    u = ModelUsage(input_tokens=10, output_tokens=3, total_tokens=33, input_tokens_cache_read=4,
                   input_tokens_cache_write=16, reasoning_tokens=2)
    assert usage_of(u) == {"prompt_tokens": 30, "completion_tokens": 3, "reasoning_tokens": 2,
                           "cached_tokens": 4, "cache_write_tokens": 16}
    assert set(usage_of(None).values()) == {None}


def test_inspects_cost_reasoning_and_latency_reach_the_efficiency_metrics(tmp_path: Path
                                                                          ) -> None:
    """Each call's cost as inspect reports it (``usage.total_cost``) and its reasoning tokens
    are pooled by butterfly's efficiency: cost per correct conversation, reasoning per edit."""
    from butterfly.suite.load import load_suite, resolve_suite
    from oracle import replay as oracle_replay

    suite = {s.id: s for s in load_suite(resolve_suite("butterfly-40"))}

    def output(input: list[ChatMessage], *_: Any) -> ModelOutput:
        tag = next(m.metadata["butterfly"] for m in reversed(input) if m.metadata)
        right = hashlib.sha256(tag["scenario"].encode()).digest()[0] % 2 == 0
        out = answer(json.dumps(oracle_replay(suite[tag["scenario"]])[tag["turn"]])
                     if right else "UNSURE")
        assert out.usage is not None
        out.usage.total_cost, out.usage.reasoning_tokens = 0.001, 2 * tag["turn"]
        return out

    log = evaluate(task("butterfly_40", per_category=1), "mockllm/model", tmp_path,
                   model_args={"custom_outputs": output})
    assert log.results is not None
    got = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    scores = [s.scores["butterfly_scorer"].metadata or {} for s in log.samples or []]
    calls = sum(len(m["spent"]) for m in scores if m["complete"])
    correct = sum(bool(m["final_match"]) for m in scores if m["complete"])
    assert 0 < correct < len(scores)  # a test that can fail
    assert got["cost_per_correct_usd"] == pytest.approx(0.001 * calls / correct, abs=1e-8)
    assert got["reasoning_per_edit"] == pytest.approx(2.0)  # 2t tokens at turn t, t edits
    assert 0 <= got["latency_median_s"] <= got["latency_p95_s"]
