# Two entry points, both self-installing into ./.venv with nothing but python3 (>= 3.11) and make:
#   make demo   -- set up, then run the main job (`xai demo`)
#   make check  -- set up, then ruff, mypy and the whole test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo check lint typecheck test bench bench-locomo clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "xai needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/xai demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP)
	$(BIN)/pytest

check: lint typecheck test

# The LoCoMo recall benchmark needs the dataset (locomo10.json, from the snap-research/LoCoMo
# repository): `make bench LOCOMO=PATH`; without it, the file beside the checkout if present,
# else that step is skipped with a message.
LOCOMO ?= ../shared/data/locomo10.json

bench: $(STAMP)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/tracing.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/sessions.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/cluster.py
	@$(MAKE) --no-print-directory bench-locomo

bench-locomo: $(STAMP)
	@if [ -f "$(LOCOMO)" ]; then \
		echo '$(BIN)/python bench/locomo_recall.py --data $(LOCOMO)'; \
		$(BIN)/python bench/locomo_recall.py --data '$(LOCOMO)'; \
	else \
		echo "make bench: skipping bench/locomo_recall.py: no LoCoMo data at $(LOCOMO)"; \
		echo "  (get locomo10.json from the snap-research/LoCoMo repository, then: make bench LOCOMO=PATH)"; \
	fi

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
