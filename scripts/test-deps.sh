#!/usr/bin/env bash
# Installs the non-Go tools the tests use. Idempotent; safe to run on every make test.
set -euo pipefail
cd "$(dirname "$0")/.."

# MinIO, the real S3 server the S3 tests start on 127.0.0.1 (internal/s3test), built
# from the Go module proxy into $(go env GOPATH)/bin. Skipped when the binary is
# there. On a fresh machine this build is the long pole of make test (about 9
# minutes on 2 cores with a cold build cache), so it runs in the background while
# npm and apt work, and make test stays under 20 minutes; with the binary in place
# it costs nothing. The version is internal/s3test's MinioVersion (a test checks).
minio_version=v0.0.0-20260212201848-7aac2a2c5b7c
gobin="$(${GO:-go} env GOPATH | cut -d: -f1)/bin"
minio_pid=""
if [ ! -x "$gobin/minio" ]; then
  echo "test-deps: building minio@$minio_version (once; several minutes)" >&2
  ${GO:-go} install "github.com/minio/minio@$minio_version" &
  minio_pid=$!
fi

# npm packages the tests drive (DuckDB, Apache Arrow JS, Polars, Hyperliquid SDK), into tests/js.
# nodejs-polars stays at 0.24.1: later native builds require Node 22 (Debian 12 has 20).
# Installed again when any dependency package.json names is missing (a copied
# or stale node_modules) or the lock file changed since the last install.
if ! node -e 'const fs=require("fs"),p=require("./tests/js/package.json");for(const d of Object.keys({...p.dependencies,...p.devDependencies}))if(!fs.existsSync("tests/js/node_modules/"+d+"/package.json"))process.exit(1)' 2>/dev/null || [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; then
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

if [ -n "$minio_pid" ]; then
  wait "$minio_pid" || { echo "test-deps: go install github.com/minio/minio@$minio_version failed" >&2; exit 1; }
fi
