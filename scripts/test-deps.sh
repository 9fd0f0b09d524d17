#!/usr/bin/env bash
# Installs the non-Go tools the tests use. Idempotent; safe to run on every make test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test-deps: nothing beyond Go yet"
