"""What the code-generation product is: its descriptor, scopes and plans."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(
    name="code",
    prefix="/v1/code",
    title="Code generation",
    contract="code.yaml",
)

QR_GENERATE = "code:qr:generate"
BARCODE_GENERATE = "code:barcode:generate"
BATCH_WRITE = "code:batch:write"
USAGE_READ = "code:usage:read"

SCOPES = {
    QR_GENERATE: "Generate QR codes",
    BARCODE_GENERATE: "Generate linear barcodes",
    BATCH_WRITE: "Generate QR codes in batches (Pro plan or higher)",
    USAGE_READ: "Read the key's usage in the current rate limit window",
}

BATCH_FEATURE = "batch"
"""Plan feature that unlocks ``POST /v1/code/batch/qr`` (the spec's "Pro or higher")."""

PLANS = (
    Plan("free", requests_per_day=100, rank=0, description="Try it out"),
    Plan("starter", requests_per_day=1_000, rank=1),
    Plan("pro", requests_per_day=10_000, rank=2, features=frozenset({BATCH_FEATURE})),
    Plan("enterprise", requests_per_day=100_000, rank=3, features=frozenset({BATCH_FEATURE})),
)
