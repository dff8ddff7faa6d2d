"""Plans: plugin defaults merged with the operator's config file, field by field."""

from __future__ import annotations

from typing import TypeVar

from tollway.ratelimit import Algorithm, Quota
from tollway.registry import Plan, RegistrationError, Registry
from tollway.settings import Settings

DAY = 86_400
T = TypeVar("T")


def _pick(override: T | None, default: T) -> T:
    return default if override is None else override


def resolve_plans(registry: Registry, settings: Settings) -> dict[str, dict[str, Plan]]:
    """Every loaded product's plans after applying ``[products.<p>.plans.<plan>]``.

    A plan that exists only in the config file must say ``requests_per_day``.
    Config for products that are not loaded is ignored, so one file can serve
    deployments with different plugin selections.
    """
    resolved = {product: dict(plans) for product, plans in registry.plans.items()}
    for product, config in settings.products.items():
        if product not in resolved:
            continue
        for name, override in config.plans.items():
            base = resolved[product].get(name)
            if base is None:
                if override.requests_per_day is None:
                    raise RegistrationError(
                        f"config plan {product}.{name} is new and must set requests_per_day"
                    )
                base = Plan(name=name, requests_per_day=override.requests_per_day)
            if override.requests_per_day is not None and override.requests_per_day < 0:
                raise RegistrationError(f"config plan {product}.{name}: requests_per_day < 0")
            resolved[product][name] = Plan(
                name=name,
                requests_per_day=_pick(override.requests_per_day, base.requests_per_day),
                rank=_pick(override.rank, base.rank),
                features=frozenset(_pick(override.features, base.features)),
                description=_pick(override.description, base.description),
                limits={**base.limits, **(override.limits or {})},
                price_cents=_pick(override.price_cents, base.price_cents),
                interval=_pick(override.interval, base.interval),
            )
    return resolved


def daily_quota(plan: Plan) -> Quota:
    """The gateway's per-product quota: a fixed window from midnight to midnight UTC."""
    return Quota(
        limit=plan.requests_per_day,
        window=DAY,
        algorithm=Algorithm.FIXED_WINDOW,
        policy="daily",
    )
