"""``tollway.asgi:app``: the gateway configured from the environment, for ASGI servers.

Each server worker process imports this module and builds its own gateway.
"""

from tollway.app import create_app
from tollway.gateway import Gateway
from tollway.settings import load_settings

app = create_app(Gateway(load_settings()))
