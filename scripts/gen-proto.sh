#!/usr/bin/env bash
# Regenerates the Python stubs (messages, gRPC, mypy stubs) from proto/.
# tests/unit/test_contracts.py fails when the committed stubs are stale.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PATH="$(dirname "$PY"):$PATH"
out=src
rm -f src/reag/v1/*_pb2*.py src/reag/v1/*_pb2*.pyi
mkdir -p src/reag/v1
"$PY" -m grpc_tools.protoc -I proto \
  --python_out="$out" --grpc_python_out="$out" --mypy_out="$out" --mypy_grpc_out="$out" \
  proto/reag/v1/*.proto
# grpc_tools writes absolute imports ("from reag.v1 import events_pb2"), which
# resolve because reag is an installed package.
touch src/reag/v1/__init__.py
