"""Registers the chat product: its descriptor, scopes, events, plans, tables, routes
and the operator's inbox command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData

from tollway import Gateway, Plan, Product, hookimpl
from tollway_chat import channels, hookspecs
from tollway_chat.commands import add_commands
from tollway_chat.delivery import delivery_for
from tollway_chat.models import ChatBase
from tollway_chat.routes import ROUTES, SCOPES
from tollway_chat.service import EVENTS

PRODUCT = Product(name="chat", prefix="/v1/chat", title="Chat", contract="chat.yaml")


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    for name, description in SCOPES.items():
        register(name, description)


@hookimpl
def tollway_register_events(register: Callable[[str, str], None]) -> None:
    for name, description in EVENTS.items():
        register(name, description)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    register("chat", Plan("free", requests_per_day=1_000, rank=0, description="Try chat out"))
    register("chat", Plan("pro", requests_per_day=50_000, rank=1, description="A support team"))
    register(
        "chat",
        Plan("business", requests_per_day=500_000, rank=2, description="Several support teams"),
    )


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(ChatBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_routes(
    register: Callable[[str, Sequence[Any]], None], gateway: Gateway
) -> None:
    manager = gateway.plugins
    if getattr(manager.hook, "tollway_chat_channel", None) is None or (
        manager.hook.tollway_chat_channel.spec is None
    ):
        manager.add_hookspecs(hookspecs)
    if not manager.has_plugin(channels.__name__):
        manager.register(channels, name=channels.__name__)
    delivery_for(gateway).register_job()
    register("chat", ROUTES)


@hookimpl
async def tollway_startup(gateway: Gateway) -> None:
    await delivery_for(gateway).start()


@hookimpl
async def tollway_shutdown(gateway: Gateway) -> None:
    await delivery_for(gateway).stop()


@hookimpl
def tollway_register_commands(commands: argparse._SubParsersAction[Any]) -> None:
    add_commands(commands)
