"""One writer per run directory: an OS lock on ``writer.lock`` inside it.

``fcntl.flock`` on an open file: the kernel frees it when the holder's process ends, however
it ends (``kill -9`` included), so a lock is never stale. The holder writes its pid into the
file, so a second writer is refused at once with a message naming it. Readers (``score``,
``show``, ``report``, ...) never take the lock: they work while a run is being written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from butterfly.errors import UserError

LOCK: Final = "writer.lock"


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="utf-8").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "another process"


@contextlib.contextmanager
def writer_lock(out: Path) -> Iterator[None]:
    """Hold the write lock of run directory ``out`` (created if missing) for the block."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write: {e.strerror or e} (a run directory must "
                        "be writable to run or resume; score, show and report only read it)"
                        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"--out {out} is being written by {_holder(out / LOCK)}: wait for "
                            "it to end (or stop it), or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing the descriptor frees the lock


def writer_alive(out: Path) -> bool:
    """Whether a process holds the write lock of ``out`` now (readers take no lock: this only
    asks, with a shared lock that an exclusive holder refuses)."""
    try:
        fd = os.open(out / LOCK, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing frees the shared lock if it was taken
    return False
