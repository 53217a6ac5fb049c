"""One Jupyter kernel for the notebook tests of a pytest process, each execution as from a fresh
kernel (tests/butterfly/kaggle/: the notebook executed headless against loopback fake servers).

A new kernel per execution cost most of each test's time: the kernel's start, then the first
cell's ``import kaggle_benchmarks``, which in a notebook kernel imports panel and bokeh as well
(about 10 s of a 2-core machine's time, every test). Here one kernel is started once; before
each execution it is put back to what a new kernel would hold, outside the notebook's cells
(which run unchanged, every one of them):

- the modules the notebook defines or whose state it changes are dropped from ``sys.modules``:
  the inlined package (``oracle``, ``butterfly``), the ``json_repair`` stand-in its first cell may
  make, and ``kaggle_benchmarks`` itself, so its configuration, task registry and magics are
  made again from the environment of this execution (``KAGGLE_KERNEL_RUN_TYPE`` is read when
  it is imported); its dependencies (pandas, panel, openai, ...) stay imported, they keep no
  state the notebook sets;
- the environment is the one a kernel started now would inherit, with this execution's
  variables; the working directory is this execution's;
- the user namespace is emptied (IPython's ``reset``).

A kernel that died or timed out is shut down, and the next execution starts a new one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

FRESH_PACKAGES = ("oracle", "butterfly", "json_repair", "kaggle_benchmarks")
"""Top-level packages dropped from the kernel's ``sys.modules`` before each execution."""

FRESH_STATE = """
def _fresh_state(env, cwd, packages):
    import os
    import sys

    for name in [m for m in sys.modules if m.partition(".")[0] in packages]:
        del sys.modules[name]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)


_fresh_state({env}, {cwd}, {packages})
get_ipython().reset(new_session=False)
"""
"""Run in the kernel before each execution (not a notebook cell): see the module docstring."""


class SharedKernel:
    """One kernel, started at the first execution and again after one that left it unusable."""

    def __init__(self) -> None:
        self.km: Any = None
        self.added: dict[str, str] = {}  # what jupyter_client adds to a kernel's environment

    def execute(self, nb: Any, cwd: Path, env: dict[str, str], timeout: float) -> float:
        """Execute the notebook ``nb`` (in place) as a new kernel started now in ``cwd`` with
        ``env`` added to this process's environment would; the seconds the cells took."""
        from nbclient.exceptions import CellExecutionError

        self._start()
        self._run(FRESH_STATE.format(env=repr({**os.environ, **self.added, **env}),
                                     cwd=repr(str(cwd)), packages=repr(FRESH_PACKAGES)))
        t0 = time.perf_counter()
        try:
            self._execute(nb, timeout, cwd)
        except CellExecutionError:
            raise  # a cell raised: the kernel is as usable as after any error
        except BaseException:
            self.shutdown()  # a timeout, a dead kernel: the next execution starts a new one
            raise
        return time.perf_counter() - t0

    def _client(self, nb: Any, timeout: float, cwd: Path | None = None) -> Any:
        from nbclient import NotebookClient

        return NotebookClient(nb, km=self.km, timeout=timeout, kernel_name="python3",
                              resources={"metadata": {"path": str(cwd or Path.cwd())}})

    def _execute(self, nb: Any, timeout: float, cwd: Path | None = None) -> None:
        """Execute ``nb`` on the kernel through a client of its own, closed after."""
        client = self._client(nb, timeout, cwd)
        try:
            client.execute()
        finally:
            if client.kc is not None:
                client.kc.stop_channels()

    def _start(self) -> None:
        import nbformat
        from nbclient.util import run_sync  # nbclient (declared) re-exports jupyter-core's

        if self.km is not None and run_sync(self.km.is_alive)():
            return
        client = self._client(nbformat.v4.new_notebook(), 120)
        self.km = client.create_kernel_manager()
        client.start_new_kernel()
        inherited = dict(os.environ)
        shown = self._run("import json as _j, os as _o; print(_j.dumps(dict(_o.environ)))")
        self.added = {k: v for k, v in json.loads(shown).items() if inherited.get(k) != v}

    def _run(self, code: str) -> str:
        """Run ``code`` in the kernel, outside any notebook: what it printed (an error in it
        raises ``CellExecutionError``)."""
        import nbformat

        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        self._execute(nb, 120)
        return "".join(o.get("text", "") for o in nb.cells[0].outputs)

    def shutdown(self) -> None:
        """Stop the kernel, if one is running."""
        from nbclient.util import run_sync  # nbclient (declared) re-exports jupyter-core's

        if self.km is not None:
            run_sync(self.km.shutdown_kernel)(now=True)
            self.km = None
