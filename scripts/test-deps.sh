#!/usr/bin/env bash
# Installs the non-Go tools the tests use. Idempotent; safe to run on every make test.
set -euo pipefail
cd "$(dirname "$0")/.."

# npm packages the tests drive (DuckDB, Apache Arrow JS, Polars, Hyperliquid SDK), into tests/js.
# nodejs-polars stays at 0.24.1: later native builds require Node 22 (Debian 12 has 20).
if [ ! -d tests/js/node_modules/@duckdb/node-api ] || [ ! -d tests/js/node_modules/nodejs-polars ] || [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; then
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
fi

# Debian packages the notebook tests (notebooks/) execute with: Jupyter's nbconvert
# and kernel, pandas and matplotlib; numpy, which the hftbacktest export test reads .npz with. PyPI is not reachable here, so these come from
# apt; pyarrow has no Debian 12 package, which is why the notebooks read CSV exports.
# Only missing packages are installed, so a machine that has them never touches apt.
# chromium: the headless browser the status page and report tests drive with
# chromedp (internal/browsertest); fonts-dejavu-core so its screenshots have text.
debs=(jupyter-nbconvert python3-ipykernel python3-numpy python3-pandas python3-matplotlib chromium fonts-dejavu-core)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${debs[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
      missing+=("$p")
    fi
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "test-deps: installing ${missing[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
