"""Logs: plain text as Python sets it up, or one JSON object per line.

``log_format = "json"`` writes every log record on stderr as a JSON object with
``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message``, ``request_id`` (for
records logged while a request is served), ``exc_info`` (the traceback, when there is
one) and the record's ``extra`` fields. The request id comes from
:data:`current_request_id`, which the pipeline sets where it makes the id.

The access log (logger ``tollway.access``, one INFO line per response, with
``method``, ``path``, ``status``, ``duration_ms``, ``request_id`` and ``product``) is
written by :func:`tollway.entry.observe` when :func:`access_log_enabled`.
"""

from __future__ import annotations

import logging
import sys
import time
from contextvars import ContextVar
from typing import IO, Any

import msgspec

from tollway.settings import Settings

ACCESS_LOGGER = "tollway.access"

current_request_id: ContextVar[str | None] = ContextVar("tollway_request_id", default=None)
"""The id of the request being served in this context, ``None`` outside requests."""

_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
}
"""Attributes every log record has; any other attribute came from ``extra``."""

_encoder = msgspec.json.Encoder(enc_hook=repr)


def access_log_enabled(settings: Settings) -> bool:
    """The ``access_log`` setting, or, unset, whether logs are JSON."""
    if settings.access_log is not None:
        return settings.access_log
    return settings.log_format == "json"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = record.__dict__.get("request_id") or current_request_id.get()
        if request_id is not None:
            line["request_id"] = request_id
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        for name, value in record.__dict__.items():
            if name not in _RECORD_ATTRIBUTES and name not in line:
                line[name] = value
        return _encoder.encode(line).decode()


class _TollwayHandler(logging.StreamHandler[IO[str]]):
    """A handler :func:`configure_logging` added, so calling it again replaces it."""

    def __init__(self, stream: IO[str], formatter: logging.Formatter) -> None:
        super().__init__(stream)
        self.setFormatter(formatter)


def configure_logging(settings: Settings, stream: IO[str] | None = None) -> None:
    """Set up logging by ``log_format`` and ``access_log``, for ``tollway serve`` and
    ``tollway.asgi`` (each server worker calls it). Calling it again replaces what an
    earlier call set up.

    ``json``: a handler on the root logger writes every record from INFO up as JSON on
    ``stream`` (default stderr), and ``create_app`` leaves logging alone. ``text``:
    logging is left as Litestar sets it up (the root logger at INFO, one line per
    record, on stderr), except that an enabled access log gets a text handler of its
    own.
    """
    root = logging.getLogger()
    access = logging.getLogger(ACCESS_LOGGER)
    for logger in (root, access):
        for handler in [h for h in logger.handlers if isinstance(h, _TollwayHandler)]:
            logger.removeHandler(handler)
    access.propagate = True
    access.setLevel(logging.NOTSET)
    stream = stream if stream is not None else sys.stderr
    if settings.log_format == "json":
        root.addHandler(_TollwayHandler(stream, JsonFormatter()))
        root.setLevel(logging.INFO)
    elif access_log_enabled(settings):
        text = logging.Formatter("%(asctime)s %(request_id)s %(message)s")
        access.addHandler(_TollwayHandler(stream, text))
        access.setLevel(logging.INFO)
        access.propagate = False
