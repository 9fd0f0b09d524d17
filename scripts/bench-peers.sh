#!/usr/bin/env bash
# make bench-peers: tapedeck beside tardis-dev (npm tardis-dev@13.35.3) on the very same frames, a
# generated 15-minute, 1.35 M-frame Polymarket recording (bench/peers/PROVENANCE.md), offline.
#
#   tardis-dev raw      replay({skipDecoding:true}): frames off its cache, no decoding (tardis-machine's /replay path)
#   tapedeck run        replay run: zstd segments -> decoder -> books, default integrity checks
#   tardis-dev books    replayNormalized + computeBookSnapshots({depth:25, interval:0}): books, a snapshot per change
#   tapedeck depth      replay export --table depth --levels 25 --every-event --format csv: the same work, written out
#
# The tools are alternated round by round (the host is shared and noisy); the figures are medians and
# the ratios are of medians of the same run. Environment: ROUNDS (3), MINUTES (15), BOOKS=0 skips the
# two book modes (tardis-dev's takes about a minute a pass), BENCH_PEERS_OUT (bench/out/peers).
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
echo "bench-peers: building replay and capture" >&2
go build -o "$out/bin/" ./cmd/replay ./cmd/capture
# tardis-dev keys its cache by sha256(JSON.stringify(filters)); the data lives under the hash of [].
data="$cache/feeds/polymarket/4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
dataset="$out/dataset-${minutes}m"
if [ ! -f "$dataset/manifest.json" ]; then
  echo "bench-peers: importing the cache into $dataset" >&2
  rm -rf "$dataset"
  "$out/bin/capture" import --venue polymarket --format tardis $(find "$data" -name '*.json.gz' | sort) --out "$dataset" >&2
fi
from=2025-10-23T00:00:00.000Z
to=$(python3 -c "import datetime as d;print((d.datetime(2025,10,23)+d.timedelta(minutes=$minutes)).strftime('%Y-%m-%dT%H:%M:%S.000Z'))")

now() { date +%s%N; }
res="$out/runs.jsonl"
: > "$res"
for r in $(seq 1 "$rounds"); do
  echo "bench-peers: round $r/$rounds" >&2
  node bench/peers/bench_replay.cjs --tardis-dir "$PWD/bench/peers" --cache "$PWD/$cache" --from "$from" --to "$to" --mode raw-skip |
    sed "s/^{/{\"tool\":\"tardis-raw\",\"round\":$r,/" >> "$res"
  "$out/bin/replay" run "$dataset" --json > "$out/run.json"
  node -e 'const j=require(process.argv[1]);console.log(JSON.stringify({tool:"tapedeck-run",round:+process.argv[2],frames:j.frames,seconds:j.wall_ns/1e9,frames_per_s:j.frames_per_sec,mb_per_s:j.mb_per_sec,digest:j.digest}))' "$PWD/$out/run.json" "$r" >> "$res"
  if [ "$books" = 1 ]; then
    node bench/peers/bench_replay.cjs --tardis-dir "$PWD/bench/peers" --cache "$PWD/$cache" --from "$from" --to "$to" --mode normalized |
      sed "s/^{/{\"tool\":\"tardis-books\",\"round\":$r,/" >> "$res"
    t0=$(now)
    "$out/bin/replay" export "$dataset" --table depth --levels 25 --every-event --format csv --out - > /dev/null
    t1=$(now)
    echo "{\"tool\":\"tapedeck-depth\",\"round\":$r,\"seconds\":$(( (t1 - t0) / 1000000 ))e-3}" >> "$res"
  fi
done
node bench/peers/summarize.cjs "$res" "$cache/SUMMARY.json" | tee "$out/peers.md"
