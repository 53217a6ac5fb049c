"""The Kaggle notebook: built from the package, equal to a fresh build, executed headless.

Three levels: the build (fast, no extra dependency); the notebook executed with nbclient
against the loopback fake server, side by side with ``butterfly run`` on the same server
(the request bodies compared field by field, faults injected); and once for real against the
embedded SmolLM2, where the raw answers and the verdicts must equal the CLI's.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_inproc
from fakeserver import FakeServer
from notebook_kernel import SharedKernel

from butterfly.core.asking import ASKED_NOTE
from butterfly.core.metrics import aggregate, score_scenario
from butterfly.core.prompts import Message, restate_message
from butterfly.core.wire import exception_kind
from butterfly.kaggle import notebook
from butterfly.kaggle import runner as bb
from butterfly.suite.load import load_suite
from oracle import replay

NOTEBOOK = ROOT / notebook.NOTEBOOK
SUITE = ROOT / notebook.SUITE
SCENARIOS = {s.id: s for s in load_suite(SUITE)}
FEW = ("gen-drop-01", "gen-drop-03", "hw-indirect-same-format")
"""1, 2 and 3 turns; two generated scenarios and a handwritten one (6 calls)."""
REAL = ("gen-drop-03",)
"""What the embedded model answers twice (notebook, then CLI): a 2-turn scenario, so the second
call carries the first answer in its history; 2 calls each way (make test's time budget: 4
calls each way took 153 s of it; the fake-server tests play FEW)."""


def _cells() -> list[dict[str, Any]]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]  # type: ignore[no-any-return]


# -- the build --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_build() -> str:
    """A build of the notebook from this tree, made once for the tests that compare with it."""
    return notebook.build()


def test_committed_notebook_is_a_fresh_build(fresh_build: str) -> None:
    assert NOTEBOOK.read_text(encoding="utf-8") == fresh_build, (
        "notebooks/butterflybench.ipynb differs from a fresh build: run "
        "`butterfly notebook build --out notebooks/butterflybench.ipynb` and commit it"
    )


def test_build_is_deterministic(fresh_build: str) -> None:
    assert notebook.build() == fresh_build


def test_code_cells_are_the_package_sources_verbatim() -> None:
    bodies: dict[str, str] = {}
    for cell in _cells():
        text = "".join(cell["source"])
        first, _, body = text.partition("\n")
        if first.startswith(("%%butterfly_module ", "%%butterfly_data ")):
            bodies[first.split(" ", 1)[1]] = body
        assert cell.get("outputs", []) == [] and cell.get("execution_count") is None
    assert list(bodies) == [*notebook.MODULES,
                            *(x.path for x in notebook.frozen_suites(ROOT))]
    assert [*bodies][len(notebook.MODULES):][:2] == [notebook.SUITE, notebook.LONG]
    for rel, body in bodies.items():
        assert body == (ROOT / rel).read_text(encoding="utf-8"), rel


def test_saved_task_description_is_its_docstring_and_short() -> None:
    code = "".join("".join(c["source"]) for c in _cells()
                   if c["cell_type"] == "code" and "def butterflybench(" in "".join(c["source"]))
    tree = ast.parse(code)
    outer = next(n for n in tree.body
                 if isinstance(n, ast.FunctionDef) and n.name == "butterflybench")
    doc = ast.get_docstring(outer)
    assert doc == notebook.DESCRIPTION
    assert len(doc) < 255
    assert "%choose butterflybench" in "".join(_cells()[-1]["source"])


def test_an_import_outside_the_inlined_modules_fails_the_build() -> None:
    sources = {p: (ROOT / p).read_text(encoding="utf-8") for p in notebook.MODULES}
    sources["butterfly/core/metrics.py"] = "from butterfly.runs.play import turns\n" + sources[
        "butterfly/core/metrics.py"]
    with pytest.raises(notebook.NotebookBuildError,
                       match=r"metrics.py:1: imports butterfly\.runs\.play"):
        notebook.check_imports(sources)
    notebook.check_imports({p: (ROOT / p).read_text(encoding="utf-8")
                            for p in notebook.MODULES})


def test_cli_build_and_check_import_neither_litellm_nor_kbench(tmp_path: Path,
                                                              fresh_build: str) -> None:
    out = tmp_path / "nb.ipynb"
    code = (
        "import sys\n"
        "from butterfly.cli import main\n"
        f"assert main(['notebook', 'build', '--out', {str(out)!r}]) == 0\n"
        f"assert main(['notebook', 'build', '--check', '--out', {str(out)!r}]) == 0\n"
        "bad = [m for m in ('litellm', 'kaggle_benchmarks') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_text(encoding="utf-8") == fresh_build
    out.write_text(out.read_text(encoding="utf-8").replace("ButterflyBench", "Butterfly"))
    r = run_inproc("notebook", "build", "--check", "--out", str(out))
    assert r.returncode == 1 and "differs from a fresh build" in r.stderr


# -- kaggle_run: the loop, the retries, the verdicts (no kaggle-benchmarks needed) ---------------


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


class APIConnectionError(Exception):
    """Named like openai's: no status, no answer."""


@pytest.mark.parametrize(("exc", "transient"), [
    (_Status(500), True), (_Status(503), True), (_Status(429), True), (_Status(408), True),
    (_Status(400), False), (_Status(401), False), (_Status(403), False), (_Status(404), False),
    (APIConnectionError("reset"), True), (TimeoutError(), True), (ConnectionResetError(), True),
    (ValueError("bad"), False), (KeyError("x"), False),
])  # fmt: skip
def test_transient_errors(exc: Exception, transient: bool) -> None:
    assert (exception_kind(exc) is not None) is transient  # what the door retries


def test_retries_wait_then_give_up_as_a_provider_failure() -> None:
    waits: list[float] = []
    calls = iter([_Status(503), _Status(429), "answer"])

    def call() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert bb.call_with_retries(call, sleep=waits.append, log=None) == "answer"
    assert waits == [2.0, 4.0]

    waits.clear()

    def down() -> str:
        raise _Status(502)

    with pytest.raises(bb.ProviderFailure, match="no answer after 6 attempts"):
        bb.call_with_retries(down, sleep=waits.append, log=None)
    assert waits == [2.0, 4.0, 8.0, 16.0, 32.0]

    def refused() -> str:
        raise _Status(403)

    waits.clear()
    with pytest.raises(_Status):
        bb.call_with_retries(refused, sleep=waits.append, log=None)
    assert waits == []


def test_play_sends_the_cli_conversation_and_retries_without_repeating_the_user() -> None:
    s = SCENARIOS["hw-indirect-same-format"]
    seen: list[list[Message]] = []
    failures = iter([True, False, False, True, False])

    def respond(chat: list[Message]) -> bb.Answer:
        if next(failures):
            raise _Status(500)
        seen.append(chat)
        return bb.Answer(f"answer {len(seen)}", 3)

    answers = bb.play(s, respond,
                      retries=lambda call: bb.call_with_retries(call, sleep=lambda _: None,
                                                                log=None))
    assert [a.text for a in answers] == ["answer 1", "answer 2", "answer 3"]
    for t, sent in enumerate(seen, 1):
        assert sent == bb.messages_for(s, t, [f"answer {i}" for i in range(1, t)])


def test_verdict_and_headline() -> None:
    s = SCENARIOS["gen-drop-03"]
    specs = replay(s)
    right = [bb.Answer(json.dumps(x), 200) for x in specs[1:]]
    v = bb.verdict(s, right, 1024)
    assert v["final_match"] and v["first_divergent_turn"] is None and v["abstentions"] == 0
    cut = [*right[:-1], bb.Answer(right[-1].text, 1024)]  # used the whole budget: cut off
    v = bb.verdict(s, cut, 1024)
    assert not v["final_match"] and v["answers"][-1]["abstention"] == "truncated"
    scores = [score_scenario(s, [x if i < 14 else specs[0] for x in specs[1:]])
              for i in range(40)]  # 14 final matches of 40, each its own scenario
    head = bb.headline(aggregate([dataclasses.replace(x, id=f"s{i}")
                                  for i, x in enumerate(scores)]))
    assert head["final_match"] == 14 / 40 and head["final_matches"] == 14
    lo, hi = head["interval"]
    assert 0.2 < lo < 0.35 < hi < 0.52
    assert head["ci"] == pytest.approx(max(0.35 - lo, hi - 0.35))


# -- the notebook executed headless -------------------------------------------------------------


def _need_kbench() -> None:
    pytest.importorskip("kaggle_benchmarks", reason="pip install -e '.[kaggle]'")
    pytest.importorskip("nbclient", reason="pip install -e '.[kaggle]'")


def execute(kernel: SharedKernel, cwd: Path, env: dict[str, str], timeout: float = 600,
            path: Path = NOTEBOOK) -> tuple[Any, float]:
    """Execute the committed notebook (or the one at ``path``), every cell, on ``kernel`` (the
    ``notebook_kernel`` fixture) as a fresh kernel with ``env`` would; cwd holds its files."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    seconds = kernel.execute(nb, cwd, {"KAGGLE_BENCHMARK_MAX_DESCRIPTION_LENGTH": "254",
                                       "KAGGLE_BENCHMARK_MAX_NAME_LENGTH": "100", **env},
                             timeout)
    return nb, seconds


def _notebook_env(api_base: str, model: str, ids: tuple[str, ...], max_tokens: int
                  ) -> dict[str, str]:
    return {"BUTTERFLY_OPENAI_BASE_URL": api_base, "BUTTERFLY_OPENAI_MODEL": model,
            "BUTTERFLY_SCENARIOS": ",".join(ids), "BUTTERFLY_MAX_TOKENS": str(max_tokens),
            "BUTTERFLY_N_JOBS": "1"}


def _subset(tmp_path: Path, ids: tuple[str, ...]) -> Path:
    path = tmp_path / "few.jsonl"
    path.write_text("".join(SCENARIOS[i].to_json() + "\n" for i in ids), encoding="utf-8")
    return path


def _cli_run(tmp_path: Path, model: str, api_base: str, ids: tuple[str, ...], max_tokens: int
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``butterfly run`` on ``ids`` then ``score --json``, in this process: (the score, the
    call records)."""
    out = tmp_path / "cli-run"
    r = run_inproc("run", "--model", model, "--api-base", api_base, "--suite",
                   str(_subset(tmp_path, ids)), "--protocol", "json", "--max-tokens",
                   str(max_tokens), "--no-cache", "--out", str(out), "--retries", "4",
                   env={"BUTTERFLY_BACKOFF_BASE": "0.01"})
    assert r.returncode == 0, r.stderr
    s = run_inproc("score", str(out), "--json")
    assert s.returncode == 0, s.stderr
    records = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
    return json.loads(s.stdout), records


def _conversation_key(body: dict[str, Any]) -> tuple[str, int]:
    """(scenario id, turn) of a request, from its first user message and its user count."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    sid = next(i for i, s in SCENARIOS.items()
               if bb.messages_for(s, 1, [])[-1]["content"] == users[0])
    return sid, len(users)


def oracle_or_noop(noop: set[str]) -> Callable[[dict[str, Any]], str]:
    """The oracle's spec as the answer, except the initial spec for scenarios in ``noop``."""

    def respond(body: dict[str, Any]) -> str:
        sid, t = _conversation_key(body)
        specs = replay(SCENARIOS[sid])
        return json.dumps(specs[0] if sid in noop else specs[t], indent=1)

    return respond


@pytest.fixture
def cwd(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "working"
    d.mkdir()
    yield d


ANSWER_KEYS = ("model", "messages", "temperature", "seed", "max_tokens")


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_notebook_against_the_fake_server_sends_what_the_cli_sends(
        tmp_path: Path, cwd: Path, notebook_kernel: SharedKernel) -> None:
    _need_kbench()
    # a 500 and a 429 on the notebook's first and fourth calls: retried inside the task
    with FakeServer(oracle_or_noop({"gen-drop-03"}), faults=["500", "ok", "ok", "429"]) as srv:
        nb, _ = execute(notebook_kernel, cwd, _notebook_env(srv.api_base, "fake", FEW, 300))
        nb_bodies = list(srv.requests)
        assert [f for _, f in srv.fault_log[:4]] == ["500", "ok", "ok", "429"]
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert [v["id"] for v in verdicts["scenarios"]] == list(FEW)
    assert [v["final_match"] for v in verdicts["scenarios"]] == [True, False, True]
    assert verdicts["final_matches"] == 2 and verdicts["n_scenarios"] == 3
    task = json.loads((cwd / "ButterflyBench.task.json").read_text())
    assert task["name"] == "ButterflyBench" and task["description"] == notebook.DESCRIPTION
    assert not (cwd / "ButterflyBench_scenario.task.json").exists()
    run = json.loads(next(cwd.glob("ButterflyBench-*.run.json")).read_text())
    result = run["results"][0]["numericResult"]
    assert result["value"] == pytest.approx(2 / 3)
    assert result["confidenceInterval"] == pytest.approx(verdicts["ci"])
    shown = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "retrying in 2 s" in shown and "final match 66.7% (2/3)" in shown

    with FakeServer(oracle_or_noop({"gen-drop-03"})) as srv:
        score, _ = _cli_run(tmp_path, "openai/fake", srv.api_base, FEW, 300)
        cli_bodies = list(srv.requests)
    # the notebook's retried calls sent the same body twice: keep the last of each turn
    nb_by_turn = {_conversation_key(b): b for b in nb_bodies}
    cli_by_turn = {_conversation_key(b): b for b in cli_bodies}
    assert len(nb_bodies) == len(cli_bodies) + 2
    assert sorted(nb_by_turn) == sorted(cli_by_turn)
    assert len(cli_by_turn) == sum(len(SCENARIOS[i].turns) for i in FEW)
    for key, cli in cli_by_turn.items():
        mine = nb_by_turn[key]
        assert set(mine) == set(cli) == set(ANSWER_KEYS), key  # nothing else is sent
        for field in ANSWER_KEYS:
            assert mine[field] == cli[field], (key, field)  # temperature: 0 and 0.0
    cli_final = {s["id"]: s["final_match"] for s in score["scenarios"]}
    assert cli_final == {v["id"]: v["final_match"] for v in verdicts["scenarios"]}


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
@pytest.mark.parametrize("batch", [False, True], ids=["interactive", "batch"])
def test_a_refused_call_is_a_provider_error_and_no_score(
        cwd: Path, batch: bool, notebook_kernel: SharedKernel) -> None:
    """Interactive: the outer task raises. Batch (a saved version on Kaggle,
    KAGGLE_KERNEL_RUN_TYPE=batch): kaggle-benchmarks records the outer run as errored, and the
    run cell raises."""
    _need_kbench()
    from nbclient.exceptions import CellExecutionError

    def faults(_index: int, body: dict[str, Any]) -> str:
        # the quota refusal the write-up met: not retried, the scenario gets no verdict
        return "403" if _conversation_key(body)[0] == "gen-drop-03" else "ok"

    with FakeServer(oracle_or_noop(set()), faults=faults) as srv, \
            pytest.raises(CellExecutionError) as info:
        env = _notebook_env(srv.api_base, "fake", FEW, 300)
        if batch:
            env["KAGGLE_KERNEL_RUN_TYPE"] = "batch"
        execute(notebook_kernel, cwd, env)
    assert "provider errors, not model failures" in str(info.value)
    assert "gen-drop-03" in str(info.value) and "403" in str(info.value)
    assert not (cwd / "butterflybench_verdicts.json").exists()
    if batch:
        run = json.loads(next(cwd.glob("ButterflyBench-*.run.json")).read_text())
        assert run["state"] == "BENCHMARK_TASK_RUN_STATE_ERRORED"
        assert "numericResult" not in run["results"][0]


# -- once for real: the embedded SmolLM2 behind both ---------------------------------------------


def other_llama_servers() -> list[int]:
    """Pids of embedded llama.cpp servers already running on this machine (Linux /proc)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"butterfly/embedded.py") for part in cmd):
            pids.append(int(proc.name))
    return sorted(pids)



REAL_NOTEBOOK = os.environ.get("BUTTERFLY_REAL_NOTEBOOK") == "1"
"""The notebook on the embedded model is checked by ``bench/notebook_real.py``, which sets
``BUTTERFLY_REAL_NOTEBOOK=1``: about 90 s beside make test's other worker (llama.cpp slows to a
few tokens a second there), which kept make test over its 10 minutes. ``make test`` checks the
pipeline for real once, through the CLI (tests/butterfly/runs/test_real_model.py), and the
notebook against a fake server (the tests above: what it sends is what the CLI sends)."""


@pytest.mark.skipif(not REAL_NOTEBOOK, reason="bench/notebook_real.py runs it (docs/install.md)")
@pytest.mark.timeout(1200)
@pytest.mark.xdist_group("llama")  # one llama.cpp server at a time (tests/.../test_embedded.py)
def test_notebook_on_smollm2_gives_the_cli_answers(tmp_path: Path, cwd: Path,
                                                  notebook_kernel: SharedKernel) -> None:
    """The embedded server answers the notebook (kaggle-benchmarks' OpenAI actor), then
    ``butterfly run --model openai/<alias> --api-base``: same messages, temperature 0, seed 0,
    max tokens, no response_format, so the raw answers and the verdicts must be equal.

    The server is started afresh for the CLI (one at a time, never two): llama.cpp's prompt
    cache makes an answer depend on what the slot held before (a prefix taken from the cache
    is computed in other batch sizes than a fresh one, and at temperature 0 a near-tie can
    flip). On one server, the CLI's first call met the notebook's last conversation in the
    cache and its answer differed from the notebook's first (cold) one; the same request with
    ``cache_prompt: false`` gave the cold answer again. Two cold starts fed the same requests
    in the same order hold the same cache at every call."""
    _need_kbench()
    from butterfly.models.embedded import EmbeddedModelError, EmbeddedServer, resolve_gguf

    busy = other_llama_servers()
    if busy:  # two llama.cpp servers on two cores collapse to a few tokens/s each
        pytest.skip(f"another embedded llama.cpp server is running (pid {busy[0]})")

    try:
        gguf = resolve_gguf("local/smollm2")
    except EmbeddedModelError as e:  # pragma: no cover - environment without the wheel
        pytest.skip(str(e))
    max_tokens = 300
    t0 = time.perf_counter()
    with EmbeddedServer(gguf, parallel=1) as srv:
        env = _notebook_env(srv.api_base, srv.model_alias, REAL, max_tokens)
        _, nb_seconds = execute(notebook_kernel, cwd, env, timeout=900)
    t1 = time.perf_counter()
    with EmbeddedServer(gguf, parallel=1) as srv:
        score, records = _cli_run(tmp_path, f"openai/{srv.model_alias}", srv.api_base, REAL,
                                  max_tokens)
    cli_seconds = time.perf_counter() - t1
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    nb_raw = {(v["id"], a["turn"]): a["raw"] for v in verdicts["scenarios"]
              for a in v["answers"]}
    cli_raw = {(r["scenario"], r["turn"]): r["raw"] for r in records if r["error"] is None}
    assert sorted(nb_raw) == sorted(cli_raw)
    assert all(nb_raw.values()), "the model answered every turn"
    differ = [k for k in cli_raw if nb_raw[k] != cli_raw[k]]
    assert not differ, f"raw answers differ at {differ}"
    cli_verdicts = {s["id"]: (s["final_match"], s["first_divergent_turn"], s["abstentions"])
                    for s in score["scenarios"]}
    nb_verdicts = {v["id"]: (v["final_match"], v["first_divergent_turn"], v["abstentions"])
                   for v in verdicts["scenarios"]}
    assert nb_verdicts == cli_verdicts
    report = {"notebook_s": round(nb_seconds, 1), "cli_s": round(cli_seconds, 1),
              "calls": len(cli_raw), "verdicts": nb_verdicts,
              "since_start_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(report))


def test_the_long_slice_is_sized_by_its_calls() -> None:
    """SUITE_NAME = "butterfly-long" plays the first LONG_PER_LENGTH chains of each length."""
    long = bb.load_scenarios((ROOT / "scenarios" / "butterfly-long.jsonl").read_text())
    two = bb.long_slice(long, 2)
    assert [len(s.turns) for s in two] == [5, 5, 10, 10, 20, 20, 40, 40, 80, 80]
    assert sum(len(s.turns) for s in two) == 310
    assert len(bb.long_slice(long, 12)) == 60
    text = (ROOT / notebook.NOTEBOOK).read_text()
    assert "%%butterfly_data scenarios/butterfly-long.jsonl" in text
    assert 'SUITE_NAME = os.environ.get(\\"BUTTERFLY_SUITE\\", \\"butterfly-40\\")' in text


def test_model_args_and_no_seed_for_the_notebook() -> None:
    assert bb.model_args(None) == {} and bb.model_args("  ") == {}
    text = '{"top_p": 0.5, "extra_body": {"chat_template_kwargs": {"x": 1}}}'
    args = bb.model_args(text)
    assert bb.api_params(300, {"BUTTERFLY_MODEL_ARGS": text}) == {"max_tokens": 300, **args}
    assert bb.api_params(300, {}) == {"max_tokens": 300}
    with pytest.raises(ValueError, match="max_tokens"):
        bb.api_params(300, {"BUTTERFLY_MODEL_ARGS": '{"max_tokens": 5}'})
    with pytest.raises(ValueError, match="one JSON object"):
        bb.model_args("[1]")
    assert bb.seed_args({}) == {"seed": bb.SEED} and bb.seed_args({"BUTTERFLY_NO_SEED": "1"}) == {}


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_notebook_sends_the_cli_model_arguments(tmp_path: Path, cwd: Path,
                                                notebook_kernel: SharedKernel) -> None:
    """BUTTERFLY_MODEL_ARGS / BUTTERFLY_NO_SEED send what -M ... --no-seed sends."""
    _need_kbench()
    ids = FEW[:1]
    args = {"top_p": 0.5, "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    env = {**_notebook_env("", "fake", ids, 300), "BUTTERFLY_MODEL_ARGS": json.dumps(args),
           "BUTTERFLY_NO_SEED": "1"}
    with FakeServer(oracle_or_noop(set())) as srv:
        env["BUTTERFLY_OPENAI_BASE_URL"] = srv.api_base
        execute(notebook_kernel, cwd, env)
        nb_bodies = list(srv.requests)
    with FakeServer(oracle_or_noop(set())) as srv:
        out = tmp_path / "cli"
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                    str(_subset(tmp_path, ids)), "--protocol", "json", "--max-tokens", "300",
                       "--no-cache", "--out", str(out), "-M", "top_p=0.5", "-M",
                       "extra_body=" + json.dumps(args["extra_body"]), "--no-seed")
        assert r.returncode == 0, r.stderr
        cli_bodies = list(srv.requests)
    assert len(nb_bodies) == len(cli_bodies) > 0
    for mine, cli in zip(nb_bodies, cli_bodies, strict=True):
        for body in (mine, cli):
            assert "seed" not in body and body["top_p"] == 0.5
            assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert mine["messages"] == cli["messages"]
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert verdicts["api_params"] == {"max_tokens": 300, **args} and verdicts["seed"] is None


LONG_IDS = ("long-005-01", "long-010-01", "long-020-01")
"""Chains of 5, 10 and 20 turns of butterfly-long, asked by default at 5, 10, 20 (6 calls)."""


def _ask_key(body: dict[str, Any]) -> tuple[str, int]:
    """(scenario id, turn) of a restate-mode ask, from its one user message."""
    long = {s.id: s for s in load_suite(ROOT / notebook.LONG) if s.id in LONG_IDS}
    user = body["messages"][-1]["content"]
    return next((s.id, t) for s in long.values() for t in range(1, len(s.turns) + 1)
                if restate_message(s, t, "E", "json") == user)


def _asked_answer(body: dict[str, Any]) -> str:
    """The oracle's spec, except the initial spec at turn 10 (the 20-turn chain wobbles)."""
    sid, t = _ask_key(body)
    specs = replay(next(s for s in load_suite(ROOT / notebook.LONG) if s.id == sid))
    return json.dumps(specs[0] if t == 10 else specs[t])


@pytest.mark.xdist_group("notebook-kernel")  # one worker, one kernel (tests/conftest.py)
@pytest.mark.timeout(600)
def test_notebook_asks_at_the_suites_turns_as_the_cli_does(
        tmp_path: Path, cwd: Path, notebook_kernel: SharedKernel) -> None:
    """BUTTERFLY_MODE=restate on butterfly-long asks at its manifest's points: each ask one
    stateless call with the CLI's body, and the verdicts are ``butterfly score``'s."""
    _need_kbench()
    env = {**_notebook_env("", "fake", LONG_IDS, 300), "BUTTERFLY_SUITE": "butterfly-long",
           "BUTTERFLY_MODE": "restate"}
    with FakeServer(_asked_answer) as srv:
        env["BUTTERFLY_OPENAI_BASE_URL"] = srv.api_base
        nb, _ = execute(notebook_kernel, cwd, env)
        mine = {_ask_key(b): b for b in srv.requests}
        assert len(srv.requests) == 6
    suite = tmp_path / "chains.jsonl"
    long = {s.id: s for s in load_suite(ROOT / notebook.LONG)}
    suite.write_text("".join(long[i].to_json() + "\n" for i in LONG_IDS), encoding="utf-8")
    with FakeServer(_asked_answer) as srv:
        out = tmp_path / "cli"
        r = run_inproc("run", "--model", "openai/fake", "--api-base", srv.api_base, "--suite",
                    str(suite), "--protocol", "json", "--max-tokens", "300", "--no-cache",
                       "--mode", "restate", "--ask-at", "5,10,20,40,80", "--out", str(out))
        assert r.returncode == 0, r.stderr
        theirs = {_ask_key(b): b for b in srv.requests}
    assert sorted(mine) == sorted(theirs) == [
        ("long-005-01", 5), ("long-010-01", 5), ("long-010-01", 10), ("long-020-01", 5),
        ("long-020-01", 10), ("long-020-01", 20)]
    for key, cli in theirs.items():
        assert set(mine[key]) == set(cli) == set(ANSWER_KEYS), key
        for field in ANSWER_KEYS:
            assert mine[key][field] == cli[field], (key, field)
    s = run_inproc("score", str(out), "--json")
    assert s.returncode == 0, s.stderr
    score = json.loads(s.stdout)
    verdicts = json.loads((cwd / "butterflybench_verdicts.json").read_text())
    assert verdicts["mode"] == "restate" and verdicts["ask_at"] == [5, 10, 20, 40, 80]
    assert {c["id"]: (c["final_match"], c["first_divergent_turn"], c["wobble"])
            for c in score["scenarios"]} == {
        v["id"]: (v["final_match"], v["first_divergent_turn"], v["wobble"])
        for v in verdicts["scenarios"]} == {
        "long-005-01": (True, None, False), "long-010-01": (False, 10, False),
        "long-020-01": (True, 10, True)}
    shown = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "butterfly-long (spec track, restate mode): 3 conversations, 6 calls" in shown
    assert "estimate (restate mode asked at turns 5, 10, 20, 40, 80 and the last): 6 calls" \
        in shown
    assert f"wobble 1 of 3 conversations ({ASKED_NOTE})" in shown
