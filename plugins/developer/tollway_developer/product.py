"""What the developer product is: its descriptor, scope and plan."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(
    name="developer",
    prefix="/v1/developer",
    title="Developer",
    contract="developer.yaml",
)

WEBHOOKS_SCOPE = "webhooks:manage"

# The other names of the spec's "developer key scopes" list (pos:read, orders:write,
# ...) belong to the POS product, which registers them (docs/spec-decisions.md).
SCOPES = {WEBHOOKS_SCOPE: "Register, test and remove webhook endpoints"}

PLANS = (
    Plan("standard", requests_per_day=10_000, rank=0, description="Key and webhook management"),
)
