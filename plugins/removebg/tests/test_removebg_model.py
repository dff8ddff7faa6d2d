"""The segmentation model: the hook, loading in the background, a missing weights
file, and the real U²-Net-p weights on a synthetic image."""

from __future__ import annotations

import asyncio
import io
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from removebg_setup import API, alpha_of, b64, encoded, iou, removebg_setup, scene, tenant

from tollway import Gateway, hookimpl
from tollway.testing import GatewayFactory, gateway_client, unavailable
from tollway_removebg.segmenter import RembgSegmenter
from tollway_removebg.settings import RemoveBgSettings


class GatedSegmenter(RembgSegmenter):
    """The default segmenter on the tiny model, whose loading waits for ``gate``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "gated")
        self.gate = threading.Event()
        self.loading = threading.Event()

    def warm_up(self) -> None:
        self.loading.set()
        assert self.gate.wait(30), "the test never opened the gate"
        super().warm_up()


class GatedPlugin:
    def __init__(self, segmenter: GatedSegmenter) -> None:
        self.segmenter = segmenter

    @hookimpl
    def tollway_segmenter(self, gateway: Gateway) -> GatedSegmenter:
        return self.segmenter


async def test_the_server_answers_while_the_model_loads_and_requests_wait_for_it(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    segmenter = GatedSegmenter(removebg_tiny_model)
    gateway = await gateway_factory(
        plugins=["removebg"], extra_plugins=[("gated", GatedPlugin(segmenter))]
    )
    owner = await tenant(gateway)
    body = {"image_base64": b64(encoded(scene()[0]))}
    async with gateway_client(gateway) as client:
        assert await asyncio.to_thread(segmenter.loading.wait, 10), "loading did not start"
        waiting = asyncio.create_task(
            client.post(API + "/process", json=body, headers=owner.headers)
        )
        quota = await client.get(API + "/quota", headers=owner.headers)
        await asyncio.sleep(0.5)
        assert not waiting.done()
        segmenter.gate.set()
        processed = await asyncio.wait_for(waiting, 30)
    assert quota.status_code == 200
    assert processed.status_code == 200, processed.text


async def test_missing_weights_are_503_until_they_are_fetched(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, tmp_path: Path
) -> None:
    weights = tmp_path / "models" / "weights.onnx"
    settings = {"model_path": str(weights)}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        missing = await setup.process(expect=503, image_base64=b64(encoded(scene()[0])))
        quota = await setup.get("/quota")
        weights.parent.mkdir()
        shutil.copy(removebg_tiny_model, weights)
        await setup.process(image_base64=b64(encoded(scene()[0])))
    assert "tollway models fetch" in missing["detail"]
    assert str(weights) in missing["detail"]
    assert "request_id" in missing
    assert (quota["credits_used"], quota["credits_reserved"]) == (0, 0)


def test_the_weights_file_follows_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("U2NET_HOME", "/srv/weights")
    assert RemoveBgSettings().model_file() == Path("/srv/weights/u2netp.onnx")
    assert RemoveBgSettings(model="u2net").model_file() == Path("/srv/weights/u2net.onnx")
    assert RemoveBgSettings(models_dir="/m").model_file() == Path("/m/u2netp.onnx")
    assert RemoveBgSettings(model_path="/x/y.onnx").model_file() == Path("/x/y.onnx")
    monkeypatch.delenv("U2NET_HOME")
    assert RemoveBgSettings().model_file() == Path.home() / ".u2net" / "u2netp.onnx"


@pytest.mark.parametrize("background", ["noise", "stripes"])
async def test_u2netp_cuts_a_disc_out_of_a_textured_background(
    gateway_factory: GatewayFactory, background: str
) -> None:
    weights = RemoveBgSettings().model_file()
    if not weights.is_file():
        unavailable(f"{weights} is missing: run `tollway models fetch` first")
    image, truth = scene((640, 480), seed=1, background=background)
    gateway = await gateway_factory(plugins=["removebg"])  # the default model, u2netp
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        answer = await client.post(
            API + "/process",
            json={"image_base64": b64(encoded(image)), "return_base64": True},
            headers=owner.headers,
        )
    assert answer.status_code == 200, answer.text
    import base64

    alpha = alpha_of(base64.b64decode(answer.json()["result_base64"]))
    assert iou(alpha, truth) >= 0.95
    assert Image.open(io.BytesIO(base64.b64decode(answer.json()["result_base64"]))).size == (
        640,
        480,
    )
    assert np.mean(alpha[~truth] < 16) > 0.97  # the background is transparent


_STUCK_LOADING = """
import threading
import tollway_removebg.model as model

class Stuck:
    name = "stuck"

    def warm_up(self):
        threading.Event().wait()  # a load that never ends, as a cold numba cache feels

    def cut_out(self, image):
        raise AssertionError("never reached")

loaded = model.Model(Stuck())
loaded.start()
{stop}
print("exiting", flush=True)
"""


@pytest.mark.parametrize("stop", ["loaded.stop()", ""], ids=["stopped", "not stopped"])
def test_a_process_exits_while_the_model_is_still_loading(stop: str) -> None:
    """``tollway serve`` stopped during the model's first load exits at once: the
    load runs on a daemon thread, which the interpreter does not wait for at exit
    (a thread pool's it does, for as long as the load takes)."""
    done = subprocess.run(
        [sys.executable, "-c", _STUCK_LOADING.format(stop=stop)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exiting\n"
