"""Image segmentation: the model that cuts a foreground out of its background.

The background removal product asks the ``tollway_segmenter`` hook for one object
satisfying :class:`Segmenter` per gateway. Models are heavy: the core never imports
an imaging or inference library itself (Pillow appears here for type checking only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from PIL import Image


class Segmenter(Protocol):
    """A foreground segmentation model. Both methods block: callers run them in a
    worker thread, never on the event loop."""

    name: str
    """Short name of the model, for logs and operators (``u2netp``)."""

    def cut_out(self, image: Image.Image) -> Image.Image:
        """``image`` (RGB) as an RGBA image of the same size whose background pixels
        have alpha 0 and foreground pixels alpha 255 (soft edges in between)."""
        ...

    def warm_up(self) -> None:
        """Load the model so the first ``cut_out`` is fast; raises if it cannot be
        loaded (a missing weights file), with a message saying what to do."""
        ...
