PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast check lint bench bench-smoke compile clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/debate demo

# Our sources compiled once: with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every `debate` process the
# tests and benches start would compile them again, ~0.5 s of CPU each.
compile: $(STAMP)
	$(BIN)/python -m compileall -q orchestrator bots bench tests > /dev/null

test: $(STAMP) compile
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto --dist loadfile

# The edit-test loop: ruff and the tests that need no subprocess, DBOS launch, Postgres or browser
# (tests/conftest.py fails a test of this lane that starts one, telling you to mark it slow).
test-fast: $(STAMP)
	$(BIN)/ruff check .
	DEBATE_FAST_LANE=1 $(BIN)/python -m pytest -n auto --dist loadfile -m "not slow and not postgres"

check: test-fast

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m bench

bench-smoke: $(STAMP) compile
	$(BIN)/python -m bench --smoke

clean:
	rm -rf $(VENV) .pytest_cache
