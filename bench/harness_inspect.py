"""inspect-ai's side of ``bench/harness.py``: the same multi-turn samples through inspect's
``eval`` with its mock model (``mockllm/model``), one ``generate`` per turn, logs on disk.

Run by ``bench/harness.py`` with the python of a throw-away virtualenv holding inspect-ai (it
imports nothing from butterfly). Reads the samples (JSON: a list of {id, system, answer,
turns}), answers every call with the same spec-sized JSON answer (``answer`` of the first
sample), and prints one JSON line: {"calls": N, "seconds": S, "version": V}.

    python bench/harness_inspect.py SAMPLES.json LOG_DIR MAX_CONNECTIONS
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.solver import Generate, TaskState, solver


@solver
def converse() -> Any:
    """Each turn: append the user's message, then generate (the history grows as ours does)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for text in state.metadata["turns"]:
            state.messages.append(ChatMessageUser(content=text))
            state = await generate(state)
        return state

    return solve


def main() -> None:
    path, log_dir, connections = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    answer = data[0]["answer"]

    def output(*_: Any) -> ModelOutput:
        """A spec-sized answer with its usage given (else the mock counts tokens with
        tiktoken, which downloads its encoding: no network here)."""
        out = ModelOutput.from_content(model="mockllm", content=answer)
        out.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return out

    samples = [Sample(id=d["id"], input=[ChatMessageSystem(content=d["system"])],
                      metadata={"turns": d["turns"]}) for d in data]
    calls = sum(len(d["turns"]) for d in data)
    task = Task(dataset=samples, solver=converse())
    t0 = time.perf_counter()
    model = get_model("mockllm/model", custom_outputs=output)
    logs = eval(task, model=model, log_dir=log_dir, display="none",
                max_connections=connections, max_samples=connections)
    secs = time.perf_counter() - t0
    if logs[0].status != "success":
        raise SystemExit(f"inspect-ai eval ended {logs[0].status}: {logs[0].error}")
    print(json.dumps({"calls": calls, "seconds": secs, "version": version("inspect-ai")}))


if __name__ == "__main__":
    main()
