"""What a QR code drawn by the code product encodes: the caller's text, or what a plugin
recognising it makes of it (``tollway_qr_content``; the short links product marks its
own short links so that their scans count as ``(qr)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tollway import Gateway, PublicOrigin


class QrContent:
    """The ``tollway_qr_content`` hook for one gateway (a service)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._ask = gateway.plugins.hook.tollway_qr_content
        self._origin = PublicOrigin(gateway.settings.trusted_proxies)

    def for_request(self, scope: Any) -> Callable[[str], str]:
        """The text to encode for each text a request (``scope``) asks for."""
        origin = self._origin.of(scope)

        def content(text: str) -> str:
            answers: list[str | None] = self._ask(
                content=text, origin=origin, gateway=self._gateway
            )
            return next((answer for answer in answers if answer is not None), text)

        return content
