"""Running a program: one child process in the sandbox, never the harness's own (contract
section 7).

``run_program`` is the one seam the extractor calls. The program runs as ``tool.py`` in a fresh
private directory holding only it and its inputs, inside the sandbox of ``butterfly.code.sandbox``
(bubblewrap, or the documented fallback: ``sandbox_kind()`` says which): no network, no other
writable place, a clean environment, limits on wall-clock and CPU time, memory, file size and
processes. Its stdout and stderr go to files of the harness outside that directory.

**Output within a budget.** Stdout, stderr and every file the program leaves count together
against ``CAP``, watched while it runs: more stops it (``flooded``), and so does leaving more than
``FILES`` files. The harness holds only what the probes read: the first ``KEEP`` bytes of stdout,
the last ``KEEP`` of stderr, and the files named in ``keep`` that are no longer than ``KEEP``
(every file's size is known); a file read whole is streamed from disk (``tally``), never held.
**Time within a budget**: a :class:`Budget` bounds all the runs of one observed program
(wall-clock and CPU seconds), and its stop request (SIGINT, SIGTERM, an error in the harness)
ends a running program at once. The private directory is removed on every path out; one left by
a harness killed outright (``kill -9``) is removed by the next observation (:func:`sweep_stale`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

from butterfly.code import sandbox

CAP: Final = 32 * 1024 * 1024
"""Bytes a run may write in all: stdout, stderr and every file it leaves, together (more: the
run is stopped, ``flooded``). Each file's size limit too."""
KEEP: Final = 1024 * 1024
"""Bytes the harness holds of stdout (its first), of stderr (its last) and of each kept file (a
longer one is not kept: only its size)."""
FILES: Final = 64
"""Files and directories a run may leave in its private directory; more stops it."""
PREFIX: Final = "bfcode-"
"""The private directories' prefix, in the temporary directory: ``bfcode-PID-*``."""

SIGNAL_LIMITS: Final = {-24: "cpu", -25: "file-size"}
"""Signals a limit sends: SIGXCPU at the CPU limit, SIGXFSZ at the file-size limit (Python
ignores SIGXFSZ: its write fails instead, and the file is more than ``CAP``, ``output``)."""

Tally = Callable[[BinaryIO], "int | None"]
"""Reads an output file streamed from disk (``probes.count_file``) into a count."""


class Spent(Exception):
    """The observation's budget ran out before a run could start; the message says which."""


class Stopped(Exception):
    """The harness asked every run to stop (SIGINT, SIGTERM, an error): nothing is observed."""


@dataclass
class Budget:
    """The time one observed program may take over all its runs: ``wall_seconds`` of wall clock
    from the budget's making, ``cpu_seconds`` of CPU (as the kernel accounts them), and ``stop``,
    the harness's request to end every run now. Shared by runs side by side (thread-safe)."""

    wall_seconds: float
    cpu_seconds: float
    stop: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    cpu_used: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def grant(self, timeout: float) -> tuple[float, float]:
        """(wall-clock, CPU) seconds the next run may have: ``timeout``, or what is left."""
        if self.stop.is_set():
            raise Stopped("stopped")
        wall = self.wall_seconds - (time.monotonic() - self.started)
        with self._lock:
            cpu = self.cpu_seconds - self.cpu_used
        if wall <= 0 or cpu <= 0:
            raise Spent(self.words())
        return min(timeout, wall), min(timeout, cpu)

    def spend(self, cpu: float) -> None:
        with self._lock:
            self.cpu_used += cpu

    def words(self) -> str:
        return (f"the observation's budget ran out ({self.wall_seconds:g} s of wall clock and "
                f"{self.cpu_seconds:g} s of CPU for all the runs of one program)")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run showed: exit status (None when stopped by the harness, negative: killed by
    that signal), streams (as kept), the files kept, and which limit it hit (``wall``, ``cpu``,
    ``file-size``, ``output``, ``files``, ``memory``, ``processes``, ``budget``; None when none
    was seen), with ``why`` in words."""

    status: int | None
    stdout: bytes
    stderr: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)
    flooded: bool = False
    limit: str | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    """Every regular file the program left at the top of its directory, with its size."""
    tally: int | None = None
    """The ``tally`` of the run's file (None: not asked, not there, or the run failed)."""
    why: str | None = None
    cpu_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.flooded


def _open(path: Path) -> BinaryIO | None:
    """A regular file opened for reading without following a link (None: anything else)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _written(own: Path, work: Path, most: int = FILES) -> tuple[int, int]:
    """(bytes written, entries) of a run so far: stdout, stderr and everything under ``work``
    (links not followed); entries stop counting past ``most``; an unreadable directory counts
    as too many."""
    total = sum((own / n).stat().st_size for n in ("stdout", "stderr"))
    entries, todo = 0, [work]
    while todo:
        try:
            listing = os.scandir(todo.pop())
        except FileNotFoundError:
            continue
        except OSError:
            return total, most + 1
        with listing:
            for entry in listing:
                entries += 1
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        todo.append(Path(entry.path))
                    else:
                        total += info.st_size
                if entries > most:
                    return total, entries
    return total, entries


def _watch(own: Path, work: Path, base: tuple[int, int], budget: Budget | None
           ) -> sandbox.Watch:
    """The harness's watch of a run: stop it on request, past ``CAP`` bytes or ``FILES``
    files (``base``: the bytes and entries it started with, its program and inputs)."""
    def watch() -> str | None:
        if budget is not None and budget.stop.is_set():
            return "stopped"
        total, entries = _written(own, work, FILES + base[1])
        if entries - base[1] > FILES:
            return "files"
        return "output" if total - base[0] > CAP else None
    return watch


def _kept(path: Path, tail: bool = False) -> bytes:
    """The first ``KEEP`` bytes of a stream's file (``tail``: its last)."""
    with open(path, "rb") as f:
        if tail:
            f.seek(max(0, os.fstat(f.fileno()).st_size - KEEP))
        return f.read(KEEP)


def _collect(work: Path, skip: set[str], keep: set[str] | None
             ) -> tuple[dict[str, bytes], dict[str, int]]:
    """(kept files, sizes) of the regular files at the top of ``work`` but ``skip``."""
    files: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    for path in sorted(work.iterdir()):
        if path.name in skip:
            continue
        f = _open(path)
        if f is None:
            continue
        with f:
            sizes[path.name] = size = os.fstat(f.fileno()).st_size
            if (keep is None or path.name in keep) and size <= KEEP and len(files) < FILES:
                files[path.name] = f.read(KEEP)
    return files, sizes


def _limit(ended: sandbox.Exit, flooded: bool, stderr: bytes, clamped: bool) -> str | None:
    """The limit a run hit, as far as the harness's watch, its status and the last line of its
    stderr show (``clamped``: its wall-clock limit was what its budget had left)."""
    if ended.stopped is not None:
        return "budget" if ended.stopped == "wall" and clamped else ended.stopped
    if ended.status in SIGNAL_LIMITS:
        return SIGNAL_LIMITS[ended.status]
    if flooded:
        return "output"
    last = stderr.rstrip().rsplit(b"\n", 1)[-1]
    if last.startswith(b"MemoryError"):
        return "memory"
    if b"[Errno 11] Resource temporarily unavailable" in last:
        return "processes"
    return None


def words(limit: str | None, limits: sandbox.Limits, budget: Budget | None) -> str | None:
    """What hitting ``limit`` means, with the figures of this run."""
    said = {
        "wall": f"ran past its wall-clock limit ({limits.wall_seconds:g} s)",
        "cpu": f"used up its CPU limit ({limits.cpu_seconds} s)",
        "file-size": f"wrote a file over the size limit ({CAP >> 20} MiB)",
        "output": f"wrote more than {CAP >> 20} MiB (stdout, stderr and its files together)",
        "files": f"left more than {FILES} files (or one the harness cannot read)",
        "memory": f"ran out of memory ({limits.memory_bytes >> 20} MiB)",
        "processes": f"hit the process limit ({limits.processes})",
        "budget": f"was stopped: {budget.words() if budget else 'its budget ran out'}",
    }
    return None if limit is None else said[limit]


def run_program(source: str, args: list[str], stdin: bytes = b"", timeout: float = 10.0,
                inputs: Mapping[str, bytes] | None = None, *, keep: set[str] | None = None,
                tally: tuple[str, Tally] | None = None, budget: Budget | None = None) -> Outcome:
    """Run ``source`` as ``tool.py ARGS`` with ``inputs`` written beside it, in the sandbox, for
    at most ``timeout`` seconds (or what ``budget`` has left: :class:`Spent` when nothing);
    return the outcome with the files named in ``keep`` (None: every file) it left, and
    ``tally`` (a file name and its reader) run on that file. :class:`Stopped` when the budget's
    stop request ended it."""
    inputs = inputs or {}
    wall, cpu = (timeout, timeout) if budget is None else budget.grant(timeout)
    limits = sandbox.Limits.for_timeout(wall, CAP + 1, cpu)
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as tmp:
        own, work = Path(tmp), Path(tmp) / "work"
        work.mkdir()
        (work / "tool.py").write_text(source, encoding="utf-8")
        for name, data in inputs.items():
            (work / name).write_bytes(data)
        sandbox.prepare(work)
        (own / "stdin").write_bytes(stdin)
        with open(own / "stdin", "rb") as i, open(own / "stdout", "wb") as o, \
                open(own / "stderr", "wb") as e:
            base = _written(own, work)
            ended = sandbox.execute(work, args, sandbox.Streams(i, o, e), limits,
                                    _watch(own, work, base, budget))
        if budget is not None:
            budget.spend(ended.cpu_seconds)
        if ended.stopped == "stopped":
            raise Stopped("stopped")
        out, err = _kept(own / "stdout"), _kept(own / "stderr", tail=True)
        files, sizes = _collect(work, {"tool.py", *inputs}, keep)
        total, entries = _written(own, work, FILES + base[1])  # a burst between two looks
        flooded = ended.stopped == "output" or total - base[0] > CAP
        if ended.stopped is None and entries - base[1] > FILES:
            ended = sandbox.Exit(ended.status, "files", ended.cpu_seconds)
        limit = _limit(ended, flooded, err, wall < timeout)
        counted = None
        if tally is not None and ended.status == 0 and not flooded:
            f = _open(work / tally[0])
            if f is not None:
                with f:
                    counted = tally[1](f)
        return Outcome(ended.status, out, err, files, flooded, limit, sizes, counted,
                       words(limit, limits, budget), ended.cpu_seconds)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> int:
    """Remove the private directories (``bfcode-PID-*``) this user's dead harness processes
    left behind (killed outright, as by ``kill -9``); how many were removed."""
    removed = 0
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        with contextlib.suppress(OSError):
            info = path.lstat()
            if (pid.isdigit() and stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
                    and not _alive(int(pid))):
                shutil.rmtree(path)
                removed += 1
    return removed
