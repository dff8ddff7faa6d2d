"""The background removal product's rules: one :class:`RemoveBg` per gateway.

A single image is checked (one source, size, colour), paid for with one reserved
credit (402 when none is left), fetched or decoded, cut out on the model's thread,
encoded, stored and charged; any failure after the reservation gives the credit
back. Batches are in ``tollway_removebg.batch``.

Reserving, charging and giving back each commit in a short transaction of their own,
not in the request's: a reservation must be visible to every process before the image
is rendered (which takes a while and must hold no lock), and a failed render must
give its credit back although the request fails. Reads (the quota, a batch's status,
a download) need no transaction: each is one statement on ``database.reads``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING

import msgspec
from litestar.types import Scope

from tollway import (
    BadRequest,
    Caller,
    Gateway,
    NotFound,
    PayloadTooLarge,
    PaymentRequired,
    Poller,
    PublicOrigin,
    UnprocessableEntity,
    deployment_secret,
    utcnow,
)
from tollway_removebg import images, leases, quota, results, schemas
from tollway_removebg.fetch import ImageFetcher, check_image_url
from tollway_removebg.model import Model
from tollway_removebg.product import CREDITS_LIMIT
from tollway_removebg.settings import MiB, RemoveBgSettings

if TYPE_CHECKING:
    from PIL import Image

    from tollway_removebg.models import Result

MAX_INLINE_INPUT = 10 * MiB
"""Largest ``image_base64`` image, decoded (413 beyond)."""
MAX_INLINE_OUTPUT = 5 * MiB
"""Largest result returned inline with ``return_base64``."""
CREDITS_PER_IMAGE = 1


@dataclass(frozen=True, slots=True)
class Options:
    """How to render one image."""

    output_format: images.OutputFormat
    output_size: images.OutputSize
    bg_color: tuple[int, int, int] | None


def colour(value: str | msgspec.UnsetType) -> tuple[int, int, int] | None:
    return None if value is msgspec.UNSET else images.parse_colour(value)


def credits_limit(caller: Caller) -> int:
    return int(caller.plan.limits.get(CREDITS_LIMIT, 0))


class NotEnoughCredits(PaymentRequired):
    """The caller's plan cannot cover ``needed`` more credits this period."""

    def __init__(self, caller: Caller, needed: int) -> None:
        super().__init__(
            f"Not enough credits: this request needs {needed} and the '{caller.plan.name}' "
            f"plan's {credits_limit(caller)} credits for this period are used up or "
            "reserved; see GET /v1/removebg/quota"
        )


def _decoded_base64(text: str) -> bytes:
    padding = len(text) - len(text.rstrip("="))
    if len(text) * 3 // 4 - padding > MAX_INLINE_INPUT:
        raise PayloadTooLarge(
            f"image_base64 decodes to more than {MAX_INLINE_INPUT // MiB} MB; "
            "send a smaller image or use image_url"
        )
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest("Invalid request body: image_base64 is not valid base64") from None
    if not data:
        raise BadRequest("Invalid request body: image_base64 is empty")
    return data


class RemoveBg:
    """The gateway's background removal service: the model, the image fetcher, the
    result signer and the poll for unheld batches, registered once per gateway and
    handed to the routes by dependency injection."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.database = gateway.database
        self.settings = gateway.product_settings(RemoveBgSettings)
        segmenter = gateway.plugins.hook.tollway_segmenter(gateway=gateway)
        if segmenter is None:
            raise RuntimeError("no plugin provides a segmenter (tollway_segmenter)")
        self.model = Model(segmenter)
        self.fetcher = ImageFetcher(
            allow_private=self.settings.allow_private_urls,
            timeout=self.settings.fetch_timeout,
            max_bytes=self.settings.max_download_bytes,
        )
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)
        self.clock: Callable[[], datetime] = utcnow
        """Now, as an aware UTC datetime; tests replace it to move time."""
        self._signer: results.Signer | None = None
        self._last_purge: datetime | None = None
        self.batch_lease = timedelta(seconds=self.settings.batch_lease)
        self.unheld_batches = Poller(
            "tollway-removebg-batches",
            partial(leases.queue_unheld, self.database, gateway.jobs, self.batch_lease),
            interval=self.settings.batch_poll_interval,
            batch=leases.CLAIM_BATCH,
        )

    # Lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Begin loading the model in the background (serving starts meanwhile) and
        polling for batches no process holds."""
        self.model.start()
        await self.unheld_batches.start()

    async def stop(self) -> None:
        """Stop polling, drop queued model work and close the fetcher's connections."""
        await self.unheld_batches.stop()
        self.model.stop()
        await self.fetcher.close()

    # Shared steps -------------------------------------------------------------------

    async def signer(self) -> results.Signer:
        if self._signer is None:
            secret = self.settings.result_secret or await deployment_secret(
                self.database, results.SECRET_NAME
            )
            self._signer = results.Signer(secret.encode())
        return self._signer

    def base_url(self, scope: Scope) -> str:
        """The base of result URLs for a request: ``public_url``, else the origin the
        request reached (from trusted proxies, else the server's own address), never
        the client's ``Host`` header, so nobody can make the gateway hand out links to
        a host of their choosing."""
        return (self.settings.public_url or self.origin.of(scope)).rstrip("/")

    async def render(self, data: bytes, options: Options) -> images.Rendered:
        """Decode, cut out and encode; 422 for bytes that are not an accepted image."""
        max_pixels = int(self.settings.max_megapixels * 1_000_000)

        def prepare() -> Image.Image:
            return images.fit(images.decode(data, max_pixels=max_pixels), options.output_size)

        image = await asyncio.to_thread(prepare)
        cut_out = await self.model.cut_out(image)
        return await asyncio.to_thread(
            images.finish, cut_out, options.output_format, options.bg_color
        )

    async def purge(self) -> None:
        """Delete expired results (at most every ten minutes)."""
        now = self.clock()
        if self._last_purge is not None and now - self._last_purge < results.PURGE_INTERVAL:
            return
        self._last_purge = now
        async with self.database.transaction() as session:
            await results.purge(session, now)

    async def _release(self, account_id: int, period: str, count: int) -> None:
        async with self.database.transaction() as session:
            await quota.settle(session, account_id, period, charged=0, released=count)

    # One image ----------------------------------------------------------------------

    async def process(
        self, caller: Caller, data: schemas.ProcessRequest, base_url: str
    ) -> schemas.ProcessedImage:
        has_url = data.image_url is not msgspec.UNSET
        has_inline = data.image_base64 is not msgspec.UNSET
        if has_url == has_inline:
            raise BadRequest(
                "Invalid request body: give exactly one of image_url and image_base64"
                + (" (both were given)" if has_url else "")
            )
        inline = None if data.image_base64 is msgspec.UNSET else _decoded_base64(data.image_base64)
        if (
            data.image_url is not msgspec.UNSET
            and (problem := check_image_url(data.image_url)) is not None
        ):
            raise BadRequest(f"Invalid request body: image_url {problem}")
        options = Options(data.output_format, data.output_size, colour(data.bg_color))
        account_id = caller.principal.account_id
        now = self.clock()
        period = quota.period_of(now)
        async with self.database.transaction() as session:
            held = await quota.reserve(
                session, account_id, period, CREDITS_PER_IMAGE, credits_limit(caller)
            )
        if not held:
            raise NotEnoughCredits(caller, CREDITS_PER_IMAGE)
        try:
            source = inline if inline is not None else await self.fetcher.fetch(str(data.image_url))
            rendered = await self.render(source, options)
            if data.return_base64 and len(rendered.content) > MAX_INLINE_OUTPUT:
                raise UnprocessableEntity(
                    f"The result is {len(rendered.content)} bytes, over the "
                    f"{MAX_INLINE_OUTPUT // MiB} MB limit for return_base64; leave "
                    "return_base64 out to get a result_url, or ask for output_size=preview"
                )
            return await self._keep(caller, rendered, data.return_base64, period, base_url)
        except BaseException:
            await self._release(account_id, period, CREDITS_PER_IMAGE)
            raise

    async def _keep(
        self,
        caller: Caller,
        rendered: images.Rendered,
        inline: bool,
        period: str,
        base_url: str,
    ) -> schemas.ProcessedImage:
        """Store the result (unless returned inline) and charge its credit, together."""
        account_id = caller.principal.account_id
        now = self.clock()
        stored: Result | None = None
        async with self.database.transaction() as session:
            if not inline:
                stored = results.stored_result(
                    rendered, account_id=account_id, now=now, ttl=self.settings.result_ttl
                )
                session.add(stored)
            await quota.charge(
                session, account_id, period, images=1, credits=CREDITS_PER_IMAGE, at=now
            )
        if stored is None:
            return schemas.ProcessedImage(
                id=results.new_id("img"),
                result_url=None,
                result_base64=base64.b64encode(rendered.content).decode(),
                width=rendered.width,
                height=rendered.height,
                credits_used=CREDITS_PER_IMAGE,
                expires_at=None,
            )
        await self.purge()
        signer = await self.signer()
        return schemas.ProcessedImage(
            id=stored.id,
            result_url=signer.url(base_url, stored.id, stored.expires_at),
            result_base64=None,
            width=rendered.width,
            height=rendered.height,
            credits_used=CREDITS_PER_IMAGE,
            expires_at=stored.expires_at,
        )

    # Quota and downloads ------------------------------------------------------------

    async def quota(self, caller: Caller) -> schemas.Quota:
        period = quota.period_of(self.clock())
        balance = await quota.balance(
            self.database.reads, caller.principal.account_id, period, credits_limit(caller)
        )
        return schemas.Quota(
            plan=caller.plan.name,
            credits_total=balance.total,
            credits_used=balance.used,
            credits_reserved=balance.reserved,
            credits_remaining=balance.remaining,
            resets_at=quota.period_end(period),
        )

    async def download(self, token: str) -> tuple[results.Download, int]:
        """The result a result URL names and its seconds left; 404 for a URL this
        deployment did not sign, 410 once expired."""
        now = self.clock()
        signed = (await self.signer()).verify(token)
        if signed is None:
            raise NotFound("No such result")
        result = (
            None
            if signed.expired(now)
            else await results.load(self.database.reads, signed.result_id, now)
        )
        if result is None:
            raise results.ResultGone(self.settings.result_ttl)
        return result, results.seconds_left(result.expires_at, now)

    def result_expiry(self, finished_at: datetime) -> datetime:
        return finished_at + timedelta(seconds=self.settings.result_ttl)
