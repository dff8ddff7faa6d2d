"""``[products.chat.settings]``: what an operator can configure (operations.md
documents each setting)."""

from __future__ import annotations

import msgspec


class ChatSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    smtp_host: str | None = None
    """SMTP server of the ``email`` channel; unset (or empty), the channel connects
    nowhere and each email message fails at once, without retries."""
    smtp_port: int = 25
    """Port of ``smtp_host``."""
    smtp_from: str = "chat@localhost"
    """Sender address of chat emails."""
    smtp_starttls: bool = False
    """Upgrade the SMTP connection with STARTTLS."""
    smtp_username: str | None = None
    """SMTP AUTH user name (used with ``smtp_password``)."""
    smtp_password: str | None = None
    """SMTP AUTH password (used with ``smtp_username``)."""
    smtp_timeout: float = 10.0
    """Seconds one email send may take."""
    delivery_retry_schedule: tuple[float, ...] = (1.0, 5.0, 30.0, 120.0, 600.0)
    """Seconds before each retry of a failed delivery; after the last one the message
    is ``failed`` (empty: no retries)."""
    delivery_poll_interval: float = 2.0
    """Seconds between a process's looks for due deliveries (other processes' messages,
    retries, lapsed leases); a process that adds a message looks at once."""
    stream_secret: str | None = None
    """HS256 secret of live_chat stream tokens; unset (or empty), the deployment secret
    ``chat.stream``, made once and kept in the database for every process."""
    stream_token_ttl: int = 900
    """Seconds a live_chat stream token is valid."""
    stream_max_seconds: int = 3600
    """The longest a live_chat stream stays open, whatever the client asks for."""

    def __post_init__(self) -> None:
        if not 0 < self.smtp_port < 65536:
            raise ValueError("smtp_port must be 1-65535")
        if any(delay < 0 for delay in self.delivery_retry_schedule):
            raise ValueError("delivery_retry_schedule must list delays >= 0")
        if self.smtp_timeout <= 0 or self.delivery_poll_interval <= 0:
            raise ValueError("smtp_timeout and delivery_poll_interval must be > 0")
        if self.stream_token_ttl <= 0 or self.stream_max_seconds <= 0:
            raise ValueError("stream_token_ttl and stream_max_seconds must be > 0")
