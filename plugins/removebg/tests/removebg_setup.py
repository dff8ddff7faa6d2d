"""Accounts with keys, synthetic images and a gateway on the tiny model, for the
background removal tests."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from tollway import Gateway
from tollway.testing import GatewayFactory, KeylessProductClient, Tenant, open_product_client
from tollway.testing import tenant as subscribed_tenant
from tollway_removebg.product import SCOPES

API = "/v1/removebg"
DISC = (220, 20, 30)
"""The red of the foreground disc: the tiny model's idea of a foreground."""


async def tenant(
    gateway: Gateway,
    name: str = "acme",
    *,
    plan: str = "pro",
    scopes: Sequence[str] = tuple(SCOPES),
) -> Tenant:
    return await subscribed_tenant(gateway, name, plans={"removebg": plan}, scopes=scopes)


def scene(
    size: tuple[int, int] = (320, 240), *, seed: int = 0, background: str = "noise"
) -> tuple[Image.Image, np.ndarray[Any, np.dtype[np.bool_]]]:
    """A red disc on a textured grey background, and the disc's true mask."""
    width, height = size
    rng = np.random.default_rng(seed)
    if background == "stripes":
        stripes = ((np.arange(width) // 16) % 2)[None, :, None] * 60 + 100
        pixels = np.broadcast_to(stripes, (height, width, 3)) + rng.integers(
            0, 30, (height, width, 3)
        )
    else:
        pixels = rng.integers(90, 170, (height, width, 3))
    image = Image.fromarray(pixels.astype(np.uint8))
    radius = min(width, height) * 5 // 16
    box = (width // 2 - radius, height // 2 - radius, width // 2 + radius, height // 2 + radius)
    ImageDraw.Draw(image).ellipse(box, fill=DISC)
    mask = Image.new("L", size, 0)
    ImageDraw.Draw(mask).ellipse(box, fill=255)
    return image, np.array(mask) > 127


def encoded(image: Image.Image, kind: str = "PNG", **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=kind, **options)
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def picture(size: tuple[int, int] = (320, 240), kind: str = "PNG") -> bytes:
    return encoded(scene(size)[0], kind)


def alpha_of(data: bytes) -> np.ndarray[Any, np.dtype[np.uint8]]:
    image = Image.open(io.BytesIO(data))
    assert image.mode == "RGBA", image.mode
    return np.array(image)[:, :, 3]


def iou(alpha: np.ndarray[Any, Any], truth: np.ndarray[Any, Any]) -> float:
    found = alpha > 127
    return float((found & truth).sum() / (found | truth).sum())


@dataclass(frozen=True)
class Setup(KeylessProductClient):
    """tollway's product client, with the calls the removebg tests repeat."""

    async def post(self, path: str, body: dict[str, Any], *, expect: int = 200) -> Any:
        response = await self.client.post(API + path, json=body, headers=self.owner.headers)
        assert response.status_code == expect, response.text[:500]
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    async def get(self, path: str, *, expect: int = 200, tenant: Tenant | None = None) -> Any:
        return await self.product_client.call("GET", path, expect=expect, by=tenant)

    async def process(self, expect: int = 200, **body: Any) -> Any:
        return await self.post("/process", body, expect=expect)


def tiny_settings(model: Path, *, credits: int | None = None, **more: Any) -> dict[str, Any]:
    """``products`` config using the tiny model (and ``credits`` a month on every plan)."""
    product: dict[str, Any] = {"settings": {"model_path": str(model), **more}}
    if credits is not None:
        limits = {"limits": {"credits_per_month": credits}}
        product["plans"] = dict.fromkeys(("free", "pro", "business"), limits)
    return {"removebg": product}


@asynccontextmanager
async def removebg_setup(
    factory: GatewayFactory,
    model: Path,
    *,
    plan: str = "pro",
    credits: int | None = None,
    settings: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[Setup]:
    """A gateway with the tiny model: ``settings`` are removebg's, ``overrides`` the
    gateway's."""
    products = tiny_settings(model, credits=credits, **(settings or {}))
    gateway = await factory(plugins=["removebg"], products=products, **overrides)
    async with open_product_client(gateway, "removebg", plan=plan, scopes=SCOPES) as product:
        yield Setup(product)
