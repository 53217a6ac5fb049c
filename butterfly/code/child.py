"""A sandboxed program's child process waited for: until it ends, its wall-clock limit passes or
the harness's watch says to stop it; then reaped with the CPU seconds it used
(``butterfly.code.sandbox.execute_as``, the only caller).
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

POLL: Final = 0.05
"""Seconds between two looks of the harness's watch at a running program (``Watch``)."""

Watch = Callable[[], "str | None"]
"""Asked every ``POLL`` seconds while a program runs: the reason to stop it now (a limit's name,
as ``output``), or None to let it run on."""


@dataclass(frozen=True, slots=True)
class Exit:
    """How a run ended: its exit status (negative: the signal that killed it; None: the harness
    stopped it), why the harness stopped it (``wall``, or what the watch said; None: it ended
    by itself) and the CPU seconds it used, as the kernel accounts them to the run's process
    (and to the children it waited for)."""

    status: int | None
    stopped: str | None = None
    cpu_seconds: float = 0.0


def reaped(pid: int) -> tuple[int, float]:
    """(exit status as ``subprocess`` gives it, CPU seconds) of the child ``pid``, waited for."""
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _ended(pid: int) -> bool:
    """Whether the child ``pid`` has ended (left for :func:`reaped` to reap)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def wait(proc: subprocess.Popen[bytes], seconds: float, watch: Watch | None) -> str | None:
    """Wait for ``proc`` to end (on a pidfd where Linux has one), asking ``watch`` every
    ``POLL`` seconds: None when it ended, else why it must be stopped (``wall`` after
    ``seconds``). The child is not reaped."""
    deadline = time.monotonic() + seconds
    try:
        pidfd: int | None = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "wall"
            step = left if watch is None else min(left, POLL)
            if pidfd is not None:
                if select.select([pidfd], [], [], step)[0]:
                    return None
            else:
                time.sleep(min(step, POLL))
                if _ended(proc.pid):
                    return None
            why = None if watch is None else watch()
            if why is not None:
                return why
    finally:
        if pidfd is not None:
            os.close(pidfd)
