"""One writer per run directory: an OS lock on the directory itself.

``fcntl.flock`` on an open descriptor of the run directory (``O_DIRECTORY``): the kernel frees
it when the holder's process ends, however it ends (``kill -9`` included), so a lock is never
stale. The lock belongs to the directory's inode, not to a file inside it: removing
``writer.lock`` (or anything else in the directory) while a run writes lets no second writer
in. A lock on a file inside the directory did: deleting the file during a run let a second run
create a new file, lock that, and write the same ``calls.jsonl`` (issue 34). ``writer.lock``
is kept only to name the holder: it holds the holder's pid, so a second writer is refused at
once with a message naming it ("another process" when the file is gone). Readers (``score``,
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
"""The file that names the holder's pid (the lock itself is on the directory)."""


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="utf-8").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "another process"


def _cannot_write(out: Path, e: OSError) -> UserError:
    return UserError(f"--out {out}: cannot write: {e.strerror or e} (a run directory must be "
                     "writable to run or resume; score, show and report only read it)")


def _name_holder(out: Path) -> None:
    """Write this process's pid into ``writer.lock`` (after the lock is taken)."""
    fd = os.open(out / LOCK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)


@contextlib.contextmanager
def writer_lock(out: Path) -> Iterator[None]:
    """Hold the write lock of run directory ``out`` (created if missing) for the block."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise _cannot_write(out, e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"--out {out} is being written by {_holder(out / LOCK)}: wait for "
                            "it to end (or stop it), or choose another --out") from None
        try:
            _name_holder(out)
        except OSError as e:
            raise _cannot_write(out, e) from None
        yield
    finally:
        os.close(fd)  # closing the descriptor frees the lock


def writer_alive(out: Path) -> bool:
    """Whether a process holds the write lock of ``out`` now (readers take no lock: this only
    asks, with a shared lock that an exclusive holder refuses)."""
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
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
