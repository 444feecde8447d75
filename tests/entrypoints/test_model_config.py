"""Configuring today's models: the wire API, thinking and effort, the reasoning echo,
prices per model, and the model the container builds from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.entrypoints.test_config import load
from treadle.adapters.fakes import FakeClock
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.domain.values.prices import Prices
from treadle.entrypoints.config import ConfigError, describe_config, model_prices
from treadle.entrypoints.container import build_model, session_container

Places = tuple[Path, Path, dict[str, str]]


@pytest.fixture
def places(tmp_path: Path) -> Places:
    user, workspace = tmp_path / "user", tmp_path / "work"
    user.mkdir()
    workspace.mkdir()
    return user, workspace, {"TREADLE_CONFIG_DIR": str(user)}


@pytest.mark.parametrize(
    ("model", "api", "adapter"),
    [
        ("openai:gpt-5.1", "chat", OpenAIChatModel),
        ("openai:gpt-5.1", "responses", OpenAIResponsesModel),
        ("openai-responses:gpt-5.1-codex", "chat", OpenAIResponsesModel),
        ("anthropic:claude-sonnet-4-5", "responses", AnthropicModel),
    ],
)
def test_the_model_speaks_the_api_it_is_configured_for(
    places: Places, model: str, api: str, adapter: type
) -> None:
    app = load(places, project=f'model = "{model}"\napi = "{api}"')
    assert type(build_model(app, FakeClock(), "s1")) is adapter


def test_the_session_effort_and_echo_reach_the_adapter(places: Places) -> None:
    app = load(
        places,
        user='model = "openai:deepseek-reasoner"\neffort = "high"\nreasoning_echo = "off"',
        flags={"base_url": "http://127.0.0.1:9/v1"},
    )
    container = session_container(
        app, mode="plain", session_dir="/state/20261201-abc", resume_hint=""
    )
    model = container.model()
    assert isinstance(model, HttpModel)
    options = model.options
    assert (options.session, options.effort, options.reasoning_echo) == (
        "20261201-abc",
        "high",
        False,
    )


def test_a_thinking_budget_goes_into_every_requests_budget(places: Places) -> None:
    app = load(places, user='model = "demo"\nthinking_budget = 2048\nmax_tokens = 16000')
    container = session_container(app, mode="plain", session_dir="", resume_hint="")
    assert container.settings().budget.thinking == 2048


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("thinking_budget = 8192", "thinking_budget: 8192 is not less than max_tokens 8192"),
        ("thinking_budget = 512", "less than 1024, the least Anthropic takes"),
        ("thinking_budget = -1", "thinking_budget: must be at least 0"),
        ('effort = "extreme"', "effort: must be one of none, minimal, low, medium, high, xhigh"),
        ('api = "completions"', "api: must be one of chat, responses"),
        ('reasoning_echo = "yes"', "reasoning_echo: must be one of auto, off"),
        ('[prices."m"]\ninput = 1.0', 'prices."m": no output price'),
        ('[prices."m"]\ninput = 1\noutput = 2\nbatch = 3', 'prices: "m": unknown price "batch"'),
        ('[prices."m"]\ninput = -1\noutput = 2', 'prices: "m".input: must be at least 0'),
        ("prices = 3", 'prices: must be tables, [prices."MODEL"]'),
    ],
)
def test_a_bad_model_setting_names_the_file_and_the_key(
    places: Places, text: str, says: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load(places, project=text)
    assert ".treadle.toml" in str(error.value)
    assert says in str(error.value)


def test_prices_cannot_come_from_the_environment(places: Places) -> None:
    with pytest.raises(ConfigError, match="can only be set in a file"):
        load(places, env={"TREADLE_PRICES": "{}"})


def test_price_tables_merge_key_by_key_across_the_files(places: Places) -> None:
    app = load(
        places,
        user='[prices."claude-sonnet-4-5"]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3',
        project='model = "anthropic:claude-sonnet-4-5"\n'
        '[prices."claude-sonnet-4-5"]\noutput = 16.0',
    )
    assert model_prices(app) == Prices(input=3.0, output=16.0, cache_read=0.3)
    lines = describe_config(app, {})
    assert any(line.startswith("prices") and "claude-sonnet-4-5" in line for line in lines)


def test_prices_are_found_by_the_models_full_name_or_its_own(places: Places) -> None:
    full = load(
        places, project='model = "openai:gpt-5.1"\n[prices."openai:gpt-5.1"]\ninput = 1\noutput = 2'
    )
    assert model_prices(full) == Prices(1.0, 2.0)
    other = load(
        places, project='model = "openai:gpt-4.1"\n[prices."gpt-5.1"]\ninput = 1\noutput = 2'
    )
    assert model_prices(other) is None


def test_a_turns_settings_carry_the_models_prices(places: Places) -> None:
    app = load(places, project='model = "demo"\n[prices."demo"]\ninput = 1\noutput = 2')
    container = session_container(app, mode="plain", session_dir="", resume_hint="")
    assert container.settings().prices == Prices(1.0, 2.0)


def test_the_readmes_model_configuration_is_valid_and_prices_its_model(tmp_path: Path) -> None:
    import re

    from treadle.entrypoints.config import read_file_values

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Today's models") :]
    match = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert match
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / ".treadle.toml").write_text(match.group(1), encoding="utf-8")
    assert read_file_values(tmp_path / "work" / ".treadle.toml")["thinking_budget"] == 4096
    app = load((tmp_path, tmp_path / "work", {"TREADLE_CONFIG_DIR": str(tmp_path)}))
    assert model_prices(app) == Prices(3.0, 15.0, 0.3, 3.75)
