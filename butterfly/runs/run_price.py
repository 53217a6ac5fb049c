"""The user's price of a run (``--price FILE``, ``--price-per-mtok IN,OUT[,CACHED]``): read,
checked, and kept across a resume.

The file is a small JSON object (:class:`butterfly.core.user_price.UserPrice`, JSON Schema in
``docs/schemas/price.schema.json``): ``{"input_per_mtok": 0.15, "output_per_mtok": 0.6,
"cached_input_per_mtok": 0.075}``, USD per million tokens. A resume keeps the recorded price:
another price (or none, for a run given one) is refused, so that every call of a run is priced
alike (docs/cost.md, "Prices").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from butterfly.core.user_price import PriceFields, UserPrice, per_mtok
from butterfly.errors import UserError
from butterfly.files import parse_json, read_input

PriceGiven = str | Path | UserPrice | PriceFields | None
"""What ``RunOptions.price`` takes: a file's path, a price, or its fields as a mapping."""


def first_error(e: ValidationError) -> str:
    """The first of a validation's errors, one line: where (when it says), then what."""
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


def from_mapping(data: object, where: str) -> UserPrice:
    """A price from its JSON object; a one-line :class:`UserError` when it is not one."""
    if isinstance(data, UserPrice):
        return data
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: a price is a JSON object (input_per_mtok, output_per_mtok, "
                        "cached_input_per_mtok), not a " + type(data).__name__)
    try:
        return UserPrice.model_validate(dict(data))
    except ValidationError as e:
        raise UserError(f"{where}: not a price ({first_error(e)}; docs/cost.md)") from None


def load_price(path: str | Path, flag: str = "--price") -> UserPrice:
    """The price in the JSON file ``path`` (given as ``flag``; read by
    :func:`butterfly.files.read_input`: a regular file of at most 1 MiB)."""
    label = f"{flag} {path}"
    return from_mapping(parse_json(read_input(path, label), label), label)


def user_price(price: PriceGiven, price_per_mtok: str | None, side: str = ""
               ) -> UserPrice | None:
    """The run's price from ``--price`` or ``--price-per-mtok`` (at most one), or None;
    ``side``: the flags' suffix (``-a``, ``-b``: ``butterfly sequential``'s per-model prices)."""
    flag, per = f"--price{side}", f"--price-per-mtok{side}"
    if price is not None and price_per_mtok is not None:
        raise UserError(f"give {flag} FILE or {per} IN,OUT[,CACHED], not both")
    if price_per_mtok is not None:
        try:
            return per_mtok(price_per_mtok)
        except ValidationError as e:
            raise UserError(f"{per}: {first_error(e)}") from None
        except ValueError as e:
            raise UserError(f"{per}: {e}") from None
    if price is None or isinstance(price, UserPrice | Mapping):
        return None if price is None else from_mapping(price, flag[2:].replace("-", "_"))
    return load_price(price, flag)


def _shown(price: UserPrice | None) -> str:
    return "no price (litellm's offline price map)" if price is None else price.label()


def check_same_price(out: Path, old: UserPrice | None, new: UserPrice | None) -> None:
    """A resume prices its calls as the run's first calls were: the same price, or none."""
    if old != new:
        raise UserError(f"--out {out} was priced at {_shown(old)}; this is {_shown(new)}: a "
                        "resume keeps the run's price (give the same --price), or choose "
                        "another --out")
