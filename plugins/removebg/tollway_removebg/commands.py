"""Operator command of the background removal product: ``tollway removebg models
fetch`` (``tollway models fetch``, its old spelling, still works but is deprecated)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tollway.cli import Choice, configured_settings
from tollway_removebg.product import PRODUCT
from tollway_removebg.segmenter import compile_rembg
from tollway_removebg.settings import RemoveBgSettings
from tollway_removebg.weights import MODELS, WeightsError, default_models_dir, fetch


@click.group()
def removebg() -> None:
    """Background removal administration."""


@removebg.group()
def models() -> None:
    """Segmentation model weights."""


@models.command("fetch")
@click.option(
    "--model",
    type=Choice(sorted(MODELS)),
    help="which weights (default: the configured model, u2netp)",
)
@click.option(
    "--dir",
    "directory",
    metavar="DIR",
    help="directory to put them in (default: models_dir, $U2NET_HOME or ~/.u2net)",
)
@click.option(
    "--compile",
    "compile_now",
    is_flag=True,
    help="also compile rembg's numba code into numba's cache now (about 100 s on a cold "
    "cache), so neither the first request nor each new process pays for it "
    "(default: compiled on first use)",
)
def fetch_models(model: str | None, directory: str | None, compile_now: bool) -> int:
    """Download and verify the weights; prints the file's path."""
    # A mistake is a ValueError, which tollway prints as one line and exits 2 for.
    settings = configured_settings().product_settings(PRODUCT.name, RemoveBgSettings)
    if directory:
        target = Path(directory).expanduser()
    elif settings.models_dir:
        target = Path(settings.models_dir).expanduser()
    else:
        target = default_models_dir()
    try:
        path = fetch(
            MODELS[model or settings.model], target, say=lambda text: print(text, file=sys.stderr)
        )
    except WeightsError as error:
        print(f"tollway: {error}", file=sys.stderr)
        return 1
    if compile_now:
        print("tollway: compiling rembg's numba code (once per cache)...", file=sys.stderr)
        compile_rembg()
    print(path)
    return 0
