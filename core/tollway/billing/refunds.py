"""The processor follows the transactions it served: a charge made for a transaction
that then rolls back is given back; a card removed in a transaction that commits is
forgotten."""

from __future__ import annotations

import asyncio
import logging

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


@event.listens_for(Session, "after_rollback")
def _give_back(session: Session) -> None:
    for processor, charge_id in session.info.pop(_REFUNDS, ()):
        log.warning("refunding charge %s: its transaction rolled back", charge_id)
        task = asyncio.get_running_loop().create_task(processor.refund(charge_id))
        _pending.add(task)
        task.add_done_callback(_pending.discard)


_FORGET = "tollway.billing.forget"


def forget_after_commit(session: AsyncSession, processor: PaymentProcessor, token: str) -> None:
    """Have the processor forget a card once ``session``'s transaction (removing its
    payment method) has committed; nothing if it rolls back."""
    forgotten: list[tuple[PaymentProcessor, str]] = session.info.setdefault(_FORGET, [])
    forgotten.append((processor, token))


@event.listens_for(Session, "after_commit")
def _forget(session: Session) -> None:
    for processor, token in session.info.pop(_FORGET, ()):
        task = asyncio.get_running_loop().create_task(processor.forget_card(token))
        _pending.add(task)
        task.add_done_callback(_pending.discard)


@event.listens_for(Session, "after_rollback")
def _keep(session: Session) -> None:
    session.info.pop(_FORGET, None)
