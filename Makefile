# The two commands: `make run` (a whole turn on the built-in demo model) and `make test`.
# Both create or reuse .venv and install what they need.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
DEPS := $(VENV)/.deps
STAMP := $(VENV)/.installed
# The editable install links each source file into build/ (so nothing but the
# `treadle` namespace is importable); a new or removed file needs a fresh link farm.
SOURCES := $(shell find treadle/ domain ports adapters entrypoints -name '*.py' 2>/dev/null)

.PHONY: run test lint types contract unit bench clean

$(DEPS): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'setuptools>=68' wheel
	$(PY) -m pip install --quiet --prefer-binary -e '.[dev]' --config-settings editable_mode=strict
	touch $(DEPS)

$(STAMP): $(DEPS) $(SOURCES)
	rm -rf build/__editable__*
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e . --config-settings editable_mode=strict \
		> $(VENV)/link.log 2>&1 || (cat $(VENV)/link.log; exit 1)
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m treadle --model demo --approval auto "Show what treadle does, on this folder"

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

types: $(STAMP)
	$(PY) -m mypy

contract: $(STAMP)
	$(VENV)/bin/lint-imports

unit: $(STAMP)
	$(PY) -m pytest --cov --cov-report=term --cov-fail-under=85
	$(PY) -m coverage report --include='*/domain/*' --fail-under=90

test: lint types contract unit

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build *.egg-info .coverage .mypy_cache .ruff_cache
