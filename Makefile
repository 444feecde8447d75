# The two commands: `make run` (a whole turn on the built-in demo model) and `make test`
# (everything, as CI runs it); `make check` is the everyday one (no test marked slow).
# All create or reuse .venv and install what they need.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Static tools cannot follow the package-dir mapping nor the editable install's import
# hook: mypy and import-linter read an installed copy of the package, made by pip from
# the same build as the wheel (so what the wheel leaves out is missing there too), and
# made again when a source file, a folder or pyproject.toml changes.
SITE := build/site
PACKAGE := treadle domain ports adapters entrypoints
SOURCES := $(shell find $(PACKAGE) -name __pycache__ -prune -o \( -type d -o -name '*.py' -o -name py.typed \) -print)
# The native spawner (adapters/sandbox/spawn.c): built at install where a C compiler is;
# without one treadle starts commands through its Python helper, slower, as safe.
CC ?= cc
SPAWNER := adapters/sandbox/treadle-spawn
# The tests run in WORKERS processes (pytest-xdist), one more than the cores: much of
# the time a test waits on processes it started (on 2 busy cores, 3 workers ran the
# whole suite in 2m50 where 2 took 4m10). --dist loadgroup keeps each xdist_group on
# one worker: the Ray tests share the one private instance it starts.
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
XDIST := -n $(WORKERS) --dist loadgroup

.PHONY: run test check lint types contract fast unit bench clean spawner bytecode

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'setuptools>=77' wheel
	$(PY) -m pip install --quiet --prefer-binary -e '.[dev]'
	$(MAKE) --no-print-directory spawner
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# An editable install leaves treadle's own modules without bytecode: a session run
# with PYTHONDONTWRITEBYTECODE=1 would compile them at every start (a third of its
# time to the first request). Written once here; a source changed since is compiled
# again the next time bytecode may be written.
bytecode:
	$(PY) -m compileall -q $(PACKAGE)

spawner: $(SPAWNER)

# Static where the C library allows it (no dynamic loader at each exec), else dynamic.
$(SPAWNER): adapters/sandbox/spawn.c
	{ $(CC) -O2 -Wall -Wextra -static -o $@.tmp $< 2>/dev/null \
	  || $(CC) -O2 -Wall -Wextra -o $@.tmp $<; } && mv $@.tmp $@ \
	  || { rm -f $@.tmp; echo "note: $@ not built; commands start through the Python helper"; }

# setuptools builds in build/lib and never removes a file from it: a fresh one each time.
$(SITE)/.made: $(STAMP) $(SOURCES)
	rm -rf $(SITE) build/lib build/bdist.*
	$(PY) -m pip install --quiet --no-deps --no-build-isolation --no-compile --target $(SITE) .
	touch $@

run: $(STAMP) spawner bytecode
	$(PY) -m treadle --model demo --approval auto "Show what treadle does, on this folder"

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# mypy names the copy's files; each line names the source file instead.
types: $(STAMP) $(SITE)/.made
	$(PY) -m mypy > build/mypy.out; status=$$?; \
	  sed -E 's#^build/site/treadle/(domain|ports|adapters|entrypoints)/#\1/#; s#^build/site/##' build/mypy.out; \
	  exit $$status

contract: $(STAMP) $(SITE)/.made
	cd $(SITE) && $(abspath $(VENV))/bin/lint-imports --config ../../pyproject.toml

fast: $(STAMP) spawner bytecode
	$(PY) -m pytest $(XDIST) -m 'not slow'

unit: $(STAMP) spawner bytecode
	$(PY) -m pytest $(XDIST) --cov --cov-report=term --cov-fail-under=85
	$(PY) -m coverage report --include='*/domain/*' --fail-under=90

check: lint types contract fast

test: lint types contract unit

bench: $(STAMP) spawner bytecode
	$(PY) -m bench

clean:
	rm -rf $(VENV) build *.egg-info .coverage .mypy_cache .ruff_cache $(SPAWNER)
