#!/usr/bin/env bash
# Installs the non-Go tools the tests use. Idempotent; safe to run on every make test.
set -euo pipefail
cd "$(dirname "$0")/.."

# npm packages the tests drive (DuckDB, Apache Arrow JS, Hyperliquid SDK), into tests/js.
if [ ! -d tests/js/node_modules/@duckdb/node-api ] || [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; then
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
fi
