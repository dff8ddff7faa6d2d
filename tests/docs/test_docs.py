"""The documentation is true: every hook and setting is documented as the code has it,
the hook examples load into a gateway, and the plugin tutorial installs, serves and
passes its contract."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import httpx
import msgspec
import pytest

from tollway import Gateway, Product, hookimpl, hookspecs, load_settings
from tollway.app import create_app
from tollway.cli import build_cli
from tollway.plugins import DEFAULT_PLUGINS
from tollway.settings import Settings, _from_env
from tollway.testing import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
KEY_PATTERN = re.compile(r"tw_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}")

HOOKS: dict[str, Callable[..., Any]] = {
    name: function
    for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
    if hasattr(function, "tollway_spec")
}


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _sections(text: str) -> dict[str, str]:
    """``## heading`` -> the text up to the next ``## `` heading."""
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def _firstresult(hook: Callable[..., Any]) -> bool:
    return bool(hook.tollway_spec.get("firstresult"))  # type: ignore[attr-defined]


def _signature(hook: Callable[..., Any]) -> str:
    """The hookspec's signature on one line, annotations as written in hookspecs.py."""
    annotations = dict(hook.__annotations__)
    returns = annotations.pop("return")
    parameters = ", ".join(f"{name}: {annotation}" for name, annotation in annotations.items())
    return f"def {hook.__name__}({parameters}) -> {returns}"


def _type_checking_namespace() -> dict[str, Any]:
    """The names hookspecs.py imports only for type checking, imported for real."""
    names: dict[str, Any] = dict(vars(hookspecs))
    for node in ast.walk(ast.parse(inspect.getsource(hookspecs))):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.Import):
                    for alias in statement.names:
                        top = alias.name.partition(".")[0]
                        imported = alias.name if alias.asname else top
                        names[alias.asname or top] = importlib.import_module(imported)
                    continue
                assert isinstance(statement, ast.ImportFrom)
                assert statement.module
                module = importlib.import_module(statement.module)
                for alias in statement.names:
                    names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def _returned_protocol(hook: Callable[..., Any]) -> type:
    returns = typing.get_type_hints(hook, globalns=_type_checking_namespace())["return"]
    [protocol] = [item for item in typing.get_args(returns) if item is not type(None)]
    assert getattr(protocol, "_is_protocol", False), f"{hook.__name__} returns {protocol}"
    return typing.cast(type, protocol)


def _squeezed(text: str) -> str:
    return re.sub(r",\s*\)", ")", re.sub(r"\s+", "", text))


# hooks.md ---------------------------------------------------------------------------


def test_every_hook_has_a_section_with_its_signature_and_call_style() -> None:
    sections = _sections(_read("hooks.md"))
    for name, hook in HOOKS.items():
        assert name in sections, f"docs/hooks.md has no '## {name}' section"
        section = sections[name]
        # Compared without layout: the formatter may wrap a signature over lines.
        assert _squeezed(_signature(hook)) in _squeezed(section), (
            f"## {name}: signature differs from hookspecs.py"
        )
        call_style = "yes" if _firstresult(hook) else "no"
        assert f"- **firstresult**: {call_style}" in section, f"## {name}: firstresult"


def test_hooks_md_documents_no_hook_that_does_not_exist() -> None:
    text = _read("hooks.md")
    documented = {heading for heading in _sections(text) if heading.startswith("tollway_")}
    assert documented - set(HOOKS) == set()
    implemented = set(re.findall(r"^def (tollway_\w+)\(", text, flags=re.M))
    assert implemented - set(HOOKS) == set(), "an example implements a hook that does not exist"


def test_each_mechanism_hook_shows_the_protocol_it_must_return() -> None:
    sections = _sections(_read("hooks.md"))
    mechanisms = [hook for hook in HOOKS.values() if _firstresult(hook)]
    assert mechanisms
    for hook in mechanisms:
        protocol = _returned_protocol(hook)
        section = sections[hook.__name__]
        assert f"class {protocol.__name__}(Protocol):" in section
        members = [name for name in vars(protocol) if not name.startswith("_")]
        members += list(getattr(protocol, "__annotations__", {}))
        assert members, protocol
        for member in members:
            assert re.search(rf"\b{member}\b\s*[(:]", section), f"{protocol.__name__}.{member}"


@dataclass
class _Base:
    """What an example may rely on without registering it itself."""

    product: bool
    scope: bool

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        if self.product:
            register(Product("greetings", "/v1/greetings"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        if self.scope:
            register("greetings:hello:read", "Be greeted by name")


def test_every_hook_example_loads_into_a_gateway_and_wins_over_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocks = _python_blocks(_read("hooks.md"))
    [prelude] = [block for block in blocks if block.startswith("from __future__")]
    examples = [block for block in blocks if "@hookimpl" in block]
    covered: set[str] = set()
    for number, code in enumerate(examples):
        module = types.ModuleType(f"hooks_md_example_{number}")
        module.__file__ = str(tmp_path / f"{module.__name__}.py")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(prelude + code, module.__file__, "exec"), module.__dict__)
        hooks = {name for name in vars(module) if name in HOOKS}
        assert hooks, f"example {number} implements no hook"
        covered |= hooks
        base = _Base(
            product="tollway_register_products" not in hooks,
            scope="tollway_register_scopes" not in hooks,
        )
        settings = load_settings(
            environ={}, plugins=[], database_url="sqlite+aiosqlite:///:memory:"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gateway = Gateway(settings, extra_plugins=[("base", base), ("example", module)])
            create_app(gateway)
        if "tollway_register_commands" in hooks:
            cli = build_cli(gateway.plugins)
            added = set(cli.list_commands(click.Context(cli))) - set(cli.commands)
            assert added, f"example {number} adds no command"
        for name in hooks:
            if _firstresult(HOOKS[name]):
                mine = getattr(module, name)(gateway=gateway)
                if mine is not None:
                    chosen = getattr(gateway.plugins.hook, name)(gateway=gateway)
                    assert type(chosen) is type(mine), f"example {number}: {name}"
    assert covered == set(HOOKS), f"hooks without an example: {set(HOOKS) - covered}"


# architecture.md --------------------------------------------------------------------


def test_architecture_hook_table_matches_the_hookspecs_and_defaults() -> None:
    defaults: dict[str, str] = {}
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        for name, function in vars(module).items():
            if hasattr(function, "tollway_impl"):
                defaults[name] = module_name
    rows = {
        match.group(1): match.group(0)
        for match in re.finditer(r"^\| `(tollway_\w+)` \|.*$", _read("architecture.md"), re.M)
    }
    assert set(rows) == set(HOOKS)
    for name, hook in HOOKS.items():
        cells = [cell.strip() for cell in rows[name].strip("|").split("|")]
        assert cells[2] == ("yes" if _firstresult(hook) else "no"), name
        if name in defaults:
            assert f"`{defaults[name]}`" in cells[3], name
        else:
            assert cells[3] == "none", name


# operations.md ----------------------------------------------------------------------


def _toml_literal(value: Any) -> str:
    if value is None:
        return "unset"
    return json.dumps(value) if isinstance(value, str) else json.dumps(msgspec.to_builtins(value))


def test_every_setting_is_documented_with_its_env_var_and_default() -> None:
    text = _read("operations.md")
    fields = msgspec.structs.fields(Settings)
    from_env = set(_from_env({f"TOLLWAY_{field.name.upper()}": "1" for field in fields}))
    for field in fields:
        row = re.search(rf"^\| `{field.name}` \|.*$", text, re.M)
        assert row, f"docs/operations.md has no row for setting {field.name}"
        cells = [cell.strip() for cell in row.group(0).strip("|").split("|")]
        if field.name in from_env:
            assert cells[1] == f"`TOLLWAY_{field.name.upper()}`", field.name
        else:
            assert cells[1].startswith("none"), f"{field.name} is not read from the environment"
        default = (
            field.default if field.default is not msgspec.NODEFAULT else field.default_factory()
        )
        literal = _toml_literal(default)
        assert cells[3] in (f"`{literal}`", literal), f"{field.name}: default {literal}"
    assert "TOLLWAY_CONFIG" in text


def _commands(context: click.Context) -> Iterator[click.Context]:
    """The context of every command below ``context``'s group (groups left out)."""
    group = context.command
    assert isinstance(group, click.Group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        child = click.Context(command, info_name=name, parent=context)
        if isinstance(command, click.Group):
            yield from _commands(child)
        else:
            yield child


def test_every_cli_command_and_option_is_documented() -> None:
    text = _read("operations.md")
    root = click.Context(build_cli(), info_name="tollway")
    commands = list(_commands(root))
    assert len(commands) >= 8
    for context in [root, *commands]:
        if context is not root:
            assert context.command_path in text, context.command_path
        for param in context.command.get_params(context):
            for option in param.opts:
                if option.startswith("--") and option != "--help":
                    assert option in text, f"{context.command_path} {option}"


# writing-a-plugin.md: the tutorial, for real -----------------------------------------


@dataclass(frozen=True)
class Tutorial:
    project: Path
    contracts: Path
    env: dict[str, str]


def _tutorial_files() -> dict[str, str]:
    text = _read("writing-a-plugin.md")
    blocks = re.findall(r"^<!-- file: (\S+) -->\n+```[\w-]*\n(.*?)^```", text, flags=re.M | re.S)
    assert len(blocks) == text.count("<!-- file:"), "a file marker without a code block"
    return dict(blocks)


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Tutorial:
    """The tutorial's files written out as it says, and installed from its dist-info."""
    root = tmp_path_factory.mktemp("tutorial")
    files = _tutorial_files()
    assert {
        "tollway-greetings/pyproject.toml",
        "tollway-greetings/tollway_greetings/plugin.py",
        "tollway-greetings/contracts/greetings.yaml",
        "tollway-greetings/tests/test_greetings.py",
    } <= set(files)
    for name, body in files.items():
        assert not Path(name).is_absolute(), name
        assert ".." not in Path(name).parts, name
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    project = root / "tollway-greetings"
    contracts = project / "contracts"
    shutil.copy(ROOT / "contracts" / "common.yaml", contracts / "common.yaml")
    site = root / "site"
    install = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
            *("--no-deps", "--no-build-isolation", "--no-index", "--target", str(site)),
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert install.returncode == 0, (
        "pip could not build the tutorial's plugin offline (it needs setuptools >= 77 "
        f"in this environment):\n{install.stderr}"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return Tutorial(project, contracts, env)


def _harness(
    tutorial: Tutorial, url: str, key: str, contracts: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "tollway_harness", "run", "--url", url, "--key", key),
            *("--product", "greetings", "--contracts", str(contracts)),
        ],
        env=tutorial.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextmanager
def _served(tutorial: Tutorial, cwd: Path) -> Iterator[tuple[str, str]]:
    """``tollway serve --plugins greetings`` as the tutorial runs it: (base URL, demo key)."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tollway.cli",
            "serve",
            "--port",
            str(port),
            "--plugins",
            "greetings",
        ],
        env=tutorial.env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def drain() -> None:
        # A reader thread lets the wait below keep its deadline, and keeps the pipe
        # from filling up and blocking the server.
        for line in server.stdout or ():
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + 30
        key = None
        while key is None:
            match = KEY_PATTERN.search(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            key = match.group(0) if match else None
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                httpx.get(f"{base}/v1/greetings/languages", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "tollway serve did not start listening"
                time.sleep(0.1)
        yield base, key
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)


@pytest.mark.slow
def test_the_tutorial_plugin_installs_serves_and_passes_its_contract(
    tutorial: Tutorial, tmp_path: Path
) -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "tollway.cli", "plugins"],
        env=tutorial.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0, listing.stderr
    assert "greetings: product greetings at /v1/greetings" in listing.stdout
    assert "  scope greetings:hello:read: " in listing.stdout
    assert "  plans free, pro" in listing.stdout

    with _served(tutorial, tmp_path) as (base, key):
        hello = f"{base}/v1/greetings/hello"
        keyed = httpx.get(hello, params={"name": "Ada"}, headers={"Authorization": f"Bearer {key}"})
        assert keyed.status_code == 200
        assert keyed.json() == {"message": "Hello, Ada!", "language": "en"}
        assert keyed.headers["x-ratelimit-limit"] == "100000"
        assert httpx.get(hello, params={"name": "Ada"}).status_code == 401
        invalid = httpx.get(
            hello, params={"lang": "xx"}, headers={"Authorization": f"Bearer {key}"}
        )
        assert invalid.status_code == 400
        assert invalid.json()["detail"].startswith("Invalid request: ")
        public = httpx.get(f"{base}/v1/greetings/languages")
        assert public.json() == {"data": ["en", "fr", "es"], "total": 3}

        passing = _harness(tutorial, base, key, tutorial.contracts)
        assert passing.returncode == 0, passing.stdout + passing.stderr
        assert "greetings: PASS" in passing.stdout

        # The check can fail: a contract demanding a field the plugin never returns.
        broken = tmp_path / "broken-contracts"
        shutil.copytree(tutorial.contracts, broken)
        contract = broken / "greetings.yaml"
        required = "required: [message, language]"
        original = contract.read_text()
        assert original.count(required) == 1
        contract.write_text(original.replace(required, "required: [message, language, emoji]"))
        failing = _harness(tutorial, base, key, broken)
        assert failing.returncode == 1, failing.stdout + failing.stderr
        assert "response_schema_conformance" in failing.stdout
        assert '"emoji" is a required property' in failing.stdout


@pytest.mark.slow
def test_the_tutorial_plugins_own_test_suite_passes(tutorial: Tutorial) -> None:
    env = {**tutorial.env, "TOLLWAY_TEST_BACKENDS": "sqlite"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tutorial.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^2 passed", result.stdout, re.M), result.stdout
