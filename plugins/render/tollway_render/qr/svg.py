"""A laid-out QR symbol as an SVG document."""

from __future__ import annotations

from tollway_render.colours import hex_colour
from tollway_render.qr.layout import QrLayout

__all__ = ["draw_svg"]


def draw_svg(layout: QrLayout, size: int, dark: str, light: str) -> bytes:
    """Same geometry as the PNG; dark modules as one path of per-row runs, in module units."""
    runs: list[str] = []
    for y, row in enumerate(layout.matrix):
        x, width = 0, len(row)
        while x < width:
            if row[x]:
                start = x
                while x < width and row[x]:
                    x += 1
                runs.append(f"M{start} {y}h{x - start}v1h-{x - start}z")
            else:
                x += 1
    transform = f"translate({layout.offset} {layout.offset}) scale({layout.scale})"
    svg = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" shape-rendering="crispEdges">'
        f'<rect width="{size}" height="{size}" fill="{hex_colour(light)}"/>'
        f'<path transform="{transform}" fill="{hex_colour(dark)}" d="{"".join(runs)}"/>'
        "</svg>\n"
    )
    return svg.encode("utf-8")
