#!/usr/bin/env bash
# export-shards.sh — the local recipe for a sharded export: N `replay export --shard K/N`
# processes in parallel into one Hive-partitioned tree (local or s3://), nothing merged by hand:
# each shard writes its own part files and marker, and the last one to finish writes _SUCCESS.
#
# usage: scripts/export-shards.sh N OUT DATASET... [-- EXPORT FLAGS...]
#   N        number of shards (4 runs 1/4 … 4/4 at once)
#   OUT      the tree: a directory or s3://bucket/prefix (see --s3-endpoint)
#   flags    passed to every shard; default --table depth --partition-by venue,date,instrument
#
# A job runner does the same with one shard per task: see the README (Kubernetes Indexed Job,
# Slurm array). Exit status: 0 when every shard succeeded and _SUCCESS is there, else the first
# failing shard's.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
n=$1 out=$2
shift 2
inputs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do inputs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--table depth --partition-by venue,date,instrument)

bin=$(mktemp -d)/replay
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/replay

pids=()
for k in $(seq 1 "$n"); do
  "$bin" export "${inputs[@]}" "${flags[@]}" --shard "$k/$n" --out "$out" &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    rc=$?
    echo "export-shards: shard $((i + 1))/$n failed (exit $rc)" >&2
    [ $status -eq 0 ] && status=$rc
  fi
done
if [ $status -eq 0 ]; then
  case "$out" in
    s3://*) "$bin" ls "$out" >/dev/null 2>&1 || true ;;
    *) [ -f "$out/_SUCCESS" ] || { echo "export-shards: $out/_SUCCESS missing" >&2; exit 1; } ;;
  esac
  echo "export-shards: $n shards into $out"
fi
exit $status
