# reag task runner. `make help` lists the targets.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
REAG := $(VENV)/bin/reag

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

install: ## install reag into .venv (builds llama.cpp once, ~5 min)
	@scripts/install.sh

proto: install ## regenerate the Python stubs from proto/
	@scripts/gen-proto.sh

demo: install ## run reag end to end on the embedded broker and the local model
	$(REAG) demo

test: install ## run every test (starts its own broker; needs PostgreSQL on 127.0.0.1:5432)
	$(PY) -m pytest

test-fast: install ## run the tests that need neither the broker nor the model
	$(PY) -m pytest -m "not kafka and not llm and not slow"

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy src services shell tests bench

bench: install ## print the benchmarks: LLM layer, retrieval, cascade cost
	$(PY) -m bench

bench-retrieval: install ## retrieval benchmark on every example corpus (or MANIFEST=app.yaml BENCH=labels.yaml)
	$(PY) -m bench retrieval $(if $(MANIFEST),--manifest $(MANIFEST) --bench $(BENCH),--examples) $(RETRIEVAL_ARGS)

.PHONY: bench-retrieval

chaos: install ## load and fault runs on the embedded stack (scripted model): counts in / out / doubled
	$(PY) -m bench.chaos

up: install ## start the embedded stack in the background
	$(REAG) up

down: ## stop the embedded stack
	$(REAG) down

status: ## list the stack's processes and their health
	$(REAG) status

clean: ## remove build outputs (keeps .venv)
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache .reag

.PHONY: help install proto demo test test-fast lint bench up down status clean chaos
