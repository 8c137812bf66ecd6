# Two entry points, both self-installing into ./.venv with nothing but python3 (>= 3.11) and make:
#   make demo   -- set up, then run the main job (`xai demo`)
#   make check  -- set up, then ruff, mypy and the whole test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo check lint typecheck test bench clean

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

bench: $(STAMP)
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/tracing.py
	$(BIN)/python bench/sessions.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/locomo_recall.py $(if $(LOCOMO),--data $(LOCOMO))

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
