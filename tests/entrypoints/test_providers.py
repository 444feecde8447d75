"""The table of providers: the one place a provider is named, what the wiring, the
checks and --help read; a model no row takes, or a hosted model without its key, is
one line and exit 2 before any session or turn is made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.processes import bare_env, run_treadle
from treadle.adapters.fakes import FakeClock
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.providers import (
    PROVIDERS,
    USAGES,
    ModelNotConfigured,
    key_needed,
    resolve,
)
from treadle.entrypoints.wiring import build_model

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"
KEYED = [name for name, row in PROVIDERS.items() if row.key_env]


@pytest.mark.parametrize(
    ("name", "adapter"),
    [
        ("openai", OpenAIChatModel),
        ("openai-responses", OpenAIResponsesModel),
        ("anthropic", AnthropicModel),
    ],
)
def test_a_rows_key_variable_and_url_are_its_adapters(name: str, adapter: type[HttpModel]) -> None:
    row = PROVIDERS[name]
    assert (row.key_env, row.default_url) == (adapter.KEY_ENV, adapter.HOSTED_URL)
    model = build_model(AppConfig(model=f"{name}:m"), FakeClock())
    assert type(model) is adapter


def test_no_module_of_the_entrypoints_but_the_table_spells_a_providers_name() -> None:
    spelled = re.compile("|".join(rf"[\"']{re.escape(name)}[\"':]" for name in KEYED))
    for module in ENTRYPOINTS.glob("*.py"):
        if module.name == "providers.py":
            continue
        assert not spelled.search(module.read_text(encoding="utf-8")), module.name


@pytest.mark.parametrize(
    ("model", "provider", "name"),
    [
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("gpt-4.1", "openai", "gpt-4.1"),
        ("o4-mini", "openai", "o4-mini"),
        ("demo", "demo", ""),
        ("script:turn.json", "script", "turn.json"),
    ],
)
def test_a_model_is_taken_by_the_row_it_names_or_whose_family_it_is(
    model: str, provider: str, name: str
) -> None:
    row, own = resolve(model)
    assert (row.name, own) == (provider, name)


@pytest.mark.parametrize("model", ["Demo", "qwen2.5-coder", "demo:x", "script:", "nope:x"])
def test_a_model_no_row_takes_is_refused_with_every_providers_usage(model: str) -> None:
    with pytest.raises(ModelNotConfigured) as error:
        resolve(model)
    assert USAGES in str(error.value)


def test_a_key_is_needed_only_for_the_hosted_api() -> None:
    assert key_needed("openai:gpt-4.1", "", "", {}) == "OPENAI_API_KEY"
    assert key_needed("openai:gpt-4.1", "https://api.openai.com/v1/", "", {}) == "OPENAI_API_KEY"
    assert key_needed("openai:gpt-4.1", "", "WORK_KEY", {}) == "WORK_KEY"
    hosted = "https://api.anthropic.com/v1"  # the adapter takes /v1 off
    assert key_needed("anthropic:claude-x", hosted, "", {}) == "ANTHROPIC_API_KEY"
    assert key_needed("openai:gpt-4.1", "", "", {"OPENAI_API_KEY": "k"}) == ""
    assert key_needed("openai:qwen", "http://127.0.0.1:9/v1", "", {}) == ""
    assert key_needed("demo", "", "", {}) == ""


def test_a_bare_unknown_model_name_is_one_line_and_exit_2_before_any_session(
    tmp_path: Path,
) -> None:
    result = run_treadle("--model", "Demo", "--print", "hi", cwd=tmp_path, env=bare_env(tmp_path))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "unknown model 'Demo'" in line and "openai:NAME" in line and "anthropic:NAME" in line
    assert result.stdout == ""
    assert not (tmp_path / "state" / "sessions").exists()


@pytest.mark.parametrize("provider", KEYED)
def test_a_missing_key_is_one_line_and_exit_2_before_any_session_or_turn(
    tmp_path: Path, provider: str
) -> None:
    env = bare_env(tmp_path)
    result = run_treadle(f"--model={provider}:m", "--json", "hi", cwd=tmp_path, env=env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"set {PROVIDERS[provider].key_env}" in line
    assert result.stdout == ""  # no turn: not even its last event
    assert not (tmp_path / "state" / "sessions").exists()


def test_help_and_the_provider_key_name_every_row_of_the_table() -> None:
    from treadle.entrypoints.cli import build_parser
    from treadle.entrypoints.config import KEYS

    shown = " ".join(build_parser().format_help().split())
    assert all(row.usage in shown for row in PROVIDERS.values())
    assert KEYS["provider"].choices == tuple(n for n, r in PROVIDERS.items() if r.default_url)
