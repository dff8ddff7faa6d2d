"""Idempotent POSTs: ``Idempotency-Key`` with Stripe's rules, for the routes that opt in.

A route declares ``idempotent=True`` next to its access (``@post("/charges",
scope="...", idempotent=True)``). A request to it carrying ``Idempotency-Key`` (1 to
255 printable ASCII characters) then runs at most once per key, account and product
for ``idempotency_key_ttl`` seconds:

* the key is claimed once admission and the body step have let the request in, so
  their refusals are never kept, with a fingerprint of the request: method, path and
  query, a hash of the body, and the ``X-Customer-Token`` if any;
* the same key and fingerprint again: the kept answer (status, body, ``Content-Type``,
  ``Location``) with ``Idempotent-Replayed: true``, the handler not run; another
  fingerprint: 409; the first request still running: 409;
* an answer under 500 is kept, a 4xx of the handler included; a 5xx frees the key, so
  a retry runs again.

Exactly once: the claim is a row committed before the handler runs, holding a lease
(:mod:`.keys`). A handler answering from the request's ``transaction`` has its answer
stored in that same transaction, by a statement matching only while the lease is
still its own: its writes and the kept answer are committed together or not at all.
Other answers (errors, whose writes were rolled back; handlers committing on their
own) are stored in a transaction of their own before they are sent. A request that
dies before its answer is stored leaves its key claimed until the lease lapses
(:data:`LEASE`); a retry then takes it over.

The pieces doing it on a route (:mod:`.routes`) are installed only on the routes that
declare it: other routes pay nothing.
"""

from tollway.idempotency.keys import (
    BAD_KEY,
    HEADER,
    IN_PROGRESS,
    LEASE,
    REPLAYED_HEADER,
    REUSED,
    Answer,
    Claim,
    IdempotencyKeys,
)
from tollway.idempotency.models import PURGE_BATCH, IdempotencyKey
from tollway.idempotency.routes import OPT, claim_step, prepare_routes, settle_answers

__all__ = [
    "BAD_KEY",
    "HEADER",
    "IN_PROGRESS",
    "LEASE",
    "OPT",
    "PURGE_BATCH",
    "REPLAYED_HEADER",
    "REUSED",
    "Answer",
    "Claim",
    "IdempotencyKey",
    "IdempotencyKeys",
    "claim_step",
    "prepare_routes",
    "settle_answers",
]
