"""pytest fixtures for the background removal product (a ``pytest11`` plugin).

``removebg_tiny_model`` is a U²-Net-shaped ONNX model made on the spot (input
``input.1``, 1x3x320x320; output 1x1x320x320), loaded through the same rembg
``u2net_custom`` session as the real weights. It is one fixed 1x1 convolution and a
sigmoid: it finds *red* things (red well above green and blue), which is all the
tests' images need. The contract run uses it too, through the
``pytest_tollway_product_settings`` hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tollway_removebg.segmenter import compile_rembg

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
REDNESS_THRESHOLD = 0.25
"""Pixels whose red exceeds the mean of green and blue by this much (0..1) are foreground."""
SHARPNESS = 40.0


def write_tiny_model(path: Path) -> Path:
    """Write the tiny red-finding model to ``path``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    # rembg feeds (x - mean) / std per channel, x in 0..1. The score
    # k * (r - (g + b) / 2 - t) in those terms: weight_c = k * c_c * std_c and
    # bias = k * (sum(c_c * mean_c) - t), with c = (1, -1/2, -1/2).
    coefficients = (1.0, -0.5, -0.5)
    weights = np.array(
        [[[[SHARPNESS * c * s]] for c, s in zip(coefficients, STD, strict=True)]],
        dtype=np.float32,
    )
    bias = SHARPNESS * (
        sum(c * m for c, m in zip(coefficients, MEAN, strict=True)) - REDNESS_THRESHOLD
    )
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["input.1", "weight", "bias"], ["score"]),
            helper.make_node("Sigmoid", ["score"], ["mask"]),
        ],
        "tiny-red-segmenter",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 320, 320])],
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 320, 320])],
        initializer=[
            numpy_helper.from_array(weights, "weight"),
            numpy_helper.from_array(np.array([bias], dtype=np.float32), "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def removebg_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model's file, made once per test session."""
    return write_tiny_model(tmp_path_factory.mktemp("removebg-model") / "tiny.onnx")


def pytest_tollway_product_settings(
    product: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any] | None:
    if product != "removebg":
        return None
    # Import rembg now, outside any request: on a fresh environment numba compiles it
    # for about 100 s, and the run's first image request would wait past its timeout.
    compile_rembg()
    model = write_tiny_model(tmp_path_factory.mktemp("removebg-contract") / "tiny.onnx")
    # Contract-generated URLs point nowhere reachable: fail them fast.
    return {"model_path": str(model), "fetch_timeout": 1.0}
