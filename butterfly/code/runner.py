"""Running a program: one child process, never the harness's own (contract section 7).

``run_program`` is the one seam: the sandbox (issue 23, item 3: bubblewrap, resource limits, no
network) is not built yet and will replace this function's body. Today the child is
``sys.executable -I`` in a fresh temporary directory, with an environment of PATH and LANG only,
a wall-clock timeout, and stdout, stderr and output files capped in size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CAP: Final = 32 * 1024 * 1024
"""Bytes kept of stdout, stderr and each output file; more marks the run ``flooded``."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run showed: exit status (None on timeout), streams, the files it left."""

    status: int | None
    stdout: bytes
    stderr: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)
    flooded: bool = False

    @property
    def ok(self) -> bool:
        return self.status == 0 and not self.flooded


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _collect(root: Path, inputs: Mapping[str, bytes]) -> tuple[dict[str, bytes], bool]:
    files, flooded = {}, False
    for path in sorted(root.iterdir()):
        if path.name == "tool.py" or path.name in inputs or not path.is_file():
            continue
        flooded |= path.stat().st_size > CAP
        files[path.name] = path.read_bytes()[:CAP]
    return files, flooded


def run_program(source: str, args: list[str], stdin: bytes = b"", timeout: float = 10.0,
                inputs: Mapping[str, bytes] | None = None) -> Outcome:
    """Run ``source`` as ``tool.py ARGS`` with ``inputs`` written beside it; return the
    outcome with every new file the program left in its directory."""
    inputs = inputs or {}
    with tempfile.TemporaryDirectory(prefix="bfcode-") as tmp:
        root = Path(tmp)
        (root / "tool.py").write_text(source, encoding="utf-8")
        for name, data in inputs.items():
            (root / name).write_bytes(data)
        try:
            done = subprocess.run([sys.executable, "-I", "tool.py", *args], cwd=root,
                                  input=stdin, capture_output=True, env=_env(),
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            return Outcome(None, (e.stdout or b"")[:CAP], (e.stderr or b"")[:CAP])
        files, flooded = _collect(root, inputs)
        flooded |= len(done.stdout) > CAP or len(done.stderr) > CAP
        return Outcome(done.returncode, done.stdout[:CAP], done.stderr[:CAP], files, flooded)
