"""Operator command of the background removal product: ``tollway models fetch``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tollway.settings import load_settings
from tollway_removebg.segmenter import compile_rembg
from tollway_removebg.settings import load
from tollway_removebg.weights import MODELS, WeightsError, default_models_dir, fetch


def fetch_models(args: argparse.Namespace) -> int:
    """Mistakes raise ``ValueError``: ``tollway`` prints ``tollway: <message>``, exits 2."""
    settings = load(load_settings(args.config).product("removebg").settings)
    model = args.model or settings.model
    if args.dir:
        directory = Path(args.dir).expanduser()
    elif settings.models_dir:
        directory = Path(settings.models_dir).expanduser()
    else:
        directory = default_models_dir()
    try:
        path = fetch(MODELS[model], directory, say=lambda text: print(text, file=sys.stderr))
    except WeightsError as error:
        print(f"tollway: {error}", file=sys.stderr)
        return 1
    if args.compile:
        print("tollway: compiling rembg's numba code (once per cache)...", file=sys.stderr)
        compile_rembg()
    print(path)
    return 0


def add_commands(commands: argparse._SubParsersAction[Any]) -> None:
    models = commands.add_parser("models", help="segmentation model weights")
    fetch_command = models.add_subparsers(dest="models_command", required=True).add_parser(
        "fetch", help="download and verify the weights; prints the file's path"
    )
    fetch_command.add_argument(
        "--model",
        choices=sorted(MODELS),
        help="which weights (default: the configured model, u2netp)",
    )
    fetch_command.add_argument(
        "--dir", help="directory to put them in (default: models_dir, $U2NET_HOME or ~/.u2net)"
    )
    fetch_command.add_argument(
        "--compile",
        action="store_true",
        help="also compile rembg's numba code into numba's cache now (about 100 s on a cold "
        "cache), so neither the first request nor each new process pays for it "
        "(default: compiled on first use)",
    )
    fetch_command.set_defaults(handler=fetch_models)
