"""``tollway.asgi:app``: the gateway configured from the environment, for ASGI servers.

Each server worker process imports this module, sets up logging (``log_format``) and
builds its own gateway; once started, the gateway's objects are set aside from the
garbage collector (:func:`tollway.app.freeze_garbage`).
"""

from tollway.app import create_app
from tollway.gateway import Gateway
from tollway.observability.logs import configure_logging
from tollway.settings import load_settings

settings = load_settings()
configure_logging(settings)
app = create_app(Gateway(settings), server=True)
