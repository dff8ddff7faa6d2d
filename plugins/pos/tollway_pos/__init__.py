"""tollway product plugin: the point of sale API at /v1/pos."""
