"""tollway's developer product: API keys, webhook endpoints and the scope and event
catalogs at ``/v1/developer``."""
