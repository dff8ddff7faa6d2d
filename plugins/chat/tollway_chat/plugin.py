"""Registers the chat product: its descriptor, scopes, events, plans, tables, settings,
services, delivery job, routes, channel hook, report and the operator's inbox
command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import (
    CommandRegistrar,
    Gateway,
    JobFunction,
    Plan,
    Product,
    Report,
    RouteRegistrar,
    hookimpl,
)
from tollway_chat import channels, hookspecs
from tollway_chat.commands import chat as chat_commands
from tollway_chat.delivery import JOB, Delivery
from tollway_chat.models import ChatBase
from tollway_chat.product import EVENTS, PLANS, PRODUCT, SCOPES
from tollway_chat.reports import CONVERSATIONS
from tollway_chat.routes import ROUTES, provide_chat, provide_chat_reads
from tollway_chat.settings import ChatSettings
from tollway_chat.stream import StreamTokens


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
    for plan in PLANS:
        register(PRODUCT.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(ChatBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, ChatSettings)


@hookimpl
def tollway_add_hookspecs(register: Callable[..., None]) -> None:
    register(hookspecs, channels)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(Delivery(gateway))
    register(StreamTokens(gateway))


@hookimpl
def tollway_register_jobs(register: Callable[[str, JobFunction], None], gateway: Gateway) -> None:
    register(JOB, gateway.service(Delivery).deliver)


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(
        PRODUCT.name,
        ROUTES,
        dependencies={
            "chat": provide_chat,
            "chat_reads": provide_chat_reads,
            "delivery": Delivery,
            "stream_tokens": StreamTokens,
        },
    )


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(CONVERSATIONS)


@hookimpl
def tollway_register_commands(register: CommandRegistrar) -> None:
    register(chat_commands)
