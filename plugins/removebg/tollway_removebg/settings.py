"""``[products.removebg.settings]``: what an operator can configure.

The gateway validates them at start-up (``gateway.product_settings(RemoveBgSettings)``);
the ``tollway removebg`` commands read them from the configured ``Settings``
(``settings.product_settings("removebg", RemoveBgSettings)``), the same conversion.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tollway_removebg.weights import DEFAULT_MODEL, MODELS, ModelName, default_models_dir

MiB = 1024 * 1024


class RemoveBgSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional; operations.md documents each."""

    models_dir: str | None = None
    """Directory of the weights files; default ``$U2NET_HOME``, else ``~/.u2net``."""
    model: ModelName = DEFAULT_MODEL
    """``u2netp`` (4.6 MB, fast) or ``u2net`` (176 MB, finer edges)."""
    model_path: str | None = None
    """An explicit weights file (U²-Net-shaped ONNX), overriding the two above."""
    allow_private_urls: bool = False
    """Let ``image_url`` reach loopback and private addresses (tests, closed networks)."""
    fetch_timeout: float = 10.0
    """Seconds fetching one ``image_url`` may take in all."""
    max_download_bytes: int = 10 * MiB
    """Largest image fetched from a URL."""
    max_megapixels: float = 36.0
    """Largest input image, in millions of pixels (decompression bombs stop here)."""
    result_ttl: int = 86_400
    """Seconds a result stays downloadable at its ``result_url``."""
    result_secret: str | None = None
    """Key signing result URLs; unset, a random one is made once and kept in the
    database, so every process of the deployment shares it."""
    batch_lease: float = 60.0
    """Seconds a process holds a running batch between renewals (every third of it):
    a batch whose process died is taken up again this long after its last renewal."""
    batch_poll_interval: float = 10.0
    """Seconds between looks for batches no process holds (never queued, or cut off)."""
    public_url: str | None = None
    """Base of result URLs (``https://api.example.com``); default: the origin trusted
    proxies report (``X-Forwarded-Proto``/``-Host`` from ``trusted_proxies``), else the
    server's own address, never the request's ``Host`` header."""

    def __post_init__(self) -> None:
        if self.fetch_timeout <= 0 or self.result_ttl <= 0 or self.max_download_bytes <= 0:
            raise ValueError("fetch_timeout, result_ttl and max_download_bytes must be > 0")
        if self.batch_lease <= 0 or self.batch_poll_interval <= 0:
            raise ValueError("batch_lease and batch_poll_interval must be > 0")
        if self.max_megapixels <= 0:
            raise ValueError("max_megapixels must be > 0")

    @property
    def model_name(self) -> str:
        return "custom" if self.model_path else self.model

    def model_file(self) -> Path:
        """``model_path``, else ``<models_dir>/<model>.onnx``."""
        if self.model_path:
            return Path(self.model_path).expanduser()
        base = Path(self.models_dir).expanduser() if self.models_dir else default_models_dir()
        return base / MODELS[self.model].file_name
