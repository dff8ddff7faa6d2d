"""Settings from the environment are parsed strictly: a boolean that is not one, a
number that is not one, or a ``TOLLWAY_*`` variable that names no setting stops
start-up with the variable named, never a silent default."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from cli_runner import assert_one_line_error, clean_env, tollway

from tollway.settings import OTHER_ENVIRONMENT_VARIABLES, Settings, load_settings

ROOT = Path(__file__).parents[2]
ACCEPTED = "use 1 or 0, true or false, yes or no, on or off"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[(raw, True) for raw in ("1", "true", "yes", "on", "TRUE", "Yes", " On ")],
        *[(raw, False) for raw in ("0", "false", "no", "off", "FALSE", "No", " oFF ")],
    ],
)
def test_a_boolean_accepts_the_usual_spellings_in_any_case(raw: str, expected: bool) -> None:
    settings = load_settings(environ={"TOLLWAY_DEMO": raw, "TOLLWAY_ACCESS_LOG": raw})
    assert settings.demo is expected
    assert settings.access_log is expected


@pytest.mark.parametrize("raw", ["flase", "2", "y", "enabled", "nope"])
def test_a_boolean_that_is_none_of_them_names_the_variable_and_the_accepted_values(
    raw: str,
) -> None:
    with pytest.raises(ValueError, match="is not a boolean") as refused:
        load_settings(environ={"TOLLWAY_DEMO": raw})
    assert str(refused.value) == (
        f"invalid tollway configuration: TOLLWAY_DEMO={raw!r} is not a boolean; {ACCEPTED}"
    )


def test_an_empty_variable_still_counts_as_unset() -> None:
    settings = load_settings(environ={"TOLLWAY_DEMO": "", "TOLLWAY_JOB_RETRIES": ""})
    assert settings.demo is True
    assert settings.job_retries == 3


@pytest.mark.parametrize(
    ("variable", "raw", "field", "says"),
    [
        ("TOLLWAY_JOB_CONCURRENCY", "many", "job_concurrency", "Expected `int`, got `str`"),
        ("TOLLWAY_JOB_RETRIES", "2.5", "job_retries", "Expected `int`, got `str`"),
        ("TOLLWAY_KEY_CACHE_TTL", "soon", "key_cache_ttl", "Expected `float`, got `str`"),
        ("TOLLWAY_WEBHOOKS_RETRY_SCHEDULE", "1,later", "webhooks_retry_schedule", "`$[1]`"),
        ("TOLLWAY_RATE_LIMIT_FAILURE", "shut", "rate_limit_failure", "'shut'"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_variable_and_the_field(
    variable: str, raw: str, field: str, says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{variable} ({field}): ")) as refused:
        load_settings(environ={variable: raw})
    assert str(refused.value).startswith("invalid tollway configuration: ")
    assert says in str(refused.value)


def test_numbers_and_lists_from_the_environment_are_converted() -> None:
    settings = load_settings(
        environ={
            "TOLLWAY_JOB_CONCURRENCY": "3",
            "TOLLWAY_KEY_CACHE_TTL": "0.5",
            "TOLLWAY_WEBHOOKS_RETRY_SCHEDULE": "0, 1.5,60",
            "TOLLWAY_TRUSTED_PROXIES": "10.0.0.1, 10.1.0.0/16",
        }
    )
    assert settings.job_concurrency == 3
    assert settings.key_cache_ttl == 0.5
    assert settings.webhooks_retry_schedule == [0.0, 1.5, 60.0]
    assert settings.trusted_proxies == ["10.0.0.1", "10.1.0.0/16"]


@pytest.mark.parametrize(
    ("variable", "suggestion"),
    [
        ("TOLLWAY_DEMOO", "TOLLWAY_DEMO"),
        ("TOLLWAY_DATABSE_URL", "TOLLWAY_DATABASE_URL"),
        ("TOLLWAY_PLUGIN", "TOLLWAY_PLUGINS"),
        ("TOLLWAY_RATELIMIT_PREFIX", "TOLLWAY_RATE_LIMIT_PREFIX"),
        ("TOLLWAY_CONFIG_FILE", "TOLLWAY_CONFIG"),
    ],
)
def test_an_unknown_variable_is_refused_with_the_closest_name(
    variable: str, suggestion: str
) -> None:
    with pytest.raises(ValueError, match="unknown environment variable") as refused:
        load_settings(environ={variable: "1"})
    assert str(refused.value) == (
        f"invalid tollway configuration: unknown environment variable {variable} "
        f"(did you mean {suggestion}?)"
    )


def test_an_unknown_variable_like_no_known_one_is_refused_without_a_guess() -> None:
    with pytest.raises(ValueError, match="unknown environment variable") as refused:
        load_settings(environ={"TOLLWAY_WHATEVER": "1"})
    assert str(refused.value) == (
        "invalid tollway configuration: unknown environment variable TOLLWAY_WHATEVER"
    )


def test_products_are_not_read_from_the_environment() -> None:
    with pytest.raises(ValueError, match="unknown environment variable TOLLWAY_PRODUCTS"):
        load_settings(environ={"TOLLWAY_PRODUCTS": "{}"})


def test_an_unknown_variable_is_refused_even_when_a_value_is_given_in_code() -> None:
    with pytest.raises(ValueError, match="TOLLWAY_DEMOO"):
        load_settings(environ={"TOLLWAY_DEMOO": "false"}, demo=False)


def test_an_empty_unknown_variable_counts_as_unset_like_any_other() -> None:
    assert load_settings(environ={"TOLLWAY_DEMOO": ""}).demo is True


def test_other_environment_variables_are_let_through(tmp_path: Path) -> None:
    config = tmp_path / "tollway.toml"
    config.write_text("[gateway]\ndemo = false\n")
    environ = dict.fromkeys(OTHER_ENVIRONMENT_VARIABLES, "anything")
    environ["TOLLWAY_CONFIG"] = str(config)
    assert load_settings(environ=environ).demo is False


def test_lower_case_and_other_prefixes_are_not_tollways_to_refuse() -> None:
    load_settings(environ={"tollway_demo": "flase", "TOLLWAYS": "1", "GRANIAN_WORKERS": "2"})


def _names_in(path: Path) -> set[str]:
    return set(re.findall(r"\bTOLLWAY_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text("utf-8")))


def test_every_tollway_variable_the_project_mentions_is_a_setting_or_allowed() -> None:
    """A new ``TOLLWAY_*`` variable read anywhere (a test helper, a bench script, the
    harness) must be added to ``OTHER_ENVIRONMENT_VARIABLES``, or the gateway refuses to
    start in a shell that sets it."""
    settings = {f"TOLLWAY_{field.name.upper()}" for field in msgspec.structs.fields(Settings)}
    known = settings - {"TOLLWAY_PRODUCTS"} | set(OTHER_ENVIRONMENT_VARIABLES)
    sources = [
        *ROOT.glob("*.md"),
        ROOT / "noxfile.py",
        ROOT / ".ci" / "run",
        *(
            path
            for folder in ("core", "plugins", "harness", "bench", "docs", "tests")
            for path in (ROOT / folder).rglob("*")
            if path.suffix in (".py", ".md", ".toml") and ".egg-info" not in str(path)
        ),
    ]
    mentioned = {
        (name, str(path.relative_to(ROOT)))
        for path in sources
        if path.is_file() and path != Path(__file__)
        for name in _names_in(path)
    }
    assert sorted((name, where) for name, where in mentioned if name not in known) == []


def test_the_other_environment_variables_are_documented() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text("utf-8")
    for name in OTHER_ENVIRONMENT_VARIABLES:
        assert f"`{name}`" in operations, name


def test_the_command_refuses_a_misspelt_boolean_in_one_line(tmp_path: Path) -> None:
    env = clean_env(database_url=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}", demo="flase")
    line = assert_one_line_error(tollway(env, "accounts", "list", check=False), 2)
    assert line == (
        f"tollway: invalid tollway configuration: TOLLWAY_DEMO='flase' is not a boolean; {ACCEPTED}"
    )


def test_the_command_refuses_an_unknown_variable_in_one_line(tmp_path: Path) -> None:
    env = clean_env(database_url=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}", demoo="0")
    line = assert_one_line_error(tollway(env, "openapi", check=False), 2)
    assert line == (
        "tollway: invalid tollway configuration: unknown environment variable "
        "TOLLWAY_DEMOO (did you mean TOLLWAY_DEMO?)"
    )
