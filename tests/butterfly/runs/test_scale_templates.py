"""The templates of docs/scale.md, run here as far as this machine allows: the router file is
read by our loader; the Slurm array script, its merge script and the Kubernetes Job's shell
command run with the scheduler's variables set by hand (no Slurm, no cluster), against a
loopback server instead of vLLM, on a 4-scenario suite instead of butterfly-long; their shards
merge into exactly one run's score."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, run_inproc, same_answers
from fakeserver import FakeServer

from butterfly.models.router import load_router
from butterfly.suite.load import dumps_suite, load_suite
from oracle import canonical_initial

DOC = ROOT / "docs" / "scale.md"
SLURM_URL = "http://vllm.cluster.local:8000/v1"
K8S_URL = "http://vllm.default.svc.cluster.local:8000/v1"
ENV = {"OPENAI_API_KEY": "sk-no-key", "BUTTERFLY_BACKOFF_BASE": "0.01",
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "tiny.jsonl"
    path.write_text(dumps_suite(load_suite(ROOT / "scenarios" / "butterfly-long.jsonl")[:4]))
    return path


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer(lambda body: json.dumps(canonical_initial())) as srv:
        yield srv


def _sh(script: str, *argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*argv, "-c", script], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **ENV, **env}, timeout=300, check=False)
    assert r.returncode == 0, (script, r.stdout[-2000:], r.stderr[-2000:])
    return r


def _score(run: Path) -> dict[str, Any]:
    r = run_inproc("score", str(run), "--json")
    assert r.returncode == 0, r.stderr
    return {k: v for k, v in same_answers(json.loads(r.stdout)).items() if k != "usage"}


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory, tiny: Path,
           server: FakeServer) -> dict[str, Any]:
    """The sweep as one run: what the merged shards must score (played once for both)."""
    tmp = tmp_path_factory.mktemp("single")
    r = run_inproc("run", "--model", "openai/Qwen/Qwen2.5-7B-Instruct", "--api-base",
                   server.api_base, "--suite", str(tiny), "--layouts", "E,Q,H", "--repeats",
                   "3", "--out", str(tmp / "single"), "--no-cache", env=ENV)
    assert r.returncode == 0, r.stderr
    return _score(tmp / "single")


def test_the_router_template_is_a_router_file(tmp_path: Path) -> None:
    (router,) = [b for b in _blocks("yaml") if "model_list" in b]
    path = tmp_path / "router.yaml"
    path.write_text(router)
    config = load_router(path, "qwen")
    assert [d["litellm_params"]["api_base"] for d in config.group] == [
        "http://vllm-0.vllm:8000/v1", "http://vllm-1.vllm:8000/v1"]
    assert config.settings["routing_strategy"] == "simple-shuffle"


def test_the_slurm_array_and_its_merge_give_one_runs_score(
        tmp_path: Path, tiny: Path, server: FakeServer, single: dict[str, Any]) -> None:
    sweep_script, merge_script = _blocks("bash")
    sweep = tmp_path / "qwen-long"
    sweep.mkdir()
    script = (sweep_script.replace("/shared/butterfly/qwen-long", str(sweep))
              .replace(SLURM_URL, server.api_base)
              .replace("--suite butterfly-long", f"--suite {tiny}"))
    assert script != sweep_script and tiny.name in script and server.api_base in script
    for i in (1, 2):
        _sh(script, "bash", env={"SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_ID": str(i)})
    assert sorted(p.name for p in sweep.iterdir()) == [
        "cache-1.sqlite", "cache-2.sqlite", "shard-1", "shard-2"]
    _sh(merge_script.replace("/shared/butterfly/qwen-long", str(sweep)), "bash", env={})
    assert _score(sweep / "merged") == single


def test_the_kubernetes_indexed_job_gives_one_runs_score(
        tmp_path: Path, tiny: Path, server: FakeServer, single: dict[str, Any]) -> None:
    (job,) = [yaml.safe_load(b) for b in _blocks("yaml") if "kind: Job" in b]
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    shards = spec["completions"]
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/sh", "-c"]
    env = {e["name"]: e["value"] for e in container["env"]}
    (mount,) = container["volumeMounts"]
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    command = (container["args"][0].replace(mount["mountPath"], str(sweep))
               .replace(K8S_URL, server.api_base)
               .replace("--suite butterfly-long", f"--suite {tiny}"))
    assert f"/{shards}" in command and tiny.name in command
    for index in range(shards):  # what each pod runs, JOB_COMPLETION_INDEX set by Kubernetes
        _sh(command, "sh", env={**env, "JOB_COMPLETION_INDEX": str(index)})
    merged = tmp_path / "merged"
    r = run_inproc("merge", *(str(sweep / f"shard-{i}") for i in range(1, shards + 1)),
                   "--out", str(merged))
    assert r.returncode == 0, r.stderr
    assert _score(merged) == single
