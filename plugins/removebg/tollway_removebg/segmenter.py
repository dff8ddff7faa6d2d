"""The default segmentation model: rembg's U²-Net session on a local weights file.

``import rembg`` compiles numba code (pymatting) for about 100 s unless numba's cache
is warm, so rembg is imported lazily, in the worker thread that warms the model up,
and numba's cache directory defaults to a persistent one. Sessions are cached per
weights file and process: every gateway of a process shares one.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

SESSION_KIND = "u2net_custom"
"""rembg's session for U²-Net-shaped weights read from an explicit file."""

_lock = threading.Lock()
_sessions: dict[Path, Any] = {}


class ModelUnavailable(RuntimeError):
    """The weights file cannot be loaded; the message says how to get it."""


def numba_cache_dir() -> Path:
    """Where numba keeps compiled code between runs (``$NUMBA_CACHE_DIR`` wins)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "tollway" / "numba"


def compile_rembg() -> None:
    """Import rembg now, compiling its numba code into the cache if it is cold."""
    _rembg()


def _rembg() -> Any:
    if "NUMBA_CACHE_DIR" not in os.environ:
        directory = numba_cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(directory)
    import rembg  # type: ignore[import-untyped]

    return rembg


def _open_session(path: Path) -> Any:
    """A rembg session on ``path``, opened once per process."""
    with _lock:
        session = _sessions.get(path)
        if session is not None:
            return session
        if not path.is_file():
            raise ModelUnavailable(
                f"segmentation weights {path} not found: run `tollway models fetch` "
                "(or set [products.removebg.settings] models_dir / model_path)"
            )
        rembg = _rembg()
        # rembg loads custom weights only from inside its home directory, which it
        # reads from U2NET_HOME when the session is made: name the file's directory.
        previous = os.environ.get("U2NET_HOME")
        os.environ["U2NET_HOME"] = str(path.parent)
        import onnxruntime  # type: ignore[import-untyped]

        options = onnxruntime.SessionOptions()
        # Idle inference threads sleep instead of spinning: the process also runs the
        # event loop and the other requests, which spinning threads would starve.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = rembg.new_session(SESSION_KIND, model_path=str(path), sess_opts=options)
        except Exception as error:
            raise ModelUnavailable(f"cannot load segmentation weights {path}: {error}") from None
        finally:
            if previous is None:
                del os.environ["U2NET_HOME"]
            else:
                os.environ["U2NET_HOME"] = previous
        _sessions[path] = session
        return session


class RembgSegmenter:
    """rembg's ``remove`` with an explicit session on ``path`` (never a download)."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path.expanduser().resolve()
        self.name = name

    def session(self) -> Any:
        """The rembg session (loaded on first use), shared by the process."""
        return _open_session(self.path)

    def warm_up(self) -> None:
        self.session()

    def cut_out(self, image: Image.Image) -> Image.Image:
        result: Image.Image = _rembg().remove(image, session=self.session())
        return result
