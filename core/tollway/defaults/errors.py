"""Default error mapping: each product's declared style, ``{"detail"}`` unless it says."""

from __future__ import annotations

from tollway.errors import ErrorMapper, StyledErrorMapper
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl


@hookimpl(trylast=True)
def tollway_error_mapper(gateway: Gateway) -> ErrorMapper:
    return StyledErrorMapper()
