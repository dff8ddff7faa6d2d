"""The installed ``tollway`` command, run as operators run it, for the CLI tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TOLLWAY = shutil.which("tollway") or str(Path(sys.executable).with_name("tollway"))


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without its ``TOLLWAY_*`` variables, plus ``settings``
    as ``TOLLWAY_<NAME>``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    env.update({f"TOLLWAY_{name.upper()}": value for name, value in settings.items()})
    return env


def tollway(
    env: dict[str, str], *args: str, check: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [TOLLWAY, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    if check and result.returncode != 0:
        raise AssertionError(f"tollway {' '.join(args)} failed:\n{result.stderr}")
    return result


def assert_one_line_error(result: subprocess.CompletedProcess[str], status: int) -> str:
    """The command failed with ``status`` and said why in one ``tollway:`` line, with no
    traceback and nothing on stdout; returns that line."""
    assert result.returncode == status, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tollway: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.endswith("\n")
    assert result.stdout == ""
    return result.stderr.strip()
