"""Running the ASGI app under a production server, with N worker processes.

granian is the default: on these 2-core machines it serves a bare Litestar route about
1.3x faster than uvicorn with uvloop and httptools (see docs/operations.md).
"""

from __future__ import annotations

import errno
import socket
from typing import Literal

Server = Literal["granian", "uvicorn"]
APP = "tollway.asgi:app"


class PortUnavailable(OSError):
    """The address ``serve`` was asked to listen on cannot be had; the message says why."""


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`PortUnavailable` unless ``host:port`` is free to listen on.

    granian listens with ``SO_REUSEPORT``, so a second gateway started on a port in use
    would not fail: it would quietly take a share of the connections (and, without
    Redis, keep rate limit counters of its own). This binds a probe socket without
    ``SO_REUSEPORT`` first, which any listener on the port refuses; the processes that
    ``--workers`` starts share the port afterwards, as intended.
    """
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise PortUnavailable(f"cannot listen on {host}:{port}: {error.strerror}") from error
    with socket.socket(family, kind, protocol) as probe:
        # As servers do, so that connections of a stopped server in TIME_WAIT are no
        # obstacle; a listening socket still is.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortUnavailable(
                    f"port {port} on {host} is already in use (another tollway serve?); "
                    "to run several gateway processes on one port use --workers N"
                ) from error
            raise PortUnavailable(f"cannot listen on {host}:{port}: {error.strerror}") from error


def serve(host: str, port: int, *, workers: int = 1, server: Server = "granian") -> None:
    if server == "granian":
        from granian.constants import Interfaces, Loops
        from granian.server import Server as Granian

        Granian(
            APP,
            address=host,
            port=port,
            interface=Interfaces.ASGI,
            workers=workers,
            loop=Loops.auto,
            log_access=False,
        ).serve()
    else:
        import uvicorn

        uvicorn.run(
            APP,
            host=host,
            port=port,
            workers=workers,
            loop="uvloop",
            http="httptools",
            access_log=False,
        )
