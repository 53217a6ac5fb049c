"""The sandbox holds hostile programs (contract section 7, docs/code-track.md "The sandbox").

Each threat runs through ``run_program`` twice: in bubblewrap (Linux namespaces; on CI a missing
or broken bubblewrap FAILS these tests, elsewhere it skips them) and in the fallback
(``BUTTERFLY_SANDBOX=fallback``). The fallback's audit hook covers, at the Python level: network
(sockets refused), reading the user's files (only the interpreter's prefix, ``/usr`` and the
private directory are readable), writing outside the private directory, forks and processes
(refused, so no fork loop and nothing left running), signals (``os.kill``/``os.killpg``
refused), the environment (cleared); its resource limits cover endless loops, huge allocations
and floods. What it does not cover (code escaping Python, e.g. a C extension) is not tested.

Network tests reach only a loopback listener the test opens itself.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

from butterfly.code import sandbox
from butterfly.code.program import render
from butterfly.code.runner import CAP, Outcome, run_program
from butterfly.code.spec_of_program import extract
from butterfly.core.code_catalogue import canonical, visible

SHORT = 3.0


@pytest.fixture(params=["bubblewrap", "fallback"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The sandbox under test, forced through ``BUTTERFLY_SANDBOX``."""
    if request.param == "bubblewrap":
        problem = sandbox.bubblewrap_problem()
        if problem is not None:
            if os.environ.get("CI"):
                pytest.fail(f"bubblewrap isolation is missing on CI: {problem}")
            pytest.skip(f"bubblewrap isolation is missing here: {problem}")
    monkeypatch.setenv(sandbox.ENV, request.param)
    assert sandbox.sandbox_kind() == request.param
    return str(request.param)


def _text(outcome: Outcome) -> bytes:
    return outcome.stdout + outcome.stderr + b"".join(outcome.files.values())


def _running(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (a program's argument)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_kind_in_use_is_named_and_forcing_an_unavailable_one_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.ENV, "fallback")
    assert sandbox.sandbox_kind() == "fallback"
    monkeypatch.setenv(sandbox.ENV, "chroot")
    with pytest.raises(sandbox.SandboxUnavailable, match="expected auto, bubblewrap or fallback"):
        sandbox.sandbox_kind()
    monkeypatch.setattr(sandbox, "bubblewrap_problem", lambda: "bwrap is not installed")
    monkeypatch.setenv(sandbox.ENV, "bubblewrap")
    with pytest.raises(sandbox.SandboxUnavailable, match="bwrap is not installed"):
        sandbox.sandbox_kind()
    monkeypatch.delenv(sandbox.ENV)
    assert sandbox.sandbox_kind() == "fallback"


def test_bubblewrap_works_on_ci() -> None:
    if os.environ.get("CI"):
        assert sandbox.bubblewrap_problem() is None


def test_the_reference_program_still_extracts(kind: str) -> None:
    spec = canonical()
    assert extract(render(spec), spec) == visible(spec)


@pytest.mark.parametrize("prlimit", [True, False], ids=["prlimit", "preexec_fn"])
def test_the_limits_are_set(kind: str, prlimit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not prlimit:
        monkeypatch.setattr(sandbox, "_prlimit", lambda limits: [])
    src = ("import resource as r\n"
           "print([r.getrlimit(x)[0] for x in (r.RLIMIT_CPU, r.RLIMIT_AS, r.RLIMIT_FSIZE,\n"
           "                                   r.RLIMIT_NPROC, r.RLIMIT_CORE)])\n")
    outcome = run_program(src, [], timeout=SHORT)
    assert outcome.stdout == f"{[3, 1 << 30, CAP + 1, 32, 0]}\n".encode()


def test_no_network_even_to_loopback(kind: str) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        src = ("import socket\n"
               f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
               "print('connected')\n")
        outcome = run_program(src, [], timeout=SHORT)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert not outcome.ok and b"connected" not in outcome.stdout


def test_the_users_files_are_not_readable(kind: str, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-" + uuid.uuid4().hex)
    paths = [str(secret), str(ROOT / "pyproject.toml"), "/root", "/etc/passwd"]
    src = (f"for p in {paths!r}:\n"
           "    try:\n"
           "        print(open(p).read() if not p.endswith('root') else __import__('os')"
           ".listdir(p))\n"
           "    except Exception as e:\n"
           "        print(type(e).__name__)\n")
    outcome = run_program(src, [], timeout=SHORT)
    assert outcome.status == 0
    assert outcome.stdout.count(b"\n") == len(paths)
    assert secret.read_bytes() not in _text(outcome)
    assert b"[project]" not in outcome.stdout and b"root:" not in outcome.stdout


def test_nothing_outside_the_private_directory_is_writable(kind: str, tmp_path: Path) -> None:
    targets = [tmp_path / "escape.txt", Path("/tmp") / f"bf-escape-{uuid.uuid4().hex}"]
    src = (f"for p in {[str(t) for t in targets]!r}:\n"
           "    try:\n"
           "        open(p, 'w').write('escaped')\n"
           "    except Exception as e:\n"
           "        print(type(e).__name__)\n"
           "open('inside.txt', 'w').write('fine')\n")
    outcome = run_program(src, [], timeout=SHORT)
    assert outcome.ok and outcome.files == {"inside.txt": b"fine"}
    assert not [t for t in targets if t.exists()]


def test_a_fork_loop_stops_at_the_process_limit(kind: str) -> None:
    marker = f"bf-fork-{uuid.uuid4().hex}"
    src = ("import os, time\n"
           "n = 0\n"
           "try:\n"
           "    while n < 1000:\n"
           "        if os.fork() == 0:\n"
           "            time.sleep(30)\n"
           "            os._exit(0)\n"
           "        n += 1\n"
           "except Exception as e:\n"
           "    print(n, type(e).__name__)\n")
    outcome = run_program(src, [marker], timeout=SHORT)
    forked = int(outcome.stdout.split()[0])
    assert forked < 32 and outcome.limit in ("processes", None)
    assert _running(marker) == []


def test_an_endless_loop_is_stopped(kind: str) -> None:
    start = time.monotonic()
    outcome = run_program("while True:\n    pass\n", [], timeout=2.0)
    assert not outcome.ok and outcome.limit in ("wall", "cpu")
    assert time.monotonic() - start < 6


def test_a_huge_allocation_fails(kind: str) -> None:
    outcome = run_program("b = bytearray(1 << 34)\nprint('allocated')\n", [], timeout=SHORT)
    assert not outcome.ok and outcome.limit == "memory" and b"allocated" not in outcome.stdout


@pytest.mark.parametrize("target", ["sys.stdout.buffer", "open('big.txt', 'wb')"])
def test_a_flood_of_output_is_flooded(kind: str, target: str) -> None:
    src = f"import sys\nout = {target}\nwhile True:\n    out.write(b'x' * (1 << 20))\n"
    outcome = run_program(src, [], timeout=5.0)
    assert not outcome.ok and outcome.flooded and outcome.limit == "output"
    assert len(outcome.stdout) <= CAP and all(len(v) <= CAP for v in outcome.files.values())


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside the sandbox, of the sandbox's user when the test is root."""
    user = sandbox.UID if os.geteuid() == 0 else None
    proc = subprocess.Popen(["sleep", "60"], user=user, group=user,
                            extra_groups=[] if user else None)
    yield proc
    proc.kill()
    proc.wait()


def test_killing_the_parent_or_everything_harms_no_one(
        kind: str, victim: subprocess.Popen[bytes]) -> None:
    src = ("import os, signal\n"
           "for call in (lambda: os.kill(os.getppid(), 9), lambda: os.kill(-1, 9),\n"
           "             lambda: os.killpg(os.getpgid(os.getppid()), 9),\n"
           f"             lambda: os.kill({os.getpid()}, 9), lambda: os.killpg(0, 9)):\n"
           "    try:\n"
           "        call()\n"
           "    except Exception as e:\n"
           "        print(type(e).__name__)\n")
    outcome = run_program(src, [], timeout=SHORT)
    assert outcome.status is not None  # it ended, killed or refused, and this test lives on
    assert victim.poll() is None
    os.kill(os.getpid(), 0)
    assert signal.getsignal(signal.SIGTERM) is not None


def test_nothing_is_left_running(kind: str) -> None:
    marker = f"bf-daemon-{uuid.uuid4().hex}"
    src = ("import os, time\n"
           "try:\n"
           "    if os.fork() == 0:\n"
           "        os.setsid()\n"
           "        if os.fork() == 0:\n"
           "            time.sleep(30)\n"
           "        os._exit(0)\n"
           "except Exception as e:\n"
           "    print(type(e).__name__)\n"
           "print('parent done')\n")
    outcome = run_program(src, [marker], timeout=SHORT)
    assert b"parent done" in outcome.stdout
    assert _running(marker) == []
    time.sleep(0.2)
    assert _running(marker) == []


def test_the_environment_is_cleared(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    src = ("import os\n"
           "print(dict(os.environ))\n"
           "for p in ('/proc/self/environ', '/proc/1/environ', f'/proc/{os.getppid()}/environ'):\n"
           "    try:\n"
           "        print(open(p, 'rb').read())\n"
           "    except Exception as e:\n"
           "        print(type(e).__name__)\n")
    outcome = run_program(src, [], timeout=SHORT)
    assert outcome.status == 0 and key.encode() not in _text(outcome)
    assert b"OPENAI_API_KEY" not in outcome.stdout
