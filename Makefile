# Two entry points (see README.md):
#   make example  - run ms-migrate on the bundled legacy project (core install only)
#   make test     - install everything (MindSpore CPU included) and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXAMPLE_OUT := .example-run

.PHONY: example test install runtimes lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.core-installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.dev-installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.core-installed

install: $(VENV)/.dev-installed

example: $(VENV)/.core-installed
	rm -rf $(EXAMPLE_OUT) && mkdir -p $(EXAMPLE_OUT)
	cp -r examples/legacy_project $(EXAMPLE_OUT)/legacy_project
	@echo "== preview (nothing written; exit 1 means changes are pending) =="
	cd $(EXAMPLE_OUT) && ../$(BIN)/ms-migrate upgrade --dry-run legacy_project; test $$? -eq 1
	@echo "== apply (exit 1: the findings listed have no exact fix and remain for a human) =="
	cd $(EXAMPLE_OUT) && ../$(BIN)/ms-migrate upgrade legacy_project; test $$? -le 1
	@echo "== run again: nothing left to change (no diff; still exit 1 for what remains) =="
	cd $(EXAMPLE_OUT) && ../$(BIN)/ms-migrate upgrade --dry-run legacy_project; test $$? -le 1
	@echo "== result: $(EXAMPLE_OUT)/legacy_project/src/train.py =="
	@sed -n '/^class TrainOneStepCell/,/return loss/p' $(EXAMPLE_OUT)/legacy_project/src/train.py

# The MindSpore runtimes the tests prove rewrites on (1.7-1.10, 2.7-2.9; 2.10 is the venv's own),
# cached under ~/.cache/ms-migrate/runtimes. One that cannot be had here is said once, and the
# tests that need it skip, saying why.
runtimes: $(VENV)/.dev-installed
	-$(BIN)/ms-migrate runtime install --all -q
	$(BIN)/ms-migrate runtime list

test: $(VENV)/.dev-installed runtimes
	$(BIN)/python -m ruff check ms_migrate tests benchmarks scripts
	$(BIN)/python -m pytest -n 2 -q -p no:cacheprovider

lint: $(VENV)/.dev-installed
	$(BIN)/python -m ruff check ms_migrate tests benchmarks scripts

clean:
	rm -rf $(VENV) $(EXAMPLE_OUT) .pytest_cache
