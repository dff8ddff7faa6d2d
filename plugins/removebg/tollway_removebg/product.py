"""What the background removal product is: its descriptor, scopes and plans.

Spec 4.2: "The single-image scope also covers batch processing as listed". A key
holding ``removebg:images:process`` may submit batches and poll them (a batch whose
results cannot be read would be of no use): :class:`ProcessCoversBatches` wraps
whichever scope checker the deployment uses. The batch scopes stay, for keys limited
to batches and for the keys that already hold them.
"""

from __future__ import annotations

from tollway import Plan, Product, ScopeChecker

PRODUCT = Product(
    name="removebg", prefix="/v1/removebg", title="Background removal", contract="removebg.yaml"
)

PROCESS = "removebg:images:process"
BATCH_WRITE = "removebg:batch:write"
BATCH_READ = "removebg:batch:read"
QUOTA_READ = "removebg:quota:read"

SCOPES = {
    PROCESS: (
        "Remove the background of single images, and submit and read batches "
        "(covers removebg:batch:write and removebg:batch:read)"
    ),
    BATCH_WRITE: "Submit batch background removal jobs (also granted by removebg:images:process)",
    BATCH_READ: (
        "Read the status and results of batch jobs (also granted by removebg:images:process)"
    ),
    QUOTA_READ: "Read the account's background removal credits",
}

COVERED_BY_PROCESS = frozenset({BATCH_WRITE, BATCH_READ})

CREDITS_LIMIT = "credits_per_month"
"""The plan limit (``Plan.limits``) holding a plan's monthly credits."""


def _plan(name: str, rank: int, per_day: int, credits: int, description: str) -> Plan:
    return Plan(
        name,
        requests_per_day=per_day,
        rank=rank,
        description=description,
        limits={CREDITS_LIMIT: credits},
    )


PLANS = (
    _plan("free", 0, 1_000, 50, "50 images a month"),
    _plan("pro", 1, 20_000, 2_000, "2,000 images a month"),
    _plan("business", 2, 200_000, 25_000, "25,000 images a month"),
)


class ProcessCoversBatches:
    """The deployment's scope checker, with the batch scopes also granted to keys that
    hold ``removebg:images:process``."""

    def __init__(self, checker: ScopeChecker) -> None:
        self.checker = checker

    def grants(self, held: frozenset[str], required: str) -> bool:
        return self.checker.grants(held, required) or (
            required in COVERED_BY_PROCESS and self.checker.grants(held, PROCESS)
        )
