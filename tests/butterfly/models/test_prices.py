"""Prices from butterfly's copy of litellm's public price map (``models/data/prices.json``,
held equal to the locked litellm's ``litellm.model_cost``), read without litellm, and from the
rates litellm resolves (the litellm transport), both by the one sum, equal
``litellm.cost_per_token``; the file is read once and an unpriced model is decided once; no
file of litellm's package is read by the price or token functions."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest
from conftest import ROOT

from butterfly.core.wire import Response
from butterfly.models import price_map
from butterfly.models.litellm_seam import SHIPPED, litellm, shipped_rates


def _cost(model: str, prompt: int | None, completion: int | None, cached: int | None = None,
          rates_of: price_map.RatesOf = price_map.rates) -> float | None:
    """A call's price as a transport records it (:func:`price_map.priced`)."""
    answer = Response(text="", prompt_tokens=prompt, completion_tokens=completion,
                      cached_tokens=cached)
    return price_map.priced(model, rates_of)(answer).cost_usd


MODELS = ["openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1-nano", "openai/o3-mini",
          "openai/gpt-3.5-turbo"]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("prompt", "completion", "cached"), [(1200, 300, 0), (1200, 300, 1024),
                                                              (5, 1, None), (0, 0, None)])
def test_our_price_is_litellms(model: str, prompt: int, completion: int,
                               cached: int | None) -> None:
    from litellm.types.utils import PromptTokensDetailsWrapper, Usage

    details = None if cached is None else PromptTokensDetailsWrapper(cached_tokens=cached)
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion,
                  total_tokens=prompt + completion, prompt_tokens_details=details)
    p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt,
                                  completion_tokens=completion, usage_object=usage)
    ours = _cost(model, prompt, completion, cached)
    assert ours is not None and ours == pytest.approx(round(p + c, 10), rel=1e-9, abs=1e-12)
    # the litellm transport: the same sum over the rates litellm resolves, litellm's to the bit
    assert _cost(model, prompt, completion, cached, shipped_rates) == round(p + c, 10)


@pytest.mark.parametrize("model", ["anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"])
@pytest.mark.parametrize(("cached", "written"), [(0, 0), (0, 1500), (1024, 300), (2000, 0)])
def test_claudes_cache_writes_cost_what_litellm_charges(model: str, cached: int,
                                                        written: int) -> None:
    """Anthropic's cache writes (1.25 x the input rate), inside the prompt tokens, priced by
    both rate sources as ``litellm.cost_per_token`` prices them (docs/cost.md)."""
    from litellm.types.utils import PromptTokensDetailsWrapper, Usage

    prompt, completion = 2500, 200
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion,
                  total_tokens=prompt + completion,
                  prompt_tokens_details=PromptTokensDetailsWrapper(
                      cached_tokens=cached, cache_creation_tokens=written),
                  cache_read_input_tokens=cached, cache_creation_input_tokens=written)
    p, c = litellm.cost_per_token(model=model, usage_object=usage)
    for rates in (price_map.rates(model), shipped_rates(model)):
        assert rates is not None and rates.written == pytest.approx(1.25 * rates.prompt)
        assert rates.usd(prompt, completion, cached, written) == pytest.approx(p + c, rel=1e-9)


@pytest.mark.parametrize("model", ["openai/fake", "hosted_vllm/Qwen/Qwen2.5-7B",
                                   "openai/claude-haiku-4-5"])
def test_an_unpriced_model_costs_none(model: str) -> None:
    assert _cost(model, 10, 5) is None
    with pytest.raises(Exception):  # noqa: B017 - litellm raises for a model it does not price
        litellm.cost_per_token(model=model, prompt_tokens=10, completion_tokens=5)


def test_no_tokens_no_price() -> None:
    assert _cost("openai/gpt-4o-mini", None, 5) is None


def test_the_price_file_is_read_once_and_each_model_decided_once() -> None:
    price_map.rates.cache_clear()
    _cost("openai/unpriced-x", 1, 1)
    _cost("openai/unpriced-x", 2, 2)
    _cost("openai/gpt-4o-mini", 2, 2)
    info = price_map.rates.cache_info()
    assert (info.misses, info.hits) == (2, 1)
    assert price_map._price_map.cache_info().misses <= 1


def test_the_price_file_is_the_locked_litellms_public_map() -> None:
    """``litellm.model_cost`` as shipped (the litellm transport's map), the fields butterfly
    reads: ``tools/price_map.py`` rewrites the file when litellm moves."""
    shipped = json.loads(price_map.PRICE_FILE.read_text(encoding="utf-8"))
    fix = "run .venv/bin/python tools/price_map.py"
    assert shipped["litellm"] == importlib.metadata.version("litellm"), fix
    assert shipped["models"] == price_map.project({k: litellm.model_cost[k] for k in SHIPPED}), fix
    assert len(shipped["models"]) > 1000


PROBE = """
import importlib.util, json, os, sys
folders = [os.path.realpath(p)
           for p in importlib.util.find_spec("litellm").submodule_search_locations]
opened = []

def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.path.realpath(os.fsdecode(args[0])))
    elif event in ("os.listdir", "os.scandir") and args and args[0] is not None:
        opened.append(os.path.realpath(os.fsdecode(args[0])))

sys.addaudithook(hook)
from butterfly.models import price_map, tokens

for model in sys.argv[1:]:
    price_map.rates(model), price_map.window(model)
    tokens.counter_for(model).encode("Set compression to gzip; undo the change before that.")
ours = len(opened)
open(os.path.join(folders[0], "__init__.py"), "rb").close()  # the control: seen as private
private = [p for p in opened if any(p.startswith(f + os.sep) for f in folders)]
print(json.dumps({"opened": opened[:ours], "private": private,
                  "litellm": "litellm" in sys.modules}))
"""


def test_no_file_of_litellms_package_is_read_for_prices_or_tokens() -> None:
    """Issue 36: litellm only through its public API. In a fresh interpreter, every file the
    price and token functions open (an audit hook sees Python's ``open``, tiktoken's and the
    JSON tokenizers' reads among them) is outside litellm's package folder, and litellm is not
    imported; a read of that folder, done on purpose after them, is caught."""
    models = ["openai/gpt-4o-mini", "openai/gpt-4", "anthropic/claude-sonnet-4-5",
              "deepseek/deepseek-chat", "gemini/gemini-2.0-flash"]
    r = subprocess.run([sys.executable, "-c", PROBE, *models], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    assert not seen["litellm"]
    assert [p.rsplit("/", 1)[1] for p in seen["private"]] == ["__init__.py"]  # the control only
    ours = ROOT / "butterfly" / "models" / "data" / "tokenizers"
    read = {price_map.PRICE_FILE, *(ours / f for f in ("deepseek_tokenizer.json",
                                                   "anthropic_tokenizer.json",
                                                   "fb374d419588a4632f3f557e76b4b70aebbca790",
                                                   "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"))}
    assert {str(p.resolve()) for p in read} <= set(seen["opened"]), seen["opened"]
