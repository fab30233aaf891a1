#!/usr/bin/env bash
# Makes sure the PostgreSQL server the store tests use answers on 127.0.0.1:5432,
# starting the machine's own cluster when it is installed but down. Safe to run
# again: when the server answers it only asks pg_isready and exits.
#
# `make test` and `.ci/run` both run this script, so the README's test command
# needs no step of its own. Where no PostgreSQL is installed it says so and
# carries on: the tests marked `postgres` then fail with a connection error.
set -euo pipefail

if ! command -v pg_isready >/dev/null 2>&1; then
  echo "==> PostgreSQL is not installed: the tests marked 'postgres' need a server on 127.0.0.1:5432" >&2
  exit 0
fi
if pg_isready -h 127.0.0.1 -p 5432 -q; then
  exit 0
fi
echo "==> starting PostgreSQL"
cluster=$(ls /etc/postgresql | head -n1)
pg_ctlcluster --skip-systemctl-redirect "$cluster" main start
for _ in $(seq 1 30); do
  pg_isready -h 127.0.0.1 -p 5432 -q && break
  sleep 1
done
pg_isready -h 127.0.0.1 -p 5432
