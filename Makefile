# reag task runner. `make help` lists the targets.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
REAG := $(VENV)/bin/reag

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

install: ## install reag into .venv (builds llama.cpp once, ~5 min)
	@scripts/install.sh

proto: install ## regenerate the Python stubs from proto/
	@scripts/gen-proto.sh

demo: install ## run reag end to end on the embedded broker and the local model
	$(REAG) demo

system-packages: ## the Debian packages the tests use (WordNet, Chromium and its driver, Prometheus), once
	@scripts/system-packages.sh

postgres: ## make sure PostgreSQL answers on 127.0.0.1:5432 (starts the machine's cluster when down)
	@scripts/postgres.sh

test: install system-packages postgres ## run every test (starts its own broker, and PostgreSQL when it is down)
	$(PY) -m pytest

test-fast: install system-packages postgres ## run the tests that need neither the broker nor the model
	$(PY) -m pytest -m "not kafka and not llm and not slow"

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy src services shell tests bench

bench: install ## print the benchmarks: LLM layer, retrieval, cascade cost
	$(PY) -m bench

bench-retrieval: install ## retrieval benchmark on every example corpus (or MANIFEST=app.yaml BENCH=labels.yaml)
	$(PY) -m bench retrieval $(if $(MANIFEST),--manifest $(MANIFEST) --bench $(BENCH),--examples) $(RETRIEVAL_ARGS)

chaos: install ## load and fault runs on the embedded stack (scripted model), then the fuzz run: counts in / out / doubled
	$(PY) -m bench.chaos
	$(MAKE) fuzz

fuzz: install ## hostile payloads: 1,000 per topic in process, 50 per topic over the broker (prints counts)
	REAG_FUZZ_EXAMPLES=1000 REAG_FUZZ_BROKER_SAMPLE=50 $(PY) -m pytest -s -q -p no:logging \
		tests/unit/services/test_fuzz_consumers.py tests/integration/kit/test_fuzz_real_broker.py

up: install ## start the embedded stack in the background
	$(REAG) up

down: ## stop the embedded stack
	$(REAG) down

status: ## list the stack's processes and their health
	$(REAG) status

tiers: ## copy services/judge-tier*/tier.yaml into the chart (deploy/helm/reag/tiers/)
	@for n in 1 2 3; do cp services/judge-tier$$n/tier.yaml deploy/helm/reag/tiers/judge-tier$$n.yaml; done

lock: ## recompile the images' hash-pinned lock files (requirements/*.lock)
	@scripts/lock.sh

clean: ## remove build outputs (keeps .venv)
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache .reag

.PHONY: help install system-packages postgres proto demo test test-fast lint bench bench-retrieval chaos fuzz up down status tiers lock clean

