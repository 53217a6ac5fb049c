"""Reading the files a user names and writing the project's output files.

Every small input file (``--price``, ``--model-args``, ``--router``) is read by
:func:`read_input`, and every suite is opened by :func:`open_regular`: only a regular file
(after symlinks), up to a documented size (:data:`INPUT_MAX_BYTES`, :data:`SUITE_MAX_BYTES`),
opened without blocking (a FIFO never hangs the open) and refused in one line otherwise. A
symlink to ``/dev/zero`` given as ``--price`` was read until the kernel killed the process at
24 GB (issue 34). JSON is parsed by :func:`parse_json`: nesting too deep for Python's parser is
one line, not a ``RecursionError`` traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import IO, Final

from butterfly.errors import UserError

INPUT_MAX_BYTES: Final = 1 << 20
"""The largest price, model-arguments or router file read (1 MiB; each is a few hundred
bytes to a few KB)."""
SUITE_MAX_BYTES: Final = 1 << 30
"""The largest suite read (1 GiB; butterfly-horizon, 12 chains of 5,000 turns, is 8 MB)."""


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB" if n >= 1 << 20 \
        else f"{n:,} bytes"


def open_regular(path: str | Path, label: str, limit: int,
                 error: type[UserError] = UserError) -> IO[bytes]:
    """``path`` opened for reading in binary, when it is a regular file (after symlinks) of
    at most ``limit`` bytes; else a one-line :class:`UserError` naming ``label`` (the flag and
    the path, as the user gave them). The open never blocks (``O_NONBLOCK``: a FIFO is refused,
    not waited on); the checks are made on the opened descriptor, so the file checked is the
    file read. ``error``: the refusal's class (a suite's is ``SuiteError``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{label}: cannot read: no such file") from None
    except OSError as e:
        raise error(f"{label}: cannot read: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else \
                "not a file"
            raise error(f"{label}: not a regular file ({what}): give a file")
        if info.st_size > limit:
            raise error(f"{label}: {info.st_size:,} bytes, over the {_size(limit)} a file "
                            "of this kind may have (docs/running.md, \"Input files\")")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | Path, label: str, limit: int = INPUT_MAX_BYTES) -> str:
    """The text of the small input file ``path`` (:func:`open_regular`, then read whole as
    UTF-8, at most ``limit`` bytes even if it grows while read); ``label`` names it in every
    refusal."""
    with open_regular(path, label, limit) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise UserError(f"{label}: cannot read: {e.strerror or e}") from None
    if len(data) > limit:
        raise UserError(f"{label}: over the {_size(limit)} a file of this kind may have "
                        "(docs/running.md, \"Input files\")")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{label}: not UTF-8 text (byte {e.start})") from None


def parse_json(text: str | bytes, label: str) -> object:
    """``text`` parsed as JSON; one line naming ``label`` when it is not JSON, or is nested
    too deeply for the parser (Python's json recurses: 3 MB of ``[`` was a RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UserError(f"{label}: not valid JSON: nested too deeply") from None
    except ValueError as e:
        raise UserError(f"{label}: not valid JSON: {str(e).splitlines()[0]}") from None


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
