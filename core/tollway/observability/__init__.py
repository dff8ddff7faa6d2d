"""What operators watch: health probes, Prometheus metrics and structured logs.

- :mod:`tollway.observability.health`: ``/healthz`` and ``/readyz``;
- :mod:`tollway.observability.metrics`: the per-gateway Prometheus registry and
  ``/metrics``;
- :mod:`tollway.observability.logs`: text or JSON logs carrying the request id.
"""
