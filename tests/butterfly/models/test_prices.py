"""Prices from litellm's price file, read without litellm, and from the rates litellm resolves
(the litellm transport), both by the one sum, equal ``litellm.cost_per_token``;
the file is read once and an unpriced model is decided once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from butterfly.models import prices
from butterfly.models.litellm_seam import litellm, shipped_rates

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
    ours = prices.cost_usd(model, prompt, completion, cached)
    assert ours is not None and ours == pytest.approx(round(p + c, 10), rel=1e-9, abs=1e-12)
    # the litellm transport: the same sum over the rates litellm resolves, litellm's to the bit
    assert prices.cost_usd(model, prompt, completion, cached, shipped_rates) == round(p + c, 10)


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
    for rates in (prices.rates(model), shipped_rates(model)):
        assert rates is not None and rates.written == pytest.approx(1.25 * rates.prompt)
        assert rates.usd(prompt, completion, cached, written) == pytest.approx(p + c, rel=1e-9)


@pytest.mark.parametrize("model", ["openai/fake", "hosted_vllm/Qwen/Qwen2.5-7B",
                                   "openai/claude-haiku-4-5"])
def test_an_unpriced_model_costs_none(model: str) -> None:
    assert prices.cost_usd(model, 10, 5) is None
    with pytest.raises(Exception):  # noqa: B017 - litellm raises for a model it does not price
        litellm.cost_per_token(model=model, prompt_tokens=10, completion_tokens=5)


def test_no_tokens_no_price() -> None:
    assert prices.cost_usd("openai/gpt-4o-mini", None, 5) is None


def test_the_price_file_is_read_once_and_each_model_decided_once() -> None:
    prices.rates.cache_clear()
    prices.cost_usd("openai/unpriced-x", 1, 1)
    prices.cost_usd("openai/unpriced-x", 2, 2)
    prices.cost_usd("openai/gpt-4o-mini", 2, 2)
    info = prices.rates.cache_info()
    assert (info.misses, info.hits) == (2, 1)
    assert prices._price_map.cache_info().misses <= 1


def test_pricing_imports_no_litellm() -> None:
    code = ("import sys\nfrom butterfly.models.prices import cost_usd\n"
            "assert cost_usd('openai/gpt-4o-mini', 1000, 100) > 0\n"
            "assert 'litellm' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
