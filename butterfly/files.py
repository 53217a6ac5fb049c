"""Writing the project's output files."""

from __future__ import annotations

import contextlib
from pathlib import Path

from butterfly.errors import UserError


def write_text_atomic(path: Path, text: str, label: str | None = None) -> None:
    """Write ``text`` to a temporary sibling and rename it over ``path`` (a reader never sees
    half a file); a failure is one clear line naming ``label`` (default: the path), and leaves
    no temporary file behind (a refused path, such as a directory, gets no ``PATH.tmp``)."""
    if not path.name or path.name in (".", ".."):  # "" (the current directory), "/", ".."
        raise UserError(f"{label or path}: must name a file, got {str(path)!r}")
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        with contextlib.suppress(OSError):  # no stray temporary file
            tmp.unlink()
        raise UserError(f"{label or path}: cannot write: {e.strerror or e}") from None
