"""The JSON body of every delivery: ``{id, event, created_at, data}``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class Envelope(msgspec.Struct):
    """``id`` is the event's (``evt_...``), the same on every attempt and redelivery,
    so receivers deduplicate by it; ``created_at`` is when the event was emitted."""

    id: str
    event: str
    created_at: datetime
    data: dict[str, Any]
