"""The notebook's door to the engine (``runner.converse``) beside ``butterfly run`` + ``score``,
on the loopback fake server: the prompts the notebook offers (strategies, layouts, protocols,
parse modes), the response-size cap, and asks over the context window (an abstention where the
CLI records one, a failed conversation where the CLI's run fails).

The chat is kaggle-benchmarks' as the notebook's cells use it, on the SDK its OpenAI actor
calls (``openai``): it keeps each answer in the chat, amends one on request, and starts afresh
for a restate ask; an over-context refusal reaches the door as the SDK's ``BadRequestError``.
The notebook itself, executed headless, is ``test_door_notebook.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from fakeserver import FakeServer

import butterfly
from butterfly.code.agents import code_answers
from butterfly.core.prompts import Message
from butterfly.core.wire import over_context
from butterfly.engine.conversation import Conversation, answered
from butterfly.errors import RunFailed
from butterfly.kaggle import code_track as ct
from butterfly.kaggle import runner as bb
from butterfly.kaggle.settings import Settings, settings_of
from butterfly.suite.load import load_suite
from oracle import Scenario, replay

openai = pytest.importorskip("openai")

FORTY = {s.id: s for s in load_suite(ROOT / "scenarios" / "butterfly-40.jsonl")}
FEW = [FORTY[i] for i in ("gen-drop-01", "gen-drop-03", "hw-indirect-same-format")]
LONG = load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")
CHAINS = [next(s for s in LONG if len(s.turns) == n) for n in (5, 10, 20)]
CODE = load_suite(ROOT / "tests/butterfly/code/code_suite.jsonl")
MAX_TOKENS = 300


class SdkChat:
    """A :class:`butterfly.kaggle.runner.Chat` as kaggle-benchmarks keeps one, on the openai
    SDK: the messages so far, each answer appended to them."""

    def __init__(self, api_base: str) -> None:
        self.client = openai.OpenAI(base_url=api_base, api_key="sk-test", max_retries=0)
        self.messages: list[dict[str, Any]] = []

    def send(self, messages: Sequence[Message], fresh: bool) -> None:
        self.messages = [*([] if fresh else self.messages), *map(dict, messages)]

    def respond(self) -> bb.Answer:
        r = self.client.chat.completions.create(model="fake", messages=self.messages,
                                                temperature=0, seed=0, max_tokens=MAX_TOKENS)
        text = r.choices[0].message.content or ""
        self.messages.append({"role": "assistant", "content": text})
        return bb.Answer(text, r.usage.completion_tokens if r.usage else None)

    def amend(self, text: str) -> None:
        self.messages[-1]["content"] = text


def keys(scenarios: Sequence[Scenario], settings: Settings) -> dict[str, tuple[str, int]]:
    """(scenario, turn) by the last message of each ask, as the engine makes it."""
    out = {}
    for s in scenarios:
        conv = Conversation(s, settings, settings.layout)
        while (ask := conv.next_ask()) is not None:
            out[ask.messages[-1]["content"]] = (s.id, ask.turn)
            conv.close([answered(conv, 0, "{}")])
    return out


def spec_answer(protocol: str, spec: dict[str, str]) -> str:
    """The spec as the protocol asks for it."""
    text = json.dumps(spec, indent=1)
    return {"json-first": f"{text}\n\nDone: only what you asked changed.",
            "json-last": f"The edit changes one setting.\n\n{text}"}.get(protocol, text)


def responder(scenarios: Sequence[Scenario], settings: Settings,
              answer: Callable[[Scenario, int], str] | None = None
              ) -> Callable[[dict[str, Any]], str]:
    """The oracle's spec, but the initial spec on every second turn of the second scenario and
    a refusal to answer at the first turn of the third (a wobble, a mismatch, an abstention)."""
    by_last = keys(scenarios, settings)
    by_id = {s.id: s for s in scenarios}

    def respond(body: dict[str, Any]) -> str:
        sid, t = by_last[body["messages"][-1]["content"]]
        s = by_id[sid]
        if answer is not None:
            return answer(s, t)
        if s is scenarios[-1] and t == 1:
            return "I cannot tell which settings you mean."
        specs = replay(s)
        return spec_answer(settings.protocol, specs[0] if s is scenarios[1] and t % 2 == 0
                           else specs[t])

    return respond


def suite_file(tmp_path: Path, scenarios: Sequence[Scenario]) -> str:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(s.to_json() + "\n" for s in scenarios), encoding="utf-8")
    return str(path)


def both(tmp_path: Path, scenarios: Sequence[Scenario], settings: Settings,
         respond: Callable[[dict[str, Any]], str], faults: Any = None,
         judge: Callable[[Scenario], bb.Judge | None] = lambda s: None,
         **cli: Any) -> tuple[list[bb.Verdict], list[Any], Any, list[Any]]:
    """The notebook's door and ``butterfly run`` on the same fake server: (the verdicts, the
    messages the door sent, the CLI's score, the CLI's messages)."""
    with FakeServer(respond, faults=faults) as srv:
        verdicts = [bb.play_verdict(s, settings, SdkChat(srv.api_base), MAX_TOKENS,
                                    retries=lambda call: call(), judge=judge(s))
                    for s in scenarios]
        mine = [b["messages"] for b in srv.requests]
    with FakeServer(respond, faults=faults) as srv:
        run = butterfly.run(model="openai/fake", api_base=srv.api_base,
                            suite=suite_file(tmp_path, scenarios), max_tokens=MAX_TOKENS,
                            out=tmp_path / "cli", cache=None, retries=0, **cli)
        theirs = [b["messages"] for b in srv.requests]
    return verdicts, mine, butterfly.score_run(run), theirs


def same_figures(verdicts: Sequence[Any], score: Any, scenarios: Sequence[Scenario]) -> None:
    """Per scenario and over the run, the notebook's figures are ``butterfly score``'s."""
    by_id = {s.id: s for s in scenarios}
    agg = bb.figures(verdicts, by_id)
    for name in ("final_match", "final_matches", "turn_match", "n_answers", "wobbles",
                 "first_divergent_turn", "abstention", "coverage", "change_radius",
                 "collateral_per_turn", "undo_recovery"):
        assert getattr(agg, name) == getattr(score, name), name
    assert bb.headline(agg)["effective_final_match"] == score.effective_final_match
    assert {c.id: (c.final_match, c.first_divergent_turn, c.wobble, c.abstentions)
            for c in score.scenarios} == {
        v["id"]: (v["final_match"], v["first_divergent_turn"], v["wobble"], v["abstentions"])
        for v in verdicts}
    text = bb.headline_text("fake", verdicts, scenarios=by_id, ask_at=score.ask_at)
    reasons = score.abstention_by_reason
    assert ("abstentions by reason: " + ", ".join(f"{k} {n}" for k, n in reasons.items())
            in text) == bool(reasons)
    assert f"(final match x coverage): {100 * score.effective_final_match:.1f}%" in text


def _sorted(bodies: list[Any]) -> list[str]:
    return sorted(json.dumps(b) for b in bodies)


@pytest.mark.parametrize("given", [
    {"strategy": "few-shot", "layout": "Q", "protocol": "json-first", "parse": "strict"},
    {"strategy": "cot", "layout": "H", "protocol": "json-last"},
    {"strategy": "adaptive-cot", "protocol": "json-last", "parse": "lenient", "mode": "restate"},
], ids=["few-shot-Q-json-first-strict", "cot-H-json-last", "restate-adaptive-cot-lenient"])
def test_the_prompts_the_notebook_offers_are_the_clis(given: dict[str, str],
                                                      tmp_path: Path) -> None:
    settings = settings_of("spec", **given)
    verdicts, mine, score, theirs = both(
        tmp_path, FEW, settings, responder(FEW, settings), strategy=settings.strategy,
        layouts=settings.layout, protocol=settings.protocol, parse=settings.parse,
        mode=settings.mode)
    assert len(mine) == len(theirs) == sum(len(s.turns) for s in FEW)
    assert _sorted(mine) == _sorted(theirs)  # the same messages, one call per turn
    same_figures(verdicts, score, FEW)
    assert 0 < score.final_matches < 3 and score.abstention_by_reason  # every case reached


def test_the_answer_cap_cuts_what_the_history_holds_as_the_cli(tmp_path: Path) -> None:
    """An answer over ``--max-answer-chars`` is an abstention (too_large), and the next turn's
    history holds its first N characters: the notebook amends the answer its chat keeps."""
    settings = settings_of("spec", max_answer_chars="2000")
    long_turns = {(FEW[2].id, 1), (FEW[1].id, 1)}

    def answer(s: Scenario, t: int) -> str:
        text = json.dumps(replay(s)[t])
        return text + " " + "x" * 3000 if (s.id, t) in long_turns else text

    verdicts, mine, score, theirs = both(tmp_path, FEW, settings, responder(FEW, settings,
                                                                            answer),
                                         protocol="json", max_answer_chars=2000)
    assert _sorted(mine) == _sorted(theirs)
    assert any(m["role"] == "assistant" and len(m["content"]) == 2000 for b in mine for m in b)
    same_figures(verdicts, score, FEW)
    assert score.abstention_by_reason == {"too_large": 2}
    cut = [a for v in verdicts for a in v["answers"] if a["abstention"] == "too_large"]
    assert len(cut) == 2 and all(len(a["raw"]) == 2000 for a in cut)
    assert all("over the response-size cap (--max-answer-chars 2000)" in a["abstention_detail"]
               for a in cut)


def test_an_ask_over_the_context_window_is_an_abstention_as_in_the_cli(tmp_path: Path) -> None:
    """Restate mode asked at chosen turns: the asks at turn 10 are refused as over the context
    window (the SDK's 400); both doors record the abstention (reason ``context``) and go on."""
    settings = settings_of("spec", mode="restate", ask_at="5,10")
    by_last = keys(CHAINS, settings)

    def fault(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if by_last[body["messages"][-1]["content"]][1] == 10 else None

    verdicts, mine, score, theirs = both(tmp_path, CHAINS, settings,
                                         responder(CHAINS, settings, lambda s, t: json.dumps(
                                             replay(s)[t])), faults=fault, mode="restate",
                                         ask_at="5,10", protocol="json")
    assert _sorted(mine) == _sorted(theirs) and score.incomplete == 0
    same_figures(verdicts, score, CHAINS)
    assert score.abstention_by_reason == {"context": 2}
    over = [a for v in verdicts for a in v["answers"] if a["abstention"] == "context"]
    assert [a["turn"] for a in over] == [10, 10] and all(a["raw"] == "" for a in over)
    assert all(a["abstention_detail"].startswith("the provider refused the request: "
                                                 "BadRequestError") for a in over)
    assert bb.horizon_of(verdicts) == score.horizon


def test_the_code_track_abstains_over_the_context_window_and_goes_on(tmp_path: Path) -> None:
    """Contract section 7: from the fourth turn on the code conversation no longer fits; each
    such turn is an abstention, and the next turn's history holds its empty answer, in both
    doors (the chat got no answer from the model: the door sends it)."""
    s = CODE[0]
    oracle = code_answers("oracle", s)

    def over(_i: int, body: dict[str, Any]) -> str | None:
        return "context" if sum(m["role"] == "user" for m in body["messages"]) >= 4 else None

    def respond(body: dict[str, Any]) -> str:
        return oracle[sum(m["role"] == "user" for m in body["messages"])]

    observe = ct.observe_cached()
    verdicts, mine, score, theirs = both(
        tmp_path, [s], ct.CODE, respond, faults=over, track="code",
        judge=lambda sc: ct.judge_with(sc, observe))
    assert _sorted(mine) == _sorted(theirs)
    assert score.abstention_by_reason == {"context": len(s.turns) - 3}
    verdict = ct.with_broken(verdicts[0])
    assert [a["abstention"] for a in verdict["answers"]][3:] == ["context"] * (len(s.turns) - 3)
    assert verdict["broken"][:3] == [0, 0, 0] and verdict["broken"][3:] == [None] * 2
    assert verdict["turn_match"][:3] == [True] * 3 and not verdict["final_match"]
    assert verdict["abstentions"] == score.scenarios[0].abstentions


def test_in_chat_mode_an_ask_over_the_context_window_fails_the_conversation(
        tmp_path: Path) -> None:
    """Where the CLI records no abstention (the spec track in chat mode), the refusal fails the
    conversation: no verdict (the notebook's outer task then reports no score), and the CLI's
    run fails."""
    s = FEW[1]
    settings = Settings()
    respond = responder([s], settings, lambda sc, t: json.dumps(replay(sc)[t]))

    def second(index: int) -> str | None:
        return "context" if index == 1 else None

    with FakeServer(respond, faults=second) as srv:
        conv = Conversation(s, settings)
        with pytest.raises(openai.BadRequestError, match="exceeds the available context"):
            bb.converse(conv, SdkChat(srv.api_base), MAX_TOKENS, retries=lambda call: call())
        assert conv.over and len(conv.turns) == 1
    with FakeServer(respond, faults=second) as srv, \
            pytest.raises(RunFailed, match="exceeds the available context"):
        butterfly.run(model="openai/fake", api_base=srv.api_base,
                      suite=suite_file(tmp_path, [s]), protocol="json", retries=0,
                      out=tmp_path / "cli", cache=None)


def test_the_refusals_over_the_context_window_are_the_clis() -> None:
    """``core.wire.over_context`` reads the SDKs' exceptions as the CLI reads the same
    refusals: a 400 saying so (OpenAI's words, llama.cpp's, Gemini's); not a 5xx, not another
    400, not an error without a status."""
    import httpx
    from google.genai import errors

    from butterfly.models.provider import ContextOverflow, refusal

    def bad(status: int, message: str) -> Exception:
        response = httpx.Response(status, request=httpx.Request("POST", "http://h/v1"))
        cls = openai.BadRequestError if status == 400 else openai.InternalServerError
        return cls(f"Error code: {status} - {{'error': {{'message': {message!r}}}}}",
                   response=response, body=None)

    openai_words = "This model's maximum context length is 8192 tokens."
    gemini_words = ("The input token count (2551556) exceeds the maximum number of tokens "
                    "allowed (1048576).")
    for message in (openai_words, "the request exceeds the available context size"):
        assert over_context(bad(400, message))
        assert isinstance(refusal(f"HTTP 400: {message}"), ContextOverflow)
    assert over_context(errors.ClientError(400, {"error": {"code": 400,
                                                           "message": gemini_words}}))
    assert isinstance(refusal(f"HTTP 400: {gemini_words}"), ContextOverflow)
    assert not over_context(bad(500, openai_words))  # retried: a server's failure
    assert not over_context(bad(400, "Unsupported parameter: 'seed'"))
    assert not over_context(ValueError(openai_words))  # no status: not a provider's refusal
