"""A price the user gives (``--price``, ``--price-per-mtok``): read and checked, turned into
rates (``price_map.rates_for``), and one sum per answer (``price_map.charge``): cost and what the
cached prompt tokens saved; reasoning tokens counted once whichever way a server reports them
(``wire.billed_completion``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butterfly.core import wire
from butterfly.core.user_price import UserPrice, per_mtok
from butterfly.errors import UserError
from butterfly.models import price_map
from butterfly.runs.run_price import check_same_price, load_price, user_price

PRICE = UserPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)


def test_per_mtok_reads_two_or_three_numbers() -> None:
    assert per_mtok("2,8,0.5") == PRICE
    assert per_mtok(" 2 , 8 ") == UserPrice(input_per_mtok=2, output_per_mtok=8)
    for bad in ("2", "2,8,1,1", "a,b", "2,,8", "-1,2", "nan,1", "inf,1"):
        with pytest.raises(UserError, match="--price-per-mtok"):
            user_price(None, bad)


def test_a_price_file_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "price.json"
    good.write_text(json.dumps(PRICE.model_dump(exclude={"schema_version"})))
    assert load_price(good) == PRICE
    assert user_price(str(good), None) == PRICE
    for text, why in (("{", "not valid JSON"), ("[1, 2]", "a JSON object"),
                      ('{"input_per_mtok": 1}', "output_per_mtok"),
                      ('{"input_per_mtok": 1, "output_per_mtok": 2, "tip": 3}', "tip"),
                      ('{"input_per_mtok": -1, "output_per_mtok": 2}', "input_per_mtok")):
        good.write_text(text)
        with pytest.raises(UserError, match=why) as e:
            load_price(good)
        assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="cannot read"):
        load_price(tmp_path / "absent.json")
    with pytest.raises(UserError, match="not both"):
        user_price(str(good), "1,2")


def test_the_users_price_wins_over_the_map() -> None:
    mapped = price_map.rates("openai/gpt-4o-mini")
    assert mapped is not None
    assert price_map.rates_for("openai/gpt-4o-mini") == mapped
    assert price_map.rates_for("openai/gpt-4o-mini", PRICE) == price_map.Rates(2e-6, 8e-6, 0.5e-6)
    assert price_map.rates_for("hosted_vllm/mine") is None
    assert price_map.rates_for("hosted_vllm/mine", PRICE) == price_map.Rates(2e-6, 8e-6, 0.5e-6)
    no_cache = UserPrice(input_per_mtok=2, output_per_mtok=8)
    assert price_map.rates_for("x/y", no_cache) == price_map.Rates(2e-6, 8e-6, 2e-6)


def test_charge_prices_cost_and_savings() -> None:
    r = price_map.Rates.of(PRICE)
    answer = wire.Response("{}", prompt_tokens=1000, completion_tokens=100, cached_tokens=600)
    priced = price_map.charge(r, answer)
    assert priced.cost_usd == pytest.approx(400 * 2e-6 + 600 * 0.5e-6 + 100 * 8e-6)
    assert priced.saved_usd == pytest.approx(600 * (2e-6 - 0.5e-6))
    assert price_map.charge(r, wire.Response("{}", prompt_tokens=10, completion_tokens=1)
                         ).saved_usd == 0
    assert price_map.charge(None, answer).cost_usd is None
    assert price_map.charge(None, answer).saved_usd is None
    assert price_map.charge(r, wire.Response("{}", completion_tokens=3)).cost_usd is None


@pytest.mark.parametrize(("prompt", "completion", "reasoning", "total", "billed"), [
    (100, 50, 30, 150, 50),    # OpenAI: reasoning inside completion (total = p + c)
    (100, 20, 30, 150, 50),    # reported apart: total = p + c + r
    (100, 50, 30, None, 50),   # no total: inside unless it cannot be
    (100, 20, 30, None, 50),   # no total, more reasoning than completion: apart
    (100, 50, None, 150, 50),  # no reasoning reported
    (100, 50, 0, 150, 50),
    (None, 50, 30, None, 50),
])
def test_reasoning_tokens_are_counted_once(prompt: int | None, completion: int,
                                           reasoning: int | None, total: int | None,
                                           billed: int) -> None:
    assert wire.billed_completion(prompt, completion, reasoning, total) == billed


def test_a_resume_keeps_the_price(tmp_path: Path) -> None:
    check_same_price(tmp_path, PRICE, PRICE.model_copy())
    check_same_price(tmp_path, None, None)
    for old, new in ((PRICE, None), (None, PRICE),
                     (PRICE, PRICE.model_copy(update={"output_per_mtok": 9.0}))):
        with pytest.raises(UserError, match="keeps the run's price"):
            check_same_price(tmp_path, old, new)
