#!/usr/bin/env bash
# make bench-peers: tapedeck beside tardis-dev (npm tardis-dev@13.35.3) on the very same frames, a
# generated 15-minute, 1.35 M-frame Polymarket recording (bench/peers/PROVENANCE.md), offline.
#
#   tardis-dev raw      replay({skipDecoding:true}): frames off its cache, no decoding (tardis-machine's /replay path)
#   tapedeck run        replay run: zstd segments -> decoder -> books, default integrity checks
#   tardis-dev books    replayNormalized + computeBookSnapshots({depth:25, interval:0}): books, a snapshot per change
#   tapedeck depth      replay export --table depth --levels 25 --every-event --format csv: the same work, written out
#
# The tools are alternated round by round (odd rounds in the order above, even rounds reversed; the
# host is shared and noisy); the figures are medians and the ratios are of medians of the same run,
# each round's own ratio beside them. Environment: ROUNDS (3), MINUTES (15), BOOKS=0 skips the two
# book modes (tardis-dev's takes about 40 s a pass), BENCH_PEERS_OUT (bench/out/peers), NOTE (the
# conditions, recorded in the JSON and the docs), PUBLISH=0 leaves bench/RESULTS-peers.json and the
# docs alone (the result is still in $BENCH_PEERS_OUT/peers.json).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_PEERS_OUT:-bench/out/peers}
rounds=${ROUNDS:-3}
minutes=${MINUTES:-15}
books=${BOOKS:-1}
mkdir -p "$out"

need() { command -v "$1" >/dev/null || { echo "bench-peers: $1 is needed ($2)" >&2; exit 1; }; }
need node "Debian's nodejs"
need npm "Debian's npm"
need python3 "the cache generator is Python's standard library only"

# tardis-dev, unmodified, into a project folder (bench/peers/node_modules).
if [ ! -f bench/peers/node_modules/tardis-dev/package.json ]; then
  echo "bench-peers: installing tardis-dev@13.35.3 into bench/peers/node_modules" >&2
  (cd bench/peers && npm ci --no-audit --no-fund --loglevel=error)
fi

# The recording, as a tardis-dev cache (deterministic, seeded), then imported into a tapedeck dataset.
cache="$out/cache-${minutes}m"
if [ ! -f "$cache/SUMMARY.json" ]; then
  echo "bench-peers: generating the ${minutes}-minute recording into $cache" >&2
  rm -rf "$cache"
  python3 bench/peers/gen_polymarket_cache.py --fixtures bench/peers/fixtures --out "$cache" --minutes "$minutes" >&2
fi
echo "bench-peers: building replay, capture and benchrun" >&2
go build -o "$out/bin/" ./cmd/replay ./cmd/capture ./bench/cmd/benchrun
# tardis-dev keys its cache by sha256(JSON.stringify(filters)); the data lives under the hash of [].
data="$cache/feeds/polymarket/4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
dataset="$out/dataset-${minutes}m"
if [ ! -f "$dataset/manifest.json" ]; then
  echo "bench-peers: importing the cache into $dataset" >&2
  rm -rf "$dataset"
  "$out/bin/capture" import --venue polymarket --format tardis $(find "$data" -name '*.json.gz' | sort) --out "$dataset" >&2
fi
# The rounds: benchrun peers times each pass as its own process (wall, CPU, peak RSS), checks that
# every pass read the whole recording, writes $out/peers.json and, with PUBLISH=1 (the default),
# copies it to bench/RESULTS-peers.json and rewrites the bench-peers blocks of bench/RESULTS.md and
# README.md from it (make bench-peers-results does only that last step, from the committed JSON).
publish=()
if [ "${PUBLISH:-1}" = 1 ]; then publish=(--publish); fi
books_flag=--books=true
if [ "$books" != 1 ]; then books_flag=--books=false; fi
"$out/bin/benchrun" peers --rounds "$rounds" --cache "$cache" --dataset "$dataset" --replay "$out/bin/replay" \
  --tardis-dir bench/peers "$books_flag" --json "$out/peers.json" --note "${NOTE:-}" \
  --command "ROUNDS=$rounds MINUTES=$minutes BOOKS=$books make bench-peers" "${publish[@]}" | tee "$out/peers.md"
