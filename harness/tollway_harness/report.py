"""Results of a contract run: failures, per-operation statistics, text and JUnit XML renderings."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MAX_MESSAGE_LINES = 12
MAX_LINE_LENGTH = 400


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_LENGTH:
        return line
    return f"{line[:MAX_LINE_LENGTH]}... ({len(line) - MAX_LINE_LENGTH} more characters)"


@dataclass(frozen=True, slots=True)
class Failure:
    """One distinct check failure (identical failures from several cases are reported once)."""

    operation: str
    check: str
    title: str
    message: str
    status_code: int | None = None
    phase: str | None = None
    reproduce: str | None = None  # a curl command; credentials are filtered out by schemathesis

    def format(self) -> str:
        head = f"[{self.check}] {self.operation}: {self.title}"
        if self.status_code is not None:
            head += f" (got {self.status_code})"
        if self.phase:
            head += f" [{self.phase}]"
        lines = [head]
        body = self.message.strip().splitlines()
        if len(body) > MAX_MESSAGE_LINES:
            body = [*body[:MAX_MESSAGE_LINES], "..."]
        lines.extend(f"    {_clip(line)}" for line in body)
        if self.reproduce:
            lines.append("    reproduce:")
            lines.extend(f"      {_clip(line)}" for line in self.reproduce.strip().splitlines())
        return "\n".join(lines)


@dataclass(slots=True)
class OperationStats:
    """Traffic the run sent to one operation."""

    label: str
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    positive_statuses: Counter[int] = field(default_factory=Counter)
    phases: set[str] = field(default_factory=set)

    def format_statuses(self) -> str:
        return ", ".join(f"{code}x{count}" for code, count in sorted(self.statuses.items()))


@dataclass(slots=True)
class ContractReport:
    """Everything one `run_contract` call found out."""

    product: str
    contract: Path | str  # the contract file, or the URL of the served document
    target: str
    failures: list[Failure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    operations: dict[str, OperationStats] = field(default_factory=dict)
    phases: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures and not self.errors

    @property
    def requests(self) -> int:
        return sum(stats.requests for stats in self.operations.values())

    def summary(self) -> str:
        """One line: verdict, size of the run, phases, counts."""
        verdict = "PASS" if self.ok else "FAIL"
        phases = " ".join(f"{name}:{state}" for name, state in self.phases.items())
        return (
            f"{self.product}: {verdict} - {len(self.operations)} operations, "
            f"{self.requests} requests, {len(self.failures)} failures, "
            f"{len(self.errors)} errors in {self.duration:.1f}s"
            f" [{phases}]"
        )

    def format(self) -> str:
        """The summary, per-operation traffic, then every failure and error in full."""
        lines = [self.summary(), f"  contract: {self.contract}", f"  target:   {self.target}"]
        for stats in self.operations.values():
            lines.append(f"  {stats.label}: {stats.requests} requests ({stats.format_statuses()})")
        if self.failures:
            lines.append(f"Failures ({len(self.failures)}):")
            for number, failure in enumerate(self.failures, 1):
                text = failure.format().replace("\n", "\n  ")
                lines.append(f"  {number}. {text}")
        if self.errors:
            lines.append(f"Errors ({len(self.errors)}):")
            for error in self.errors:
                lines.append("  - " + error.strip().replace("\n", "\n    "))
        return "\n".join(lines)


def write_junit_xml(reports: Iterable[ContractReport], path: str | os.PathLike[str]) -> None:
    """One <testsuite> per product and one <testcase> per operation (plus one for run errors)."""
    root = ET.Element("testsuites", name="tollway-harness")
    for report in reports:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=report.product,
            tests=str(len(report.operations) + (1 if report.errors else 0)),
            failures=str(len({f.operation for f in report.failures})),
            errors=str(1 if report.errors else 0),
            time=f"{report.duration:.3f}",
        )
        labels = list(report.operations)
        labels += [f.operation for f in report.failures if f.operation not in report.operations]
        for label in dict.fromkeys(labels):
            stats = report.operations.get(label)
            case = ET.SubElement(suite, "testcase", classname=report.product, name=label)
            if stats is not None:
                ET.SubElement(
                    case, "system-out"
                ).text = f"{stats.requests} requests ({stats.format_statuses()})"
            failures = [f for f in report.failures if f.operation == label]
            if failures:
                element = ET.SubElement(
                    case,
                    "failure",
                    message="; ".join(dict.fromkeys(f"{f.check}: {f.title}" for f in failures)),
                    type="ContractViolation",
                )
                element.text = "\n\n".join(f.format() for f in failures)
        if report.errors:
            case = ET.SubElement(suite, "testcase", classname=report.product, name="run")
            element = ET.SubElement(case, "error", message=report.errors[0].splitlines()[0][:200])
            element.text = "\n\n".join(report.errors)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
