"""The processor follows the transactions it served: a charge made for a transaction
that then rolls back is given back, and so is a card saved for one (forgotten); a card
removed in a transaction that commits is forgotten."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from tollway.billing.processor import Charge, PaymentProcessor

log = logging.getLogger("tollway.billing")

_REFUNDS = "tollway.billing.refunds"
_pending: set[asyncio.Task[None]] = set()


def refund_on_rollback(session: AsyncSession, processor: PaymentProcessor, charge: Charge) -> None:
    """A charge made for ``session``'s transaction is given back if that transaction
    rolls back (the caller's own writes after a subscribe failed, its commit failed):
    money moves only with the bookkeeping that records it."""
    refunds: list[tuple[PaymentProcessor, str]] = session.info.setdefault(_REFUNDS, [])
    refunds.append((processor, charge.id))


@event.listens_for(Session, "after_commit")
def _kept(session: Session) -> None:
    session.info.pop(_REFUNDS, None)
    session.info.pop(_UNSAVE, None)


@event.listens_for(Session, "after_rollback")
def _give_back(session: Session) -> None:
    for processor, charge_id in session.info.pop(_REFUNDS, ()):
        log.warning("refunding charge %s: its transaction rolled back", charge_id)
        _spawn(processor.refund(charge_id))
    for processor, token in session.info.pop(_UNSAVE, ()):
        _spawn(processor.forget_card(token))


def _spawn(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _pending.add(task)
    task.add_done_callback(_pending.discard)


_UNSAVE = "tollway.billing.unsave"


def forget_on_rollback(session: AsyncSession, processor: PaymentProcessor, token: str) -> None:
    """A card saved for ``session``'s transaction is forgotten if that transaction rolls
    back: the processor keeps no card nobody refers to."""
    saved: list[tuple[PaymentProcessor, str]] = session.info.setdefault(_UNSAVE, [])
    saved.append((processor, token))


_FORGET = "tollway.billing.forget"


def forget_after_commit(session: AsyncSession, processor: PaymentProcessor, token: str) -> None:
    """Have the processor forget a card once ``session``'s transaction (removing its
    payment method) has committed; nothing if it rolls back."""
    forgotten: list[tuple[PaymentProcessor, str]] = session.info.setdefault(_FORGET, [])
    forgotten.append((processor, token))


@event.listens_for(Session, "after_commit")
def _forget(session: Session) -> None:
    for processor, token in session.info.pop(_FORGET, ()):
        _spawn(processor.forget_card(token))


@event.listens_for(Session, "after_rollback")
def _keep(session: Session) -> None:
    session.info.pop(_FORGET, None)
