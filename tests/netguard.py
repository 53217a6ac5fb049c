"""Run the butterfly CLI with every non-loopback connection attempt recorded and refused.

    python tests/netguard.py LOGFILE butterfly-args...

Patches socket connect/getaddrinfo before anything else is imported, so an import-time fetch
(litellm's model cost map, telemetry) is caught too.
"""

from __future__ import annotations

import ipaddress
import socket
import sys

LOG = sys.argv[1]
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _loopback(host: object) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _note(what: str) -> None:
    with open(LOG, "a") as f:
        f.write(what + "\n")


def connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if not _loopback(host):
        _note(f"connect {address}")
        raise OSError(101, "network is unreachable (blocked by netguard)")
    return _real_connect(self, address)  # type: ignore[arg-type]


def connect_ex(self: socket.socket, address: object) -> int:
    host = address[0] if isinstance(address, tuple) else address
    if not _loopback(host):
        _note(f"connect_ex {address}")
        return 101
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


def getaddrinfo(host: object, *args: object, **kw: object):  # type: ignore[no-untyped-def]
    if isinstance(host, (str, bytes)):
        h = host.decode() if isinstance(host, bytes) else host
        if not _loopback(h):
            _note(f"getaddrinfo {h}")
            raise socket.gaierror(-2, "name resolution blocked by netguard")
    return _real_getaddrinfo(host, *args, **kw)  # type: ignore[arg-type]


socket.socket.connect = connect  # type: ignore[method-assign]
socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = getaddrinfo

if __name__ == "__main__":
    from butterfly.cli import main

    sys.argv = ["butterfly", *sys.argv[2:]]
    sys.exit(main())
