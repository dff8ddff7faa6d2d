"""Changing the account's own profile: only the fields given, each checked by the
core's rules (:mod:`tollway.profiles`, shared with ``tollway accounts create``), 422
for a value that breaks one."""

from __future__ import annotations

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Account, NotFound, check_tax_id, check_text, utcnow
from tollway_account import schemas


async def update_profile(
    session: AsyncSession, account_id: int, change: schemas.ProfileChange
) -> schemas.ProfileUpdated:
    """Apply ``change`` in ``session``'s transaction; ``updated_at`` moves only when a
    value does."""
    account = await session.get(Account, account_id)
    if account is None:
        raise NotFound("Account not found")
    values: dict[str, str | None] = {}
    if change.full_name is not msgspec.UNSET:
        values["full_name"] = check_text("full_name", change.full_name)
    if change.company is not msgspec.UNSET:
        values["company"] = check_text("company", change.company or "")
    if change.tax_id is not msgspec.UNSET:
        values["tax_id"] = check_tax_id(change.tax_id or "")
    changed = {name: value for name, value in values.items() if getattr(account, name) != value}
    if changed:
        for name, value in changed.items():
            setattr(account, name, value)
        account.updated_at = utcnow()
        await session.flush()
    return schemas.ProfileUpdated(
        id=account.id,
        email=account.email,
        full_name=account.full_name,
        company=account.company,
        tax_id=account.tax_id,
        updated_at=account.updated_at,
    )
