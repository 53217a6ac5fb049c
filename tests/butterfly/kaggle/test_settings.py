"""The notebook's settings (butterfly/kaggle/settings.py): what it offers is read as ``butterfly
run`` reads the same options, and each feature it cannot offer is refused in one line that
names the reason, a reason checked here against kaggle-benchmarks itself where it is one."""

from __future__ import annotations

import pytest

from butterfly import RunOptions, api
from butterfly.engine.tracks import track
from butterfly.kaggle import settings as st
from butterfly.kaggle.runner import Settings

ENGINE_FIELDS = ("track", "mode", "strategy", "protocol", "parse", "layouts", "ask_at",
                 "samples", "sc_base", "seed", "schema_output", "max_answer_chars")
"""What the engine reads of a run's settings (``engine.conversation.Settings``), but the
cache markers (the notebook sends none: kaggle-benchmarks builds the request)."""


@pytest.mark.parametrize(("given", "options"), [
    ({}, {"protocol": "json"}),
    ({"strategy": "few-shot", "layout": "Q", "protocol": "json-first", "parse": "strict"},
     {"strategy": "few-shot", "layouts": "Q", "protocol": "json-first", "parse": "strict"}),
    ({"strategy": "cot", "layout": "H", "protocol": "json-last", "parse": "lenient",
      "max_answer_chars": "500"},
     {"strategy": "cot", "layouts": "H", "protocol": "json-last", "parse": "lenient",
      "max_answer_chars": 500}),
    ({"mode": "restate", "ask_at": "5,10", "strategy": "adaptive-cot", "protocol": "json-last"},
     {"mode": "restate", "ask_at": "5,10", "strategy": "adaptive-cot",
      "protocol": "json-last"}),
])  # fmt: skip
def test_what_the_notebook_plays_is_what_butterfly_run_plays(given: dict[str, str],
                                                              options: dict[str, object]) -> None:
    mine = st.settings_of("spec", **given)  # type: ignore[arg-type]
    cli = api.run_params(RunOptions(model="script/oracle", **options))  # type: ignore[arg-type]
    for name in ENGINE_FIELDS:
        assert getattr(mine, name) == getattr(cli, name), name


def test_the_defaults_are_the_leaderboards() -> None:
    assert st.settings_of("spec") == Settings()
    assert st.settings_of("code") == Settings(track="code")
    assert st.described(Settings()) == ("strategy zero-shot, protocol json, parse structured, "
                                        "layout E")


def _refused(**given: object) -> str:
    with pytest.raises(st.Refused) as info:
        st.settings_of(**given)  # type: ignore[arg-type]
    text = str(info.value)
    assert "\n" not in text and text.strip() == text  # one line
    return text


@pytest.mark.parametrize(("given", "reason"), [
    ({"track": "spec", "protocol": "schema"}, "schema"),
    ({"track": "spec", "strategy": "self-consistency"}, "self-consistency"),
    ({"track": "spec", "layout": "E,Q"}, "layouts"),
    ({"track": "spec", "parse": "lenient", "json_repair": False}, "lenient"),
])  # fmt: skip
def test_each_feature_the_notebook_cannot_offer_is_refused_with_its_reason(
        given: dict[str, object], reason: str) -> None:
    assert _refused(**given) == st.REFUSALS[reason]


def test_what_the_cli_refuses_the_notebook_refuses() -> None:
    assert "reasons before the spec: use protocol json-last" in _refused(track="spec",
                                                                          strategy="cot")
    assert "is for BUTTERFLY_MODE=restate" in _refused(track="spec", ask_at="5")
    code = Settings(track="code", mode="restate")
    assert _refused(track="code", mode="restate") == track("code").refusal(code)
    assert "played zero-shot" in _refused(track="code", strategy="few-shot")
    assert "layout E" in _refused(track="code", layout="Q")
    for bad, words in [({"layout": "Z"}, "BUTTERFLY_LAYOUT='Z': one of E, Q, H"),
                       ({"parse": "loose"}, "BUTTERFLY_PARSE='loose'"),
                       ({"strategy": "tot"}, "BUTTERFLY_STRATEGY='tot'"),
                       ({"max_answer_chars": "0"}, "BUTTERFLY_MAX_ANSWER_CHARS takes 1 to"),
                       ({"mode": "asked"}, "plays chat or restate")]:
        assert words in _refused(track="spec", **bad)
    assert "track='yaml'" in _refused(track="yaml")


def test_the_reasons_hold_for_the_pinned_kaggle_benchmarks() -> None:
    """The refusals' reasons, read off kaggle-benchmarks itself: the model proxy's actors take
    no temperature (self-consistency), and a JSON schema as response_format only for some
    models (protocol schema). A chat can be forked (``kbench.chats.fork``): that is not why
    self-consistency is refused."""
    pytest.importorskip("kaggle_benchmarks", reason="pip install -e '.[kaggle]'")
    from kaggle_benchmarks import chats
    from kaggle_benchmarks.kaggle.model_proxy import ModelProxy

    def proxy(model: str) -> object:  # built without a call: no connection
        return ModelProxy(model, api_key="k", base_url="http://127.0.0.1:9/openapi")

    claude, qwen = proxy("anthropic/claude-sonnet-4-5"), proxy("qwen/qwen3-235b")
    assert claude.support_temperature is False
    assert claude.support_structured_outputs is True
    assert qwen.support_structured_outputs is False
    assert callable(chats.fork)
