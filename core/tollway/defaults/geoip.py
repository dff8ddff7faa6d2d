"""Default GeoIP lookup: the registries' country data embedded in the iptocc wheel."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.geoip import GeoIP, IptoccGeoIP
from tollway.hookspecs import hookimpl


@hookimpl(trylast=True)
def tollway_geoip(gateway: Gateway) -> GeoIP:
    return IptoccGeoIP()
