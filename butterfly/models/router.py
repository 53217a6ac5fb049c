"""``--router FILE``: a litellm Router configuration, read and checked without litellm.

The file (JSON, or YAML for ``.yaml``/``.yml``) holds a ``model_list`` of deployments, each
``{model_name, litellm_params: {model, api_base, api_key, rpm, ...}}``, and optionally
``router_settings`` (``routing_strategy``, ``cooldown_time``, ``allowed_fails``,
``num_retries``, ...), passed to ``litellm.Router`` as they are. ``--model NAME`` picks the
deployments named NAME (the group). The provider that calls ``router.acompletion`` is
:class:`butterfly.models.litellm_seam.RouterProvider`.

Secrets never leave this module in the clear: :meth:`RouterConfig.fingerprint` hashes the
file's content with every secret-named parameter (``api_key``, ``aws_secret_access_key``,
``vertex_credentials``, ...) removed and URL credentials cut, and :meth:`RouterConfig.served`
lists what the group serves (model and api_base of each deployment) for the manifest and the
answer cache's key.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from butterfly.core.wire import SECRET_NAME
from butterfly.errors import UserError
from butterfly.files import parse_json, read_input

ENV_REF: Final = "os.environ/"
"""litellm's reference to an environment variable in a configuration value."""
TOP_LEVEL: Final = frozenset({"model_list", "router_settings"})


@dataclass(frozen=True)
class RouterConfig:
    """A router file's deployments of one model name, and the Router's settings."""

    path: Path
    name: str
    """The model name (``--model``) whose deployments are routed over."""
    model_list: tuple[Mapping[str, Any], ...]
    """Every deployment of the file (litellm sees them all; calls name only ``name``)."""
    settings: Mapping[str, Any]

    @property
    def group(self) -> list[Mapping[str, Any]]:
        """The deployments named :attr:`name`, in file order."""
        return [d for d in self.model_list if d["model_name"] == self.name]

    def served(self) -> tuple[tuple[str, str | None], ...]:
        """(model, api_base) of each deployment of the group, sorted; api_base without
        credentials. Replicas of one model share the model and differ in api_base."""
        pairs = [(str(d["litellm_params"]["model"]),
                  _no_credentials(d["litellm_params"].get("api_base"))) for d in self.group]
        return tuple(sorted(pairs, key=lambda x: (x[0], x[1] or "")))

    def models(self) -> tuple[str, ...]:
        """The distinct models the group serves (what a resume must keep)."""
        return tuple(sorted({m for m, _ in self.served()}))

    def identity(self) -> str:
        """The group as the answer cache keys it: never one single server's key."""
        return "router:" + json.dumps(self.served(), separators=(",", ":"))

    def fingerprint(self) -> str:
        """sha256 of the file's content with every secret removed (canonical JSON)."""
        blob = json.dumps({"model_list": [_public(d) for d in self.model_list],
                           "router_settings": {k: v for k, v in self.settings.items()
                                               if not SECRET_NAME.search(k)}},
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def secrets(self) -> tuple[str, ...]:
        """Every secret value of the group's deployments (resolved from the environment for
        ``os.environ/VAR``), for redacting server messages."""
        out = []
        for d in self.model_list:
            for k, v in d["litellm_params"].items():
                if SECRET_NAME.search(k) and isinstance(v, str):
                    out.append(os.environ.get(v.removeprefix(ENV_REF), "")
                               if v.startswith(ENV_REF) else v)
        return tuple(v for v in out if v)


def _no_credentials(url: object) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url.rstrip("/")
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)).rstrip("/")


def _public(deployment: Mapping[str, Any]) -> dict[str, object]:
    """A deployment without its secrets: secret-named parameters dropped, URLs cut."""
    params = {k: (_no_credentials(v) if k == "api_base" else v)
              for k, v in deployment["litellm_params"].items() if not SECRET_NAME.search(k)}
    return {**{k: v for k, v in deployment.items() if k != "litellm_params"},
            "litellm_params": params}


def _parse(path: Path) -> object:
    label = f"--router {path}"
    text = read_input(path, label)
    if path.suffix.lower() not in (".yaml", ".yml"):
        return parse_json(text, label)
    try:
        import yaml  # type: ignore[import-untyped]

        return yaml.safe_load(text)
    except RecursionError:
        raise UserError(f"{label}: not valid YAML: nested too deeply") from None
    except Exception as e:  # yaml.YAMLError
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"{label}: not valid YAML: {first}") from None


def _check_deployment(path: Path, n: int, d: object) -> Mapping[str, Any]:
    where = f"--router {path}: model_list entry {n}"
    if not isinstance(d, dict) or not isinstance(d.get("model_name"), str):
        raise UserError(f"{where} has no model_name (each deployment is {{model_name, "
                        "litellm_params: {model, api_base, ...}}})")
    params = d.get("litellm_params")
    if not isinstance(params, dict) or not isinstance(params.get("model"), str):
        raise UserError(f"{where} ({d['model_name']}) has no litellm_params.model")
    if not all(isinstance(k, str) for k in params):
        raise UserError(f"{where} ({d['model_name']}): litellm_params keys must be names")
    return d


def _check_shape(path: Path, data: object) -> tuple[list[Mapping[str, Any]], Mapping[str, Any]]:
    if not isinstance(data, dict):
        raise UserError(f"--router {path}: must hold one mapping with a model_list")
    extra = sorted(str(k) for k in data if k not in TOP_LEVEL)
    if extra:
        raise UserError(f"--router {path}: unknown key(s) {', '.join(extra)}: a router file "
                        "holds model_list and router_settings only")
    models = data.get("model_list")
    if not isinstance(models, list) or not models:
        raise UserError(f"--router {path}: no model_list (a list of deployments, each "
                        "{model_name, litellm_params: {model, api_base, ...}})")
    settings = data.get("router_settings") or {}
    if not isinstance(settings, dict) or not all(isinstance(k, str) for k in settings):
        raise UserError(f"--router {path}: router_settings must be a mapping of "
                        "litellm.Router arguments")
    if "model_list" in settings:
        raise UserError(f"--router {path}: router_settings may not hold a model_list")
    return [_check_deployment(path, n, d) for n, d in enumerate(models, 1)], settings


def load_router(path: str | Path, name: str) -> RouterConfig:
    """The router file at ``path`` with ``name``'s deployments; one clear line for a file
    that is unreadable, malformed, or has no deployment named ``name``."""
    file = Path(path).expanduser()
    models, settings = _check_shape(file, _parse(file))
    config = RouterConfig(file, name, tuple(models), settings)
    if not config.group:
        names = ", ".join(dict.fromkeys(d["model_name"] for d in models))
        raise UserError(f"--router {file}: no deployment named {name!r} (--model picks the "
                        f"group; this file has: {names})")
    return config
