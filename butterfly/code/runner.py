"""Running a program: one child process in the sandbox, never the harness's own (contract
section 7).

``run_program`` is the one seam the extractor calls. The program runs as ``tool.py`` in a fresh
private directory holding only it and its inputs, inside the sandbox of ``butterfly.code.sandbox``
(bubblewrap, or the documented fallback: ``sandbox_kind()`` says which): no network, no other
writable place, a clean environment, limits on wall-clock and CPU time, memory, file size and
processes. Its stdout and stderr go to files of the harness outside that directory; stdout,
stderr and each output file are capped at 32 MiB (more marks the run ``flooded``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from butterfly.code import sandbox

CAP: Final = 32 * 1024 * 1024
"""Bytes kept of stdout, stderr and each output file; more marks the run ``flooded``."""

SIGNAL_LIMITS: Final = {-24: "cpu", -25: "file-size"}
"""Signals a limit sends: SIGXCPU at the CPU limit, SIGXFSZ at the file-size limit (Python
ignores SIGXFSZ: its write fails instead, and the file is more than ``CAP``, ``output``)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run showed: exit status (None on timeout, negative: killed by that signal),
    streams, the files it left, and which limit it hit (``wall``, ``cpu``, ``file-size``,
    ``output``, ``memory``, ``processes``; None when none was seen)."""

    status: int | None
    stdout: bytes
    stderr: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)
    flooded: bool = False
    limit: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.flooded


def _collect(root: Path, inputs: Mapping[str, bytes]) -> tuple[dict[str, bytes], bool]:
    files, flooded = {}, False
    for path in sorted(root.iterdir()):
        if path.name == "tool.py" or path.name in inputs or not path.is_file() \
                or path.is_symlink():
            continue
        flooded |= path.stat().st_size > CAP
        with open(path, "rb") as f:
            files[path.name] = f.read(CAP)
    return files, flooded


def _read(path: Path) -> tuple[bytes, bool]:
    with open(path, "rb") as f:
        data = f.read(CAP + 1)
    return data[:CAP], len(data) > CAP


def _limit(status: int | None, flooded: bool, stderr: bytes) -> str | None:
    """The limit a run hit, as far as its status and the last line of its stderr show."""
    if status is None:
        return "wall"
    if status in SIGNAL_LIMITS:
        return SIGNAL_LIMITS[status]
    if flooded:
        return "output"
    last = stderr.rstrip().rsplit(b"\n", 1)[-1]
    if last.startswith(b"MemoryError"):
        return "memory"
    if b"[Errno 11] Resource temporarily unavailable" in last:
        return "processes"
    return None


def run_program(source: str, args: list[str], stdin: bytes = b"", timeout: float = 10.0,
                inputs: Mapping[str, bytes] | None = None) -> Outcome:
    """Run ``source`` as ``tool.py ARGS`` with ``inputs`` written beside it, in the sandbox;
    return the outcome with every new file the program left in its directory."""
    inputs = inputs or {}
    with tempfile.TemporaryDirectory(prefix="bfcode-") as tmp:
        own, work = Path(tmp), Path(tmp) / "work"
        work.mkdir()
        (work / "tool.py").write_text(source, encoding="utf-8")
        for name, data in inputs.items():
            (work / name).write_bytes(data)
        sandbox.prepare(work)
        (own / "stdin").write_bytes(stdin)
        with open(own / "stdin", "rb") as i, open(own / "stdout", "wb") as o, \
                open(own / "stderr", "wb") as e:
            status = sandbox.execute(work, args, sandbox.Streams(i, o, e),
                                     sandbox.Limits.for_timeout(timeout, CAP + 1))
        (out, big_out), (err, big_err) = _read(own / "stdout"), _read(own / "stderr")
        files, flooded = _collect(work, inputs)
        flooded |= big_out or big_err
        return Outcome(status, out, err, files, flooded, _limit(status, flooded, err))
