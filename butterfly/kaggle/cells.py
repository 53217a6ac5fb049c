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
except ImportError:  # only the lenient parser calls it; this notebook parses "structured"
    def _no_repair(*args: object, **kwargs: object) -> None:
        raise ImportError("json_repair is not installed")

    sys.modules["json_repair"] = types.ModuleType("json_repair")
    sys.modules["json_repair"].__dict__["loads"] = _no_repair

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
import hashlib
import json

from butterfly.core.asking import asked_line, asked_only
from butterfly.kaggle import code_track as ct
from butterfly.kaggle import restate as rs
from butterfly.kaggle import runner as bb

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
# The frozen suites in this notebook: the sha256, the track and the default ask points of each.
SUITES: dict[str, rs.SuiteEntry] = json.loads('@SUITES@')
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
if TRACK not in ct.TRACKS:
    raise RuntimeError(f"track {TRACK!r}: the notebook plays {' or '.join(ct.TRACKS)}")
MODE = rs.mode_of(MODE)
if MODE != "chat" and TRACK == "code":
    raise RuntimeError("the code track plays chat mode only: set MODE = \"chat\"")
ASK_AT = rs.ask_at_of(ASK_AT_TEXT, MODE, None if os.environ.get("BUTTERFLY_SUITE_FILE")
                      else SUITES[SUITE_NAME]["ask_at"])
SCENARIOS = bb.load_scenarios(SUITE)
BY_ID = {s.id: s for s in SCENARIOS}
RUN_IDS = [i.strip() for i in os.environ.get("BUTTERFLY_SCENARIOS", "").split(",") if i.strip()]
if not RUN_IDS and SUITE_NAME == "butterfly-long":
    RUN_IDS = [s.id for s in bb.long_slice(SCENARIOS, LONG_PER_LENGTH)]
RUN_IDS = RUN_IDS or [s.id for s in SCENARIOS]
print(f"{SUITE_NAME} ({TRACK} track, {MODE} mode): {len(RUN_IDS)} conversations, "
      f"{sum(len(bb.asked_of(BY_ID[i], ASK_AT)) for i in RUN_IDS)} calls")
if ASK_AT is not None:  # as `butterfly score` says it
    print(asked_line(ASK_AT))
if TRACK == "code":  # model-written programs run in a child process, never in this kernel
    print(ct.use_fallback_sandbox())
    OBSERVE = ct.observe_cached()
MAX_TOKENS = int(os.environ.get("BUTTERFLY_MAX_TOKENS", bb.MAX_TOKENS))
N_JOBS = int(os.environ.get("BUTTERFLY_N_JOBS", "4"))  # scenarios played at once
SEED_ARGS = bb.seed_args(os.environ)  # none with BUTTERFLY_NO_SEED=1 (`butterfly run --no-seed`)
# What llm.prompt(..., extra_api_params=...) passes: the output bound (else a quota 403), -M args
EXTRA_API_PARAMS = bb.api_params(MAX_TOKENS, os.environ)
print(f"{len(RUN_IDS)} of {len(SCENARIOS)} scenarios, {EXTRA_API_PARAMS}, "
      f"temperature {bb.TEMPERATURE}, {SEED_ARGS or 'no seed'}, protocol {bb.PROTOCOL}")


# %% estimate
# What this run will send, before it sends anything: the estimate of `butterfly run --dry-run`
# (docs/cost.md), made per scenario when the notebook was built (tools/kaggle_quota.py), summed
# over the scenarios chosen above, for a few models (docs/kaggle.md, "Sized to the daily quota").
ESTIMATE = json.loads('@ESTIMATE@')
_what, _rows = rs.estimate_rows(ESTIMATE, SUITE_NAME, MODE, ASK_AT)
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
          "suite in chat mode, restate mode, and restate mode asked at its default ask points)")


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


def ask_in_a_new_chat(messages: list[dict[str, str]], respond: Any) -> bb.Answer:
    """One stateless call (restate mode): a chat of its own holding only these messages."""
    with kbench.chats.new("ask"):
        for m in messages:
            (kbench.system if m["role"] == "system" else kbench.user).send(m["content"])
        return respond()  # type: ignore[no-any-return]


@kbench.task(name="@TASK@ scenario", store_task=False)
def butterflybench_scenario(llm: Any, scenario_id: str) -> bool:
    """One ButterflyBench conversation: passes when the final spec equals the oracle's."""
    scenario = BY_ID[scenario_id]
    code = TRACK == "code"
    if MODE == "chat":  # restate mode: each ask in a chat of its own, below
        kbench.system.send(ct.system_text() if code else bb.system_text(scenario))
    # As llm.prompt() does: temperature only for a model that takes it.
    request = {**SEED_ARGS, "reasoning": None,
               "temperature": bb.TEMPERATURE if llm.support_temperature else None}

    def respond() -> bb.Answer:
        # llm.prompt(text, ...) is kbench.user.send(text) then this call; split, a retry asks
        # again with the same history instead of repeating the user's message.
        message = llm.respond(schema=str, **request, **EXTRA_API_PARAMS)
        return bb.Answer(message.content, message.usage.output_tokens)

    if MODE == "restate":  # each asked turn one stateless call; unasked turns: no call
        answers = rs.play_asked(scenario, ASK_AT, lambda m: ask_in_a_new_chat(m, respond))
        VERDICTS[scenario_id] = bb.verdict(scenario, answers, MAX_TOKENS, ASK_AT)
    elif code:  # the program's behaviour is observed in the sandbox, then scored
        answers = ct.play_code(scenario, kbench.user.send, respond)
        VERDICTS[scenario_id] = ct.code_verdict(scenario, answers, MAX_TOKENS, OBSERVE)
    else:
        answers = bb.play(scenario, kbench.user.send, respond)  # retries transient errors
        VERDICTS[scenario_id] = bb.verdict(scenario, answers, MAX_TOKENS)
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
    head = bb.headline([r["final_match"] for r in rows])
    with open("butterflybench_verdicts.json", "w", encoding="utf-8") as f:
        f.write(bb.dumps({"model": MODEL_NAME, "max_tokens": MAX_TOKENS,
                          "api_params": EXTRA_API_PARAMS,
                          "temperature": bb.TEMPERATURE, "seed": SEED_ARGS.get("seed"),
                          "suite": SUITE_NAME, "track": TRACK, "mode": MODE,
                          "ask_at": None if ASK_AT is None else list(ASK_AT),
                          "protocol": None if TRACK == "code" else bb.PROTOCOL,
                          "parse": None if TRACK == "code" else bb.PARSE, **head,
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
if TRACK == "code":  # settings broken per turn, the sandbox: as `butterfly score` prints them
    print(ct.code_text([VERDICTS[i] for i in RUN_IDS]))  # type: ignore[misc]  # CodeVerdicts
pd.DataFrame([{asked_only(k, ASK_AT) if k in ("first_divergent_turn", "wobble") else k: v[k]
               for k in ("id", "category", "final_match", "first_divergent_turn", "wobble",
                         "abstentions")} for v in (VERDICTS[i] for i in RUN_IDS)])
