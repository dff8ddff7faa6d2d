"""Run a product contract against a gateway build with schemathesis' engine.

The same code path serves both targets: an ASGI app object (in-process, no network) and a live
base URL (real HTTP). It runs what `schemathesis run` runs - every phase (examples, coverage,
fuzzing, and stateful when the contract has links), positive and negative data, every default
check including `ignored_auth` - and adds the CLI's `[warnings] fail-on = ["missing_auth"]`
(an operation none of whose valid requests got past authentication fails), plus a failure when
an operation was mostly answered 429, since then nothing beyond the rate limiter was tested.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.core.errors import LoaderError
from schemathesis.engine import Status, StopReason, events, from_schema
from schemathesis.python import asgi as asgi_lifespans

from tollway_harness.contracts import (
    ContractError,
    OperationInfo,
    fetch_document,
    lint_contract,
    load_raw,
    operations,
    product_document,
    resolve_contract,
)
from tollway_harness.report import ContractReport, Failure, OperationStats

DEFAULT_MAX_EXAMPLES = 20
DEFAULT_SEED = 0
ALL_PHASES = ("examples", "coverage", "fuzzing", "stateful")
# Any host will do in-process: schemathesis' ASGI transport only uses the path.
IN_PROCESS_BASE_URL = "http://localhost"
AUTH_REJECTIONS = frozenset({401, 403})
# An operation that got at least this share of 429s was not really tested.
RATE_LIMITED_SHARE = 0.5
# schemathesis' default expected statuses for `positive_data_acceptance`, extended per operation by
# the contract's `x-domain-rejections`.
POSITIVE_ACCEPTANCE_STATUSES = ("2xx", "3xx", "401", "403", "404", "409", "429", "5xx")


def build_config(
    *,
    base_url: str,
    key: str | None,
    headers: Mapping[str, str] | None,
    max_examples: int,
    seed: int,
    deterministic: bool,
    phases: Collection[str],
    request_timeout: float,
    ops: Sequence[OperationInfo],
    skipped: Sequence[OperationInfo] = (),
) -> SchemathesisConfig:
    """The schemathesis configuration of a harness run (same keys as `schemathesis.toml`).

    `ops` are the operations under test, `skipped` the contract's other operations. Selection is
    done here, as `[[operations]] enabled = false`, rather than with `schema.include()`: once a
    config has `[[operations]]` entries, schemathesis ORs further `include()` filters with them
    and runs every operation.
    """
    unknown = set(phases) - set(ALL_PHASES)
    if unknown:
        raise ValueError(f"unknown phases {sorted(unknown)}; choose from {list(ALL_PHASES)}")
    all_headers = dict(headers or {})
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    data: dict[str, Any] = {
        "seed": seed,
        # No `.schemathesis/` cache and no `.hypothesis/` example database in the working directory,
        # so every run depends on the seed alone.
        "cache": {"enabled": False},
        "base-url": base_url,
        "request-timeout": request_timeout,
        "generation": {
            "mode": "all",  # positive and negative
            "max-examples": max_examples,
            "deterministic": deterministic,
            "database": "none",
        },
        "phases": {name: {"enabled": name in phases} for name in ALL_PHASES},
        "checks": {"enabled": True},
        "warnings": {"fail-on": ["missing_auth"]},  # enforced by the harness itself, see below
    }
    if all_headers:
        data["headers"] = all_headers
    overrides: list[dict[str, Any]] = [
        {
            "include-name": op.label,
            "checks": {
                "positive_data_acceptance": {
                    "expected-statuses": [*POSITIVE_ACCEPTANCE_STATUSES, *op.domain_rejections]
                }
            },
        }
        for op in ops
        if op.domain_rejections
    ]
    if skipped:
        overrides.append({"include-name": [op.label for op in skipped], "enabled": False})
    if overrides:
        data["operations"] = overrides
    return SchemathesisConfig.from_dict(data)


@dataclass(slots=True)
class _Collector:
    report: ContractReport
    seen: set[tuple[str, str, str, str]] = field(default_factory=set)
    error_counts: dict[str, int] = field(default_factory=dict)

    def add_error(self, error: str) -> None:
        if error not in self.error_counts:
            self.report.errors.append(error)
        self.error_counts[error] = self.error_counts.get(error, 0) + 1

    def finish(self) -> None:
        """Mark errors that happened more than once with their count."""
        counts = self.error_counts
        self.report.errors = [
            f"{error} (x{counts[error]})" if counts.get(error, 1) > 1 else error
            for error in self.report.errors
        ]

    def stats(self, label: str) -> OperationStats:
        if label not in self.report.operations:
            self.report.operations[label] = OperationStats(label=label)
        return self.report.operations[label]

    def add_failure(self, failure: Failure) -> None:
        key = (failure.operation, failure.check, failure.title, failure.message)
        if key not in self.seen:
            self.seen.add(key)
            self.report.failures.append(failure)

    def handle(self, event: events.EngineEvent) -> None:
        if isinstance(event, events.ScenarioFinished):
            self._scenario(event)
        elif isinstance(event, events.PhaseFinished):
            name = event.phase.name.value
            if name in ALL_PHASES:
                state = {Status.SUCCESS: "ok", Status.FAILURE: "failed", Status.ERROR: "error"}.get(
                    event.status, "skipped"
                )
                reason = event.phase.skip_reason
                if state == "skipped" and reason is not None:
                    state = f"skipped({reason.value})"
                self.report.phases[name] = state
        elif isinstance(event, events.NonFatalError):
            self.add_error(f"{event.label}: {event.info.title}\n{event.info.message}")
        elif isinstance(event, events.FatalError):
            self.add_error(f"schemathesis crashed: {event.exception!r}")
        elif isinstance(event, events.EngineFinished) and event.stop_reason != StopReason.COMPLETED:
            self.add_error(f"run stopped early: {event.stop_reason.value}")

    def _scenario(self, event: events.ScenarioFinished) -> None:
        recorder = event.recorder
        phase = event.phase.value
        for case_id, node in recorder.cases.items():
            case = node.value
            interaction = recorder.interactions.get(case_id)
            if interaction is None or interaction.response is None:
                continue
            code = interaction.response.status_code
            stats = self.stats(case.operation.label)
            stats.requests += 1
            stats.statuses[code] += 1
            stats.phases.add(phase)
            if case.meta is not None and case.meta.generation.mode.is_positive:
                stats.positive_statuses[code] += 1
        for case_id, checks in recorder.checks.items():
            for check in checks:
                if check.status != Status.FAILURE or check.failure_info is None:
                    continue
                failure = check.failure_info.failure
                interaction = recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                case_node = recorder.cases.get(case_id)
                label = failure.operation or (
                    case_node.value.operation.label if case_node is not None else "?"
                )
                self.add_failure(
                    Failure(
                        operation=label,
                        check=check.name,
                        title=failure.title,
                        message=failure.message,
                        status_code=response.status_code if response is not None else None,
                        phase=phase,
                        reproduce=check.failure_info.code_sample,
                    )
                )


def _post_checks(
    collector: _Collector,
    ops: Sequence[OperationInfo],
    *,
    key: str | None,
    fail_on_missing_auth: bool,
    fail_on_rate_limited: bool,
) -> None:
    report = collector.report
    for op in ops:
        stats = report.operations.get(op.label)
        if stats is None or stats.requests == 0:
            collector.add_error(f"{op.label}: never exercised (no request got a response)")
            continue
        positives = stats.positive_statuses
        # A 401/403 the contract lists in `x-domain-rejections` answers something the schema
        # cannot say is valid (a signed customer token), not the key.
        key_rejections = AUTH_REJECTIONS - {int(s) for s in op.domain_rejections if s.isdigit()}
        if (
            fail_on_missing_auth
            and op.requires_auth
            and positives
            and set(positives) <= key_rejections
        ):
            why = "no API key was given" if key is None else "the key was refused"
            collector.add_failure(
                Failure(
                    operation=op.label,
                    check="missing_auth",
                    title="No valid request got past authentication",
                    message=(
                        f"All {positives.total()} schema-valid requests were answered "
                        f"{'/'.join(str(c) for c in sorted(positives))} ({why}): the key is "
                        "missing, unknown, lacks the operation's scope, or its plan excludes "
                        "the operation, so nothing beyond authentication was tested."
                    ),
                    status_code=max(positives, key=lambda code: positives[code]),
                )
            )
        limited = stats.statuses[429]
        if fail_on_rate_limited and limited and limited / stats.requests >= RATE_LIMITED_SHARE:
            collector.add_failure(
                Failure(
                    operation=op.label,
                    check="rate_limited",
                    title="Mostly rate limited",
                    message=(
                        f"{limited} of {stats.requests} requests were answered 429: the key's "
                        "quota is too small for a contract run, so most requests tested only the "
                        "rate limiter. Use a key on a plan with a higher limit."
                    ),
                    status_code=429,
                )
            )


@dataclass(frozen=True, slots=True)
class _Contract:
    """What a run tests: one product's operations, from a contract file or a served document."""

    product: str
    source: Path | str  # the contract file, or the served document's URL
    raw: dict[str, Any]
    ops: list[OperationInfo]
    skipped: list[OperationInfo]  # the document's other operations
    problems: list[str]

    def schema(self, config: SchemathesisConfig) -> schemathesis.BaseSchema:
        if isinstance(self.source, Path):
            return schemathesis.openapi.from_path(self.source, config=config)
        return schemathesis.openapi.from_dict(self.raw, config=config)


def _load(
    contract: str | os.PathLike[str],
    contracts_dir: str | os.PathLike[str] | None,
    schema_url: str | None,
    operation_ids: Collection[str] | None,
    request_timeout: float,
) -> _Contract:
    """The contract to test, its operations selected, and what its lint found."""
    if schema_url is not None:
        product = os.fspath(contract)
        document = fetch_document(schema_url, timeout=max(request_timeout, 30.0))
        try:
            raw = product_document(document, product)
        except ContractError as exc:
            raise ContractError(f"{schema_url}: {exc}") from None
        source: Path | str = schema_url
    else:
        source = resolve_contract(contract, contracts_dir)
        raw = load_raw(source)
        product = source.stem
    ops: list[OperationInfo] = operations(raw)
    others: list[OperationInfo] = []
    problems = lint_contract(source, raw)
    if operation_ids is not None:
        missing = sorted(set(operation_ids) - {op.operation_id for op in ops})
        if missing:
            problems.append(f"{product}: unknown operationIds {missing}")
        others += [op for op in ops if op.operation_id not in set(operation_ids)]
        ops = [op for op in ops if op.operation_id in set(operation_ids)]
    return _Contract(product, source, raw, ops, others, problems)


def run_contract(
    contract: str | os.PathLike[str],
    *,
    app: Any = None,
    url: str | None = None,
    key: str | None = None,
    contracts_dir: str | os.PathLike[str] | None = None,
    schema_url: str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    seed: int = DEFAULT_SEED,
    deterministic: bool = True,
    phases: Collection[str] = ALL_PHASES,
    operation_ids: Collection[str] | None = None,
    headers: Mapping[str, str] | None = None,
    request_timeout: float = 10.0,
    fail_on_missing_auth: bool = True,
    fail_on_rate_limited: bool = True,
) -> ContractReport:
    """Test one contract against an ASGI `app` (in-process) or a live base `url`; never raises on
    contract violations, see the returned report (`report.ok`, `report.format()`).

    `contract` is a product name (`"code"` -> `<contracts dir>/code.yaml`) or a path; with
    `schema_url`, a product name whose operations are taken from the OpenAPI document at that URL
    (a gateway's served document, `<url>/schema/openapi.json`, whose operations name their product
    in `x-product`). `key` is sent as `Authorization: Bearer <key>` on every request.
    `operation_ids` restricts the run to those operations. Raises `ContractError` for a missing
    contract or document, `ValueError` for bad arguments.
    """
    if (app is None) == (url is None):
        raise ValueError("pass exactly one of `app` (in-process ASGI app) or `url` (live base URL)")
    if max_examples < 1:
        raise ValueError("max_examples must be at least 1")
    started = time.monotonic()
    loaded = _load(contract, contracts_dir, schema_url, operation_ids, request_timeout)
    target = url if url is not None else f"in-process {type(app).__qualname__} app"
    report = ContractReport(product=loaded.product, contract=loaded.source, target=target)
    report.errors.extend(loaded.problems)
    if report.errors:
        report.duration = time.monotonic() - started
        return report

    config = build_config(
        base_url=url.rstrip("/") if url is not None else IN_PROCESS_BASE_URL,
        key=key,
        headers=headers,
        max_examples=max_examples,
        seed=seed,
        deterministic=deterministic,
        phases=phases,
        request_timeout=request_timeout,
        ops=loaded.ops,
        skipped=loaded.skipped,
    )
    schema: schemathesis.BaseSchema
    try:
        schema = loaded.schema(config)
    except LoaderError as exc:
        report.errors.append(f"{loaded.source}: schemathesis cannot load the contract: {exc}")
        report.duration = time.monotonic() - started
        return report
    if app is not None:
        schema.app = app

    collector = _Collector(report)
    try:
        for event in from_schema(schema).execute():
            collector.handle(event)
    finally:
        if app is not None:
            # schemathesis keeps an in-process app's lifespan running for the rest of
            # the process; end it with the run, or the app's background tasks (a
            # gateway's pollers) outlive it and keep working on its database.
            asgi_lifespans.shutdown_lifespans()
    _post_checks(
        collector,
        loaded.ops,
        key=key,
        fail_on_missing_auth=fail_on_missing_auth,
        fail_on_rate_limited=fail_on_rate_limited,
    )
    collector.finish()
    report.duration = time.monotonic() - started
    return report


def load_schema(
    contract: str | os.PathLike[str],
    *,
    app: Any = None,
    url: str | None = None,
    key: str | None = None,
    contracts_dir: str | os.PathLike[str] | None = None,
    schema_url: str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    seed: int = DEFAULT_SEED,
    deterministic: bool = True,
    phases: Collection[str] = ALL_PHASES,
    operation_ids: Collection[str] | None = None,
    headers: Mapping[str, str] | None = None,
    request_timeout: float = 10.0,
) -> schemathesis.BaseSchema:
    """The contract as a configured schemathesis schema, for `@schema.parametrize()` tests.

    Same configuration as `run_contract` (auth header, seed, limits, `x-domain-rejections`), so
    `case.call_and_validate()` runs the same checks - but only per case: the engine-level parts
    (stateful phase, `missing_auth`, `rate_limited`) are `run_contract`'s alone. Raises
    `ContractError` when the contract fails the harness' lint.
    """
    if (app is None) == (url is None):
        raise ValueError("pass exactly one of `app` (in-process ASGI app) or `url` (live base URL)")
    loaded = _load(contract, contracts_dir, schema_url, operation_ids, request_timeout)
    if loaded.problems:
        raise ContractError("\n".join(loaded.problems))
    config = build_config(
        base_url=url.rstrip("/") if url is not None else IN_PROCESS_BASE_URL,
        key=key,
        headers=headers,
        max_examples=max_examples,
        seed=seed,
        deterministic=deterministic,
        phases=phases,
        request_timeout=request_timeout,
        ops=loaded.ops,
        skipped=loaded.skipped,
    )
    schema = loaded.schema(config)
    if app is not None:
        schema.app = app
    return schema


def check_contract(
    contract: str | os.PathLike[str],
    *,
    app: Any = None,
    url: str | None = None,
    key: str | None = None,
    contracts_dir: str | os.PathLike[str] | None = None,
    schema_url: str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    seed: int = DEFAULT_SEED,
    deterministic: bool = True,
    phases: Collection[str] = ALL_PHASES,
    operation_ids: Collection[str] | None = None,
    headers: Mapping[str, str] | None = None,
    request_timeout: float = 10.0,
    fail_on_missing_auth: bool = True,
    fail_on_rate_limited: bool = True,
) -> ContractReport:
    """`run_contract`, raising `AssertionError` with the readable report if anything failed."""
    __tracebackhide__ = True
    report = run_contract(
        contract,
        app=app,
        url=url,
        key=key,
        contracts_dir=contracts_dir,
        schema_url=schema_url,
        max_examples=max_examples,
        seed=seed,
        deterministic=deterministic,
        phases=phases,
        operation_ids=operation_ids,
        headers=headers,
        request_timeout=request_timeout,
        fail_on_missing_auth=fail_on_missing_auth,
        fail_on_rate_limited=fail_on_rate_limited,
    )
    if not report.ok:
        raise AssertionError("contract check failed\n" + report.format())
    return report


__all__ = [
    "ALL_PHASES",
    "DEFAULT_MAX_EXAMPLES",
    "ContractError",
    "build_config",
    "check_contract",
    "load_schema",
    "run_contract",
]
