"""The one error the renderer raises."""

from __future__ import annotations

from tollway import BadRequest

__all__ = ["RenderError"]


class RenderError(BadRequest, ValueError):
    """Input cannot be rendered; str(error) is the client-facing reason.

    A :class:`tollway.BadRequest`, so it reaches an HTTP client as a 400 saying why,
    wherever it is raised, with no route translating it; and still a ``ValueError``
    (a value that cannot be rendered) for callers outside a request.
    """
