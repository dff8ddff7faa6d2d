from __future__ import annotations

from collections.abc import Iterator

import pytest
from mail_server import SmtpServer

from tollway.testing import free_port


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer(free_port())
    server.start()
    yield server
    server.stop()
