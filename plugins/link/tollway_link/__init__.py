"""tollway's short links product: links at /v1/link, their redirects and click analytics."""
