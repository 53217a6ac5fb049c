"""The notebook's own code cells, as one module that ruff and mypy check (docs/kaggle.md).

Never imported: :func:`butterfly.kaggle.notebook.build` reads this file as text and makes each
part after a ``# %% NAME`` line one code cell, in this order, with the build's values put in for
the ``@NAME@`` placeholders (the suites' sha256 and tracks, the task's name and description).
The cells run in the notebook's kernel one after another, so a cell uses the names of the
cells before it (``DATA``, ``bb``, ``llm``, ...). The text above the first cell is not in the
notebook.
"""

# ruff: noqa: E402


# %% setup
# Set-up: kaggle-benchmarks, and two cell magics that make the next cells the package itself.
import os
import sys
import types
from typing import Any

import kaggle_benchmarks as kbench
import pandas as pd
from IPython.core.magic import register_cell_magic

try:
    import json_repair  # noqa: F401
    JSON_REPAIR = True
except ImportError:  # only the lenient parser calls it (PARSE = "lenient" is refused without it)
    def _no_repair(*args: object, **kwargs: object) -> None:
        raise ImportError("json_repair is not installed")

    sys.modules["json_repair"] = types.ModuleType("json_repair")
    sys.modules["json_repair"].__dict__["loads"] = _no_repair
    JSON_REPAIR = False

for _name in ("oracle", "butterfly"):
    _package = types.ModuleType(_name)
    _package.__path__ = []  # nothing of these packages is imported from disk
    _package.__package__ = _name
    sys.modules[_name] = _package

DATA: dict[str, str] = {}


@register_cell_magic
def butterfly_module(line: str, cell: str) -> None:
    """Run the cell's text as the module LINE of the package (e.g. oracle/replay.py)."""
    path = line.strip()
    name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    module = sys.modules.get(name)
    if module is None:  # a module, or a subpackage (butterfly/core/__init__.py)
        module = types.ModuleType(name)
        parent = name.rsplit(".", 1)[0]
        if path.endswith("__init__.py"):
            module.__path__ = []
            parent = name
        module.__package__ = parent
        sys.modules[name] = module
        setattr(sys.modules[name.rsplit(".", 1)[0]], name.rsplit(".", 1)[1], module)
    module.__file__ = path
    exec(compile(cell, path, "exec", dont_inherit=True), module.__dict__)


@register_cell_magic
def butterfly_data(line: str, cell: str) -> None:
    """Keep the cell's text as the data file LINE."""
    DATA[line.strip()] = cell


# %% config
# Configuration. On Kaggle nothing here needs changing; the BUTTERFLY_* variables exist for
# the offline end-to-end test (a local OpenAI-compatible server, a few scenarios).
import contextlib
import hashlib
import json
import time

from butterfly.core.asking import asked_line, asked_only
from butterfly.kaggle import code_track as ct
from butterfly.kaggle import runner as bb
from butterfly.kaggle import settings as st

# "butterfly-40" (the default), "butterfly-long" (a slice) or "butterfly-code" (the code track:
# the suite's manifest says which track it plays; TRACK below follows from it).
SUITE_NAME = os.environ.get("BUTTERFLY_SUITE", "butterfly-40")
LONG_PER_LENGTH = int(os.environ.get("BUTTERFLY_LONG_PER_LENGTH", "2"))
# "chat" (the default: one conversation per scenario) or "restate" (`butterfly run --mode
# restate`: each asked turn one stateless call), and in restate mode the turns asked, as
# `--ask-at` takes them: "5,10,20,40,80", "last" or "all"; "" (the default) asks at the suite's
# default ask points (butterfly-long: 5,10,20,40,80), or every turn if it names none.
MODE = os.environ.get("BUTTERFLY_MODE", "chat")
ASK_AT_TEXT = os.environ.get("BUTTERFLY_ASK_AT", "")
# The prompt and the parser, as `butterfly run` takes them (the defaults are the leaderboard's):
# STRATEGY "zero-shot", "few-shot", "cot" or "adaptive-cot"; LAYOUT "E", "Q" or "H"; PROTOCOL
# "json", "json-first" or "json-last" (cot and adaptive-cot need json-last); PARSE
# "structured", "strict" or "lenient"; MAX_ANSWER_CHARS the response-size cap
# (`--max-answer-chars`; "" the CLI's default). What the notebook cannot play (protocol schema,
# self-consistency, several layouts) is refused in one line (docs/kaggle.md).
STRATEGY = os.environ.get("BUTTERFLY_STRATEGY", "zero-shot")
LAYOUT = os.environ.get("BUTTERFLY_LAYOUT", "E")
PROTOCOL = os.environ.get("BUTTERFLY_PROTOCOL", "json")
PARSE = os.environ.get("BUTTERFLY_PARSE", "structured")
MAX_ANSWER_CHARS = os.environ.get("BUTTERFLY_MAX_ANSWER_CHARS", "")
# The frozen suites in this notebook: the sha256, the track and the default ask points of each.
SUITES: dict[str, st.SuiteEntry] = json.loads('@SUITES@')
if os.environ.get("BUTTERFLY_SUITE_FILE"):  # offline tests only: a suite file from disk
    with open(os.environ["BUTTERFLY_SUITE_FILE"], encoding="utf-8") as _f:
        SUITE = _f.read()
    TRACK = os.environ.get("BUTTERFLY_TRACK", "spec")
else:
    if SUITE_NAME not in SUITES:
        raise RuntimeError(f"{SUITE_NAME} is not in this notebook (it has {', '.join(SUITES)})")
    SUITE = DATA[f"scenarios/{SUITE_NAME}.jsonl"]
    if hashlib.sha256(SUITE.encode("utf-8")).hexdigest() != SUITES[SUITE_NAME]["sha256"]:
        raise RuntimeError("the suite cell differs from the frozen suite: rebuild the notebook")
    TRACK = SUITES[SUITE_NAME]["track"]
# Everything above, checked once as `butterfly run` checks its options (st.Refused: one line).
SETTINGS = st.settings_of(
    TRACK, mode=MODE, ask_at=ASK_AT_TEXT, strategy=STRATEGY, layout=LAYOUT, protocol=PROTOCOL,
    parse=PARSE, max_answer_chars=MAX_ANSWER_CHARS, json_repair=JSON_REPAIR,
    default_ask_at=None if os.environ.get("BUTTERFLY_SUITE_FILE")
    else SUITES[SUITE_NAME]["ask_at"])
ASK_AT = SETTINGS.ask_at
CODE_TRACK = SETTINGS.track == "code"  # its programs are observed: the sandbox, the verdicts
SCENARIOS = bb.load_scenarios(SUITE)
BY_ID = {s.id: s for s in SCENARIOS}
RUN_IDS = [i.strip() for i in os.environ.get("BUTTERFLY_SCENARIOS", "").split(",") if i.strip()]
if not RUN_IDS and SUITE_NAME == "butterfly-long":
    RUN_IDS = [s.id for s in bb.long_slice(SCENARIOS, LONG_PER_LENGTH)]
RUN_IDS = RUN_IDS or [s.id for s in SCENARIOS]
print(f"{SUITE_NAME} ({TRACK} track, {SETTINGS.mode} mode): {len(RUN_IDS)} conversations, "
      f"{sum(len(bb.asked_of(BY_ID[i], ASK_AT)) for i in RUN_IDS)} calls")
if ASK_AT is not None:  # as `butterfly score` says it
    print(asked_line(ASK_AT))
if CODE_TRACK:  # model-written programs run in a child process, never in this kernel
    print(ct.use_fallback_sandbox())
    OBSERVE = ct.observe_cached()
MAX_TOKENS = int(os.environ.get("BUTTERFLY_MAX_TOKENS", bb.MAX_TOKENS))
N_JOBS = int(os.environ.get("BUTTERFLY_N_JOBS", "4"))  # scenarios played at once
SEED_ARGS = bb.seed_args(os.environ)  # none with BUTTERFLY_NO_SEED=1 (`butterfly run --no-seed`)
# What llm.prompt(..., extra_api_params=...) passes: the output bound (else a quota 403), -M args
EXTRA_API_PARAMS = bb.api_params(MAX_TOKENS, os.environ)
print(f"{len(RUN_IDS)} of {len(SCENARIOS)} scenarios, {EXTRA_API_PARAMS}, "
      f"temperature {bb.TEMPERATURE}, {SEED_ARGS or 'no seed'}"
      + ("" if CODE_TRACK else f", {st.described(SETTINGS)}"))


# %% estimate
# What this run will send, before it sends anything: the estimate of `butterfly run --dry-run`
# (docs/cost.md), made per scenario when the notebook was built (tools/kaggle_quota.py), summed
# over the scenarios chosen above, for a few models (docs/kaggle.md, "Sized to the daily quota").
ESTIMATE = json.loads('@ESTIMATE@')
_what, _rows = st.estimate_for(ESTIMATE, SUITE_NAME, SETTINGS)
if RUN_IDS and all(i in _rows for i in RUN_IDS) and not os.environ.get("BUTTERFLY_SUITE_FILE"):
    _calls = sum(_rows[i]["calls"] for i in RUN_IDS)
    print(f"estimate ({_what}): {_calls} calls; at most {_calls * MAX_TOKENS:,} completion "
          f"tokens (max_tokens {MAX_TOKENS})")
    for _model, _about in ESTIMATE["models"].items():
        _prompt = sum(_rows[i]["prompt"][_model] for i in RUN_IDS)
        _completion = sum(_rows[i]["completion"][_model] for i in RUN_IDS)
        _rates = _about["usd_per_token"]
        _usd = ("no price known" if _rates is None else
                f"USD {_prompt * _rates[0] + _completion * _rates[1]:.2f} at list price, "
                f"{_prompt * _rates[0] + _calls * MAX_TOKENS * _rates[1]:.2f} at max_tokens")
        print(f"  {_model} ({_about['tokenizer']}): {_prompt:,} prompt tokens, "
              f"{_completion:,} completion tokens expected; {_usd}")
else:
    print(f"estimate: none for these scenarios in {_what} (the notebook carries one per frozen "
          "suite, for the default prompt, in chat mode, restate mode, and restate mode asked "
          "at its default ask points)")


# %% model
# The model: kbench.llm (Kaggle runs this notebook once for each model of the benchmark).
# BUTTERFLY_OPENAI_BASE_URL (the offline test) points kaggle-benchmarks' own OpenAI actor at
# an OpenAI-compatible server instead; the model proxy's variables cannot, since they append
# /openapi to the URL.
if os.environ.get("BUTTERFLY_OPENAI_BASE_URL"):
    import openai
    from kaggle_benchmarks.actors.llms import OpenAI as OpenAIChat

    llm = OpenAIChat(
        openai.OpenAI(base_url=os.environ["BUTTERFLY_OPENAI_BASE_URL"],
                      api_key=os.environ.get("BUTTERFLY_OPENAI_API_KEY", "sk-local"),
                      max_retries=0),
        os.environ["BUTTERFLY_OPENAI_MODEL"],
        support_temperature=True,
    )
else:
    llm = kbench.llm
MODEL_NAME = getattr(llm, "model", llm.name)
print(f"model: {MODEL_NAME}; temperature sent: {llm.support_temperature}")


# %% tasks
VERDICTS: dict[str, bb.Verdict] = {}


class KaggleChat:
    """The engine's door (`bb.Chat`) on kaggle-benchmarks: the task's chat (chat mode), or a
    chat of its own per ask (restate mode: `kbench.chats.new`, left at the next ask or at the
    end). kaggle-benchmarks keeps each answer in the chat, with its tokens and cost."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.stack = llm, contextlib.ExitStack()
        self.last: Any = None  # the chat's last answer (a kbench message)
        # As llm.prompt() does: temperature only for a model that takes it.
        self.request = {**SEED_ARGS, "reasoning": None,
                        "temperature": bb.TEMPERATURE if llm.support_temperature else None}

    def __enter__(self) -> "KaggleChat":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def send(self, messages: Any, fresh: bool) -> None:
        if fresh:  # restate mode: this ask's messages in a chat of their own
            self.stack.close()
            self.stack.enter_context(kbench.chats.new("ask"))
        for m in messages:  # an assistant message (a few-shot example, an answer the chat
            # lacks: an ask over the context window got none) is the model's
            sender = {"system": kbench.system, "user": kbench.user}.get(m["role"], self.llm)
            sender.send(m["content"])

    def respond(self) -> bb.Answer:
        # llm.prompt(text, ...) is kbench.user.send(text) then this call; split, a retry asks
        # again with the same history instead of repeating the user's message.
        start = time.perf_counter()
        self.last = self.llm.respond(schema=str, **self.request, **EXTRA_API_PARAMS)
        took = time.perf_counter() - start
        u = self.last.usage  # kaggle-benchmarks' Usage: tokens, cost in nanodollars (None:
        # its proxy reported none); latency as the CLI times a call, on the harness's clock
        cost = u.total_cost_nanodollars
        return bb.Answer(self.last.content, u.output_tokens, u.input_tokens,
                         None if cost is None else cost / 1e9, took)

    def amend(self, text: str) -> None:  # the answer cut at the response-size cap
        self.last.content = text
        self.last._meta["raw_content"] = text


@kbench.task(name="@TASK@ scenario", store_task=False)
def butterflybench_scenario(llm: Any, scenario_id: str) -> bool:
    """One ButterflyBench conversation: passes when the final spec equals the oracle's."""
    scenario = BY_ID[scenario_id]
    with KaggleChat(llm) as chat:  # the engine's turns; transient errors retried inside
        if CODE_TRACK:  # each program's behaviour observed in the sandbox, then judged
            VERDICTS[scenario_id] = ct.play_code_verdict(scenario, SETTINGS, chat, MAX_TOKENS,
                                                         OBSERVE)
        else:
            VERDICTS[scenario_id] = bb.play_verdict(scenario, SETTINGS, chat, MAX_TOKENS)
    return VERDICTS[scenario_id]["final_match"]


@kbench.task(name="@TASK@")
def butterflybench(llm: Any) -> tuple[float, float]:
    """@DESCRIPTION@"""
    # Nested evaluation runs with max_attempts=1: the retries are inside the scenario task.
    runs = butterflybench_scenario.evaluate(
        llm=[llm], evaluation_data=pd.DataFrame({"scenario_id": RUN_IDS}), n_jobs=N_JOBS,
        on_failure="continue")
    failed = [r for r in runs if r.status == "failed"]
    if failed:
        errors = "; ".join(f"{r.params['scenario_id']}: "
                           f"{(r.error_message or '?').strip().splitlines()[-1]}"
                           for r in failed)
        raise RuntimeError(f"{len(failed)} scenario(s) got no answer (provider errors, not "
                           f"model failures), so no score is reported: {errors}")
    rows = [VERDICTS[i] for i in RUN_IDS]
    head = bb.headline(bb.figures(rows, BY_ID))  # `butterfly score`'s aggregate
    with open("butterflybench_verdicts.json", "w", encoding="utf-8") as f:
        f.write(bb.dumps({"model": MODEL_NAME, "max_tokens": MAX_TOKENS,
                          "api_params": EXTRA_API_PARAMS,
                          "temperature": bb.TEMPERATURE, "seed": SEED_ARGS.get("seed"),
                          "suite": SUITE_NAME, "track": TRACK, "mode": SETTINGS.mode,
                          "ask_at": None if ASK_AT is None else list(ASK_AT),
                          "strategy": SETTINGS.strategy, "layout": SETTINGS.layout,
                          "protocol": None if CODE_TRACK else SETTINGS.protocol,
                          "parse": None if CODE_TRACK else SETTINGS.parse,
                          "max_answer_chars": SETTINGS.max_answer_chars, **head,
                          "efficiency": bb.efficiency_of(rows).model_dump(),
                          "scenarios": rows}))
    return head["final_match"], head["ci"]


# %% run
run = butterflybench.run(llm=llm)
if run.status != "success":
    raise RuntimeError(f"ButterflyBench did not complete: {run.error_message}")
# value, CI, turn match, wobble, first divergent turn, horizon: as `butterfly score` says them
print(bb.headline_text(MODEL_NAME, [VERDICTS[i] for i in RUN_IDS], scenarios=BY_ID,
                       ask_at=ASK_AT, window_k=None if os.environ.get("BUTTERFLY_SUITE_FILE")
                       else SUITES[SUITE_NAME]["window_k"]))
if CODE_TRACK:  # settings broken per turn, the sandbox: as `butterfly score` prints them
    print(ct.code_text([VERDICTS[i] for i in RUN_IDS]))  # type: ignore[misc]  # CodeVerdicts
pd.DataFrame([{asked_only(k, ASK_AT) if k in ("first_divergent_turn", "wobble") else k: v[k]
               for k in ("id", "category", "final_match", "first_divergent_turn", "wobble",
                         "abstentions")} for v in (VERDICTS[i] for i in RUN_IDS)])
