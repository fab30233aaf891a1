#!/usr/bin/env bash
# Prints what each install of reag pulls: the base (the core) and every extra, resolved
# by pip against the package index with `pip install --dry-run --report` (nothing is
# installed). Usage: scripts/floor-deps.sh [EXTRA ...]   (default: every floor)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
extras=("$@")
[ ${#extras[@]} -gt 0 ] || extras=(core client services shell local embeddings eval plots)
for extra in "${extras[@]}"; do
  spec="."
  [ "$extra" = core ] || spec=".[$extra]"
  report=$(mktemp)
  "$PY" -m pip install --quiet --dry-run --ignore-installed --report "$report" "$spec" \
    >/dev/null 2> >(grep -v "^WARNING: Location" >&2)
  "$PY" - "$extra" "$report" <<'PYEOF'
import json, sys
extra, path = sys.argv[1], sys.argv[2]
names = sorted(
    f"{i['metadata']['name'].lower()}=={i['metadata']['version']}"
    for i in json.load(open(path))["install"]
    if i["metadata"]["name"].lower() != "reag"
)
print(f"{extra}: {len(names)} packages")
print("  " + " ".join(names))
PYEOF
  rm -f "$report"
done
