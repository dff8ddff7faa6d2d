"""A real SMTP server (aiosmtpd) on a free port that keeps what it receives, and the
chat settings that send to it."""

from __future__ import annotations

from typing import Any

from aiosmtpd.controller import Controller


class Mailbox:
    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        return "250 OK"


class SmtpServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.mailbox = Mailbox()
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=port)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


def chat_settings(port: int, **more: Any) -> dict[str, Any]:
    settings = {
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "smtp_from": "support@acme.example",
        "delivery_retry_schedule": [0.2, 0.2, 0.2],
        **more,
    }
    return {"chat": {"settings": settings}}
