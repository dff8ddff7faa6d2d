"""The background removal scopes, and the single-image scope covering the batch ones.

Spec 4.2: "The single-image scope also covers batch processing as listed". A key
holding ``removebg:images:process`` may submit batches and poll them (a batch whose
results cannot be read would be of no use). The batch scopes stay, for keys limited
to batches and for the keys that already hold them.
"""

from __future__ import annotations

from tollway.scopes import ScopeChecker

PROCESS = "removebg:images:process"
BATCH_WRITE = "removebg:batch:write"
BATCH_READ = "removebg:batch:read"
QUOTA_READ = "removebg:quota:read"

COVERED_BY_PROCESS = frozenset({BATCH_WRITE, BATCH_READ})

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


class ProcessCoversBatches:
    """The deployment's scope checker, with the batch scopes also granted to keys that
    hold ``removebg:images:process``."""

    def __init__(self, checker: ScopeChecker) -> None:
        self.checker = checker

    def grants(self, held: frozenset[str], required: str) -> bool:
        return self.checker.grants(held, required) or (
            required in COVERED_BY_PROCESS and self.checker.grants(held, PROCESS)
        )
