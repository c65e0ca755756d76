PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install install-dev lint types pytest bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps: pip runs again only when pyproject.toml changes (or the venv is new), not on every start.
# The dev stamp implies the plain one (the dev extras install the package too).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

## make run: install and start the server on the embedded SQLite database under .openbot/
run: install
	$(BIN)/openbot serve --host $(HOST) --port $(PORT) --data-dir .openbot

## make test: install dev extras, then ruff, mypy (strict on openbot.core) and pytest
test: install-dev lint types pytest

lint:
	$(BIN)/ruff check src tests benchmarks

types:
	$(BIN)/mypy

# Two workers (this is a 2-core CI machine); a test file stays on one worker (module-scoped servers),
# and on PostgreSQL each worker gets a database of its own (tests/conftest.py).
PYTEST_WORKERS ?= 2
pytest:
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=30

bench: install-dev
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) .openbot .pytest_cache .mypy_cache .ruff_cache
