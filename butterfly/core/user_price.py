"""A price the user gives for a model (``--price FILE``, ``--price-per-mtok IN,OUT[,CACHED]``).

One strict, versioned record, :class:`UserPrice`: US dollars per million input, output and
(optionally) cached-input tokens. The run manifest records it (``params.price``), and every
call of the run is priced by it instead of litellm's offline price map
(:func:`butterfly.models.price_map.rates_for`). Its JSON Schema is published as
``docs/schemas/price.schema.json``; docs/cost.md ("Prices") says how it is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PRICE_SCHEMA_VERSION: Literal[1] = 1
PriceFields = Mapping[str, float | None]
"""A price's fields as a mapping (what a price file holds)."""


class UserPrice(BaseModel):
    """USD per million tokens of one model, as the user gives it."""

    # strict numbers: a JSON true or "2" is refused, not read as 1 or 2 (issue 34)

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    schema_version: Literal[1] = Field(PRICE_SCHEMA_VERSION, description="1: this format.")
    input_per_mtok: float = Field(ge=0, strict=True, description="USD per million input "
                                  "(prompt) tokens not served from the provider's prompt cache.")
    output_per_mtok: float = Field(ge=0, strict=True, description="USD per million output "
                                   "(completion) tokens, reasoning tokens included "
                                   "(docs/cost.md).")
    cached_input_per_mtok: float | None = Field(
        None, ge=0, strict=True, description="USD per million input tokens served from the "
        "provider's prompt cache; null: the input price (no discount).")

    def per_token(self) -> tuple[float, float, float]:
        """USD per input, output and cached-input token."""
        cached = self.input_per_mtok if self.cached_input_per_mtok is None \
            else self.cached_input_per_mtok
        return self.input_per_mtok / 1e6, self.output_per_mtok / 1e6, cached / 1e6

    def label(self) -> str:
        """``$IN in, $OUT out[, $CACHED cached] per million tokens``."""
        cached = "" if self.cached_input_per_mtok is None \
            else f", ${self.cached_input_per_mtok:g} cached"
        return (f"${self.input_per_mtok:g} in, ${self.output_per_mtok:g} out{cached} "
                "per million tokens")


def per_mtok(text: str) -> UserPrice:
    """``IN,OUT[,CACHED]`` (USD per million tokens) as a :class:`UserPrice`; ValueError with
    a one-line reason when it is not that."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError(f"expected IN,OUT or IN,OUT,CACHED (USD per million tokens), got "
                         f"{text!r}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"expected numbers (USD per million tokens), got {text!r}") from None
    return UserPrice(input_per_mtok=values[0], output_per_mtok=values[1],
                     cached_input_per_mtok=values[2] if len(values) == 3 else None)
