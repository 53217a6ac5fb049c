"""The sandbox a model's program runs in (contract section 7, docs/code-track.md "The sandbox").

``execute(work, args, streams, limits, watch)`` runs ``python -I tool.py ARGS`` in a child process
with ``work`` (the program's private directory) as the only writable place, and returns how it
ended (``child.Exit``: its status, whether the harness stopped it and why, its CPU seconds).
Two kinds, ``sandbox_kind()`` says which one is in use (for the run manifest to record):

- ``bubblewrap``: Linux namespaces through ``bwrap``: no network (a network namespace of its own),
  its own pid, IPC, UTS and mount namespaces, a read-only view of ``/usr`` and of the
  interpreter's prefix and nothing else of the machine (its own root and ``/dev`` read-only
  too), an empty environment. When the harness is root, bwrap is run as root (only root can
  read an interpreter under ``/root``) and hands the program to ``setpriv``, which drops to
  uid/gid 65534 with no capabilities and no new privileges; otherwise bwrap makes an
  unprivileged user namespace. When the program ends (or
  is killed) the pid namespace goes with it: nothing it started survives the call. The private
  directory appears at its own path (a traceback names the same file in both kinds).
- ``fallback``: where bwrap is missing or cannot make namespaces, or ``BUTTERFLY_SANDBOX=fallback``
  forces it: the same resource limits, a clean environment, uid/gid 65534 when the harness is
  root and the interpreter is readable by others, and an audit hook installed before the
  program runs, refusing sockets, processes, signals, ctypes, reading or listing outside the
  interpreter's prefix, ``/usr`` and the private directory, and writing outside the private
  directory. A speed bump, not a wall: it does not stop code that escapes Python (a C
  extension already loaded), and as root it cannot stop reads the hook does not see.

Both apply the resource limits of ``Limits`` (CPU seconds, address space, file size, processes,
no core files) to the child before it starts (through ``prlimit``), stop it when its wall-clock
limit passes or the harness's watch asks (``Watch``: the runner's total output
cap, a stop request), and kill its process group at the end, on every path out (an interrupt
included).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, Literal

from butterfly.errors import UserError

Kind = Literal["bubblewrap", "fallback"]

UID: Final = 65534
"""The unprivileged user (``nobody``) a program runs as when the harness is root."""
ENV: Final = "BUTTERFLY_SANDBOX"
"""Unset or ``auto``: bubblewrap where it works, else the fallback; ``bubblewrap``: bubblewrap
or a ``SandboxUnavailable`` error; ``fallback``: the fallback."""
VENV: Final = "/venv"
"""The empty venv the program's interpreter runs as, inside bubblewrap."""
SYSTEM_LINKS: Final = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")


class SandboxUnavailable(UserError):
    """``BUTTERFLY_SANDBOX`` asks for what this machine cannot give (bubblewrap missing or
    unable to make namespaces, or an unknown value). One line, exit status 1."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one run: wall-clock and CPU seconds, address space, the size of any file
    it writes (stdout and stderr are files too), and processes of its user (shared by every
    run of that user at once)."""

    wall_seconds: float
    cpu_seconds: int
    memory_bytes: int = 1 << 30
    file_bytes: int = 32 * 1024 * 1024 + 1
    processes: int = 32

    @classmethod
    def for_timeout(cls, timeout: float, file_bytes: int, cpu: float | None = None) -> Limits:
        """``timeout`` wall-clock seconds, and as many CPU seconds (rounded up; ``cpu`` when
        given, as when a budget has fewer left)."""
        seconds = timeout if cpu is None else min(timeout, cpu)
        return cls(wall_seconds=timeout, cpu_seconds=max(1, math.ceil(seconds)),
                   file_bytes=file_bytes)


@dataclass(frozen=True, slots=True)
class Streams:
    """The child's stdin, stdout and stderr: files of the harness, outside the private dir."""
    stdin: IO[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]


# The child waited for: until it ends, its wall-clock limit passes or the harness's watch
# says to stop it; then reaped with the CPU seconds it used (:func:`execute`).

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


# The fallback's wrapper: the audit hook a program runs under where bubblewrap cannot run.
# Text only: the harness never runs it; the fallback's child interpreter does, as
# ``python -I -S -c GUARD tool.py ARGS``.

GUARD: Final = r'''
import os, sys, runpy, site
site.setquit(); site.setcopyright(); site.sethelper()
def _guard():
    root = os.path.realpath(os.getcwd())
    reads = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, "/usr")} | {root}
    devices = {"/dev/null", "/dev/zero", "/dev/urandom"}
    writing_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    mutating = {"os." + e for e in ("remove", "rename", "rmdir", "mkdir", "chmod", "chown",
                "symlink", "link", "truncate", "utime", "setxattr", "removexattr", "chflags")}
    refused = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn",
               "os.fork", "os.kill", "os.system", "os.startfile", "pty.", "signal.pthread_kill",
               "_posixsubprocess", "os.pidfd", "mmap.")
    modules = {"_posixsubprocess", "_ctypes", "ctypes"}
    def inside(path, bases):
        p = os.path.realpath(os.fsdecode(path))
        return p in devices or any(
            p == b or p.startswith(b.rstrip("/") + "/") for b in bases)
    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")
                       or isinstance(flags, int) and flags & writing_flags)
            if not inside(path, {root} if writing else reads):
                raise PermissionError(f"sandbox: {'writing' if writing else 'reading'} "
                                      f"{path!r} is refused")
        elif event in ("os.listdir", "os.scandir"):
            if isinstance(args[0], (str, bytes, os.PathLike)) and not inside(args[0], reads):
                raise PermissionError(f"sandbox: listing {args[0]!r} is refused")
        elif event in mutating:
            for a in args:
                if isinstance(a, (str, bytes, os.PathLike)) and not inside(a, {root}):
                    raise PermissionError(f"sandbox: {event} {a!r} is refused")
        elif event == "import" and args[0] in modules or event.startswith(refused):
            raise PermissionError(f"sandbox: {event} {args[0] if args else ''} is refused")
    sys.addaudithook(hook)
_guard()
del _guard
sys.argv = sys.argv[1:]
runpy.run_path(os.path.abspath(sys.argv[0]), run_name="__main__")
'''
"""The fallback's wrapper (``python -I -S -c GUARD tool.py ARGS``): the builtins ``site`` would
add (``exit``, ``help``...; no site-packages: the standard library only), the audit hook, then
the program as ``__main__`` with ``sys.argv`` as ``python tool.py ARGS`` would give it."""


def _is_root() -> bool:
    return os.geteuid() == 0


def _interpreter() -> Path:
    """The real interpreter (a venv's ``python`` is a link to it, or names it)."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable))


def _prefix() -> Path:
    return Path(os.path.realpath(sys.base_prefix))


def _system_binds() -> list[str]:
    out = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            out += ["--ro-bind", str(path), str(path)]
    return out


def _prefix_binds() -> list[str]:
    """The interpreter's prefix at its own path (its library path is absolute), each parent
    directory made traversable (bwrap copies ``/root``'s mode 0700 otherwise)."""
    out: list[str] = []
    for path in (_prefix(), _interpreter().parent):
        if path.is_relative_to("/usr") or (path.is_relative_to(_prefix()) and path != _prefix()):
            continue
        out += [*_parents(path), "--ro-bind", str(path), str(path)]
    return out


def _parents(path: Path) -> list[str]:
    """bwrap options making each parent directory of ``path`` traversable by anyone."""
    out: list[str] = []
    for parent in reversed(path.parents[:-1]):
        out += ["--perms", "0755", "--dir", str(parent)]
    return out


def venv_cfg() -> bytes:
    """The ``pyvenv.cfg`` of the sandbox's empty venv (``VENV``): the interpreter runs as a venv
    without site-packages, so the program sees the standard library only (and the base
    interpreter's ``.pth`` files, 0.1 s of imports here, are not read)."""
    return f"home = {_interpreter().parent}\ninclude-system-site-packages = false\n".encode()


def _bwrap_argv(work: Path, args: list[str], info: int, cfg: int) -> list[str]:
    """The bwrap command; it writes the sandbox's pid 1 (its host pid) to the fd ``info`` and
    reads the venv's ``pyvenv.cfg`` from the fd ``cfg``."""
    if _is_root():
        spaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                  "--unshare-cgroup-try"]
        drop = [shutil.which("setpriv") or "setpriv", f"--reuid={UID}", f"--regid={UID}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
                "--"]
    else:
        spaces, drop = ["--unshare-all"], []
    return [shutil.which("bwrap") or "bwrap", *spaces, "--info-fd", str(info),
            "--die-with-parent", "--new-session",
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            *_system_binds(), *_prefix_binds(), "--proc", "/proc", "--dev", "/dev",
            *_parents(work), "--bind", str(work), str(work), "--chdir", str(work),
            *_parents(Path(VENV, "bin", "python")), "--symlink", str(_interpreter()),
            f"{VENV}/bin/python",
            "--perms", "0644", "--ro-bind-data", str(cfg), f"{VENV}/pyvenv.cfg",
            "--remount-ro", "/dev", "--remount-ro", "/",
            *drop, f"{VENV}/bin/python", "-I", "tool.py", *args]




@functools.cache
def _prefix_readable_by_others() -> bool:
    """Whether uid 65534 could start the interpreter (every directory to it traversable)."""
    for path in (_prefix(), _interpreter()):
        for parent in [path, *path.parents]:
            if parent.is_dir() and not parent.stat().st_mode & stat.S_IXOTH:
                return False
    return True


def _drops_user(kind: Kind) -> bool:
    """Whether ``subprocess`` itself must set the user (the fallback as root); bubblewrap as
    root drops it inside, through setpriv."""
    return kind == "fallback" and _is_root() and _prefix_readable_by_others()


def _fallback_argv(args: list[str]) -> list[str]:
    return [str(_interpreter()), "-I", "-S", "-c", GUARD, "tool.py", *args]


def _rlimits(limits: Limits) -> list[tuple[int, str, tuple[int, int]]]:
    cpu = limits.cpu_seconds
    return [(resource.RLIMIT_CPU, "cpu", (cpu, cpu + 1)),
            (resource.RLIMIT_AS, "as", (limits.memory_bytes,) * 2),
            (resource.RLIMIT_FSIZE, "fsize", (limits.file_bytes,) * 2),
            (resource.RLIMIT_NPROC, "nproc", (limits.processes,) * 2),
            (resource.RLIMIT_CORE, "core", (0, 0))]


def _prlimit(limits: Limits) -> list[str]:
    """util-linux's ``prlimit`` setting the limits, then exec'ing the command (no ``preexec_fn``,
    which is unsafe in a threaded harness); empty where it is missing (see ``_limit``)."""
    found = shutil.which("prlimit")
    return [found, *(f"--{name}={soft}:{hard}" for _, name, (soft, hard) in _rlimits(limits)),
            "--"] if found else []


def _limit(limits: Limits) -> None:
    """In the child, before exec, where ``prlimit`` is missing: the same limits."""
    for which, _, value in _rlimits(limits):
        resource.setrlimit(which, value)


def prepare(work: Path) -> None:
    """Make ``work`` the program's own: owned by uid 65534 when the program will run as it."""
    if _is_root() and (sandbox_kind() == "bubblewrap" or _drops_user("fallback")):
        os.chown(work, UID, UID)


def _normalise(kind: Kind, status: int) -> int:
    """bwrap reports a child killed by signal N as 128 + N; subprocess as -N. Signals as -N."""
    if kind == "bubblewrap" and 128 < status < 128 + signal.NSIG:
        return 128 - status
    return status


def _sandbox_init(info: int) -> int | None:
    """The host pid of the sandbox's pid 1, from bwrap's ``--info-fd`` JSON (None: not there)."""
    os.set_blocking(info, False)
    try:
        found = re.search(rb'"child-pid"\s*:\s*(\d+)', os.read(info, 4096))
    except BlockingIOError:
        return None
    return int(found.group(1)) if found else None


def _reaped_cpu(init: int | None) -> float:
    """CPU seconds of the children the sandbox's pid 1 has reaped (the program, when it ended
    by itself: bwrap returns without waiting for pid 1, so its own accounting misses them)."""
    try:
        fields = Path(f"/proc/{init}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _end_namespace(init: int | None) -> None:
    """Kill the sandbox's pid 1 (the kernel then kills everything in its pid namespace) and wait
    until it is dead: it turns zombie only once every other process in it has gone. bwrap may
    return the program's status before that."""
    if init is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(init, signal.SIGKILL)
    for _ in range(500):
        try:
            state = Path(f"/proc/{init}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def _start(kind: Kind, work: Path, args: list[str], streams: Streams, limits: Limits,
           fds: tuple[int, int]) -> subprocess.Popen[bytes]:
    bwrap = kind == "bubblewrap"
    argv = _bwrap_argv(work, args, *fds) if bwrap else _fallback_argv(args)
    env = {} if bwrap else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    user = UID if _drops_user(kind) else None
    wrap = _prlimit(limits)
    return subprocess.Popen([*wrap, *argv], stdin=streams.stdin, stdout=streams.stdout,
                            stderr=streams.stderr, cwd=work, env=env, start_new_session=True,
                            user=user, group=user, extra_groups=[] if user else None,
                            pass_fds=fds if bwrap else (),
                            preexec_fn=None if wrap else functools.partial(_limit, limits))


def execute(work: Path, args: list[str], streams: Streams, limits: Limits,
            watch: Watch | None = None, kind: Kind | None = None) -> Exit:
    """Run ``tool.py ARGS`` in ``work`` in a sandbox of ``kind`` (None: the kind in use,
    ``sandbox_kind``) until it ends, its wall-clock limit passes or ``watch`` says to stop it.
    Nothing it started is left running when this returns or raises (its pid namespace, or its
    process group, is killed)."""
    kind = sandbox_kind() if kind is None else kind
    info, info_w = os.pipe()
    cfg, cfg_w = os.pipe()
    stopped: str | None = None
    try:
        os.write(cfg_w, venv_cfg())
        os.close(cfg_w)
        try:
            proc = _start(kind, work, args, streams, limits, (info_w, cfg))
        finally:
            os.close(info_w)
        try:
            stopped = wait(proc, limits.wall_seconds, watch)
        finally:  # an interrupt here too: the program never outlives the call
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            status, cpu = reaped(proc.pid)
            proc.returncode = status
            if kind == "bubblewrap":
                init = _sandbox_init(info)
                cpu += _reaped_cpu(init)
                _end_namespace(init)
    finally:
        os.close(info)
        os.close(cfg)
    return Exit(None if stopped else _normalise(kind, status), stopped, cpu)


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot run here (None: it can): a trivial program is run once, cached."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    if _is_root() and shutil.which("setpriv") is None:
        return "setpriv is not installed (util-linux)"
    with tempfile.TemporaryDirectory(prefix="bfprobe-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "tool.py").write_text("open('ok', 'w').write('ok')\n", encoding="utf-8")
        if _is_root():
            os.chown(work, UID, UID)
        with open(Path(tmp) / "err", "w+b") as err, open(os.devnull, "r+b") as null:
            status = execute(work, [], Streams(null, null, err), Limits.for_timeout(10.0, 1 << 20),
                             kind="bubblewrap").status
            err.seek(0)
            said = err.read().decode("utf-8", "replace").strip().splitlines()
        if status == 0 and (work / "ok").is_file():
            return None
        return f"bwrap failed (status {status}): {said[-1] if said else 'no message'}"


def sandbox_kind() -> Kind:
    """The sandbox in use: ``bubblewrap`` when it works here (probed once, cached) unless
    ``BUTTERFLY_SANDBOX=fallback``; ``BUTTERFLY_SANDBOX=bubblewrap`` raises
    ``SandboxUnavailable`` rather than fall back. Read at each run (the variable may change)."""
    wanted = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if wanted == "fallback":
        return "fallback"
    if wanted not in ("auto", "bubblewrap"):
        raise SandboxUnavailable(f"{ENV}={wanted!r}: expected auto, bubblewrap or fallback")
    problem = bubblewrap_problem()
    if problem is None:
        return "bubblewrap"
    if wanted == "bubblewrap":
        raise SandboxUnavailable(f"{ENV}=bubblewrap but {problem}")
    return "fallback"
