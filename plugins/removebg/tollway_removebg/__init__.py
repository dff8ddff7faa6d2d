"""tollway product plugin: background removal at /v1/removebg."""
