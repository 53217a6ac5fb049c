"""The fallback sandbox's wrapper: the audit hook a program runs under where bubblewrap cannot
run (``butterfly.code.sandbox``, kind ``fallback``; docs/code-track.md "The sandbox").

Text only: the harness never runs it; the fallback's child interpreter does, as
``python -I -S -c GUARD tool.py ARGS``.
"""

from __future__ import annotations

from typing import Final

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
