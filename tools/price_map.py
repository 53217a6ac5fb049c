"""Write ``butterfly/models/data/prices.json`` from the installed litellm's public price map.

``python tools/price_map.py`` after ``make lock`` moved litellm (``make venv`` first):
``tests/butterfly/models/test_prices.py`` fails until the file and the locked litellm's
``litellm.model_cost`` agree. The map is litellm's offline copy (``LITELLM_LOCAL_MODEL_COST_MAP``,
set by ``butterfly.models.litellm_seam``), as shipped (before any ``litellm.Router`` adds its
deployments); only the fields ``butterfly.models.price_map`` reads are kept, one model a line
(docs/cost.md, "Prices").
"""

from __future__ import annotations

import importlib.metadata
import json

from butterfly.models.litellm_seam import SHIPPED, litellm
from butterfly.models.price_map import PRICE_FILE, project


def dumps(models: dict[str, dict[str, object]], version: str) -> str:
    """The file's text: litellm's version, then one model a line, sorted by name."""
    lines = [f"{json.dumps(name)}: {json.dumps(entry, sort_keys=True)}"
             for name, entry in sorted(models.items())]
    return (f'{{"litellm": {json.dumps(version)},\n"models": {{\n' + ",\n".join(lines)
            + "\n}}\n")


def main() -> None:
    models = project({name: litellm.model_cost[name] for name in SHIPPED})
    version = importlib.metadata.version("litellm")
    PRICE_FILE.write_text(dumps(models, version), encoding="utf-8")
    print(f"{PRICE_FILE}: {len(models):,} models of litellm {version}'s price map")


if __name__ == "__main__":
    main()
