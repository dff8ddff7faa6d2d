"""Running the ASGI app under a production server, with N worker processes.

granian is the default: on these 2-core machines it serves a bare Litestar route about
1.3x faster than uvicorn with uvloop and httptools (see docs/operations.md).
"""

from __future__ import annotations

from typing import Literal

Server = Literal["granian", "uvicorn"]
APP = "tollway.asgi:app"


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
