"""Our scripted agents as an inspect model provider: ``--model butterfly/script/NAME``.

``butterfly/script/oracle``, ``.../lifo``, ``.../noop``, ``.../last-edit``,
``.../noisy:p=0.1``, ``.../drift:p=0.05``, ... answer exactly as ``butterfly run --model
script/NAME`` does: the call is handed to butterfly's own :class:`ScriptedProvider`. Which
scenario and turn a call is, and its seed (the repeat's, and under self-consistency the
sample's: ``Ask.seed``), are read from the metadata of the last user message (``"butterfly"``:
the solver puts them there); a call without them is refused.

Nothing is generated, so a call reports no usage, as in our runs; ``count_text_tokens`` (which
inspect may call, to compact or to limit tokens) counts offline with butterfly's counter, never
with a tokenizer downloaded on first use.
"""

from __future__ import annotations

import functools
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from butterfly.code.agents import CODE_AGENTS
from butterfly.core.vocab import DEFAULTS, Track
from butterfly.core.wire import Request
from butterfly.errors import UserError
from butterfly.models.scripted import ScriptedProvider, check_agent
from butterfly.models.tokens import counter_for
from butterflybench.suites import META, by_id

PREFIX = "script/"


@functools.lru_cache(maxsize=16)
def agent(name: str, suite_path: str, track: Track) -> ScriptedProvider:
    """The scripted agent ``name`` over the suite file ``suite_path`` (one per process)."""
    return ScriptedProvider(name, by_id(suite_path), track)


def tag_of(messages: list[ChatMessage]) -> dict[str, Any]:
    """The butterfly metadata of the last message that has it."""
    for m in reversed(messages):
        if m.metadata and META in m.metadata:
            found: dict[str, Any] = m.metadata[META]
            return found
    raise UserError("butterfly/script/... answers only the calls of ButterflyBench's tasks "
                    "(their user messages name the scenario and turn)")


@modelapi(name="butterfly")
class ScriptedAPI(ModelAPI):
    """``butterfly/script/NAME``: our scripted agent NAME."""

    def __init__(self, model_name: str, base_url: str | None = None,
                 api_key: str | None = None, config: GenerateConfig | None = None,
                 **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        if not model_name.startswith(PREFIX):
            raise UserError(f"butterfly/{model_name}: the butterfly provider serves our "
                            "scripted agents, butterfly/script/NAME")
        self.agent = model_name.removeprefix(PREFIX)
        if self.agent not in CODE_AGENTS:  # the code track's are checked on their first call
            check_agent(self.agent)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo],
                       tool_choice: ToolChoice, config: GenerateConfig) -> ModelOutput:
        tag = tag_of(input)
        request = Request(
            model=self.model_name, messages=tuple({"role": m.role, "content": m.text}
                                                  for m in input),
            temperature=config.temperature or 0.0,
            max_tokens=config.max_tokens or DEFAULTS.max_tokens, seed=int(tag["seed"]),
            meta={"scenario": tag["scenario"], "turn": tag["turn"]})
        scripted = agent(self.agent, str(tag["suite_path"]), tag.get("track", "spec"))
        response = await scripted(request, DEFAULTS.timeout)
        return ModelOutput.from_content(model=self.model_name, content=response.text,
                                        stop_reason="stop")

    async def count_text_tokens(self, text: str) -> int:
        return max(1, len(counter_for(self.model_name).encode(text)))
