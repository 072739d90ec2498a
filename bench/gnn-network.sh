#!/usr/bin/env bash
# GNN epoch time by mode where the network matters: 2 simulated hosts x 1 rank (scripts/cluster),
# the link between them shaped to each rate in turn; SAR, ONE_SHOT, PIPELINED (staleness 1 and 2)
# and sampled mini-batches in one launch per link, interleaved round by round
# (bench/src/main/java/io/mn4j/bench/GnnNetworkBenchmark.java).
#
#   bench/gnn-network.sh [--links 1gbit,2500mbit,10gbit,none] [--rounds R] [--epochs E]
#                        [--modes sar,one-shot,...] [--nodes N] [--degree D] [--out DIR] [--no-build]
#
#   --links   link settings for `scripts/cluster up --link` (none: unshaped); default 1gbit,2500mbit,10gbit,none
#   --rounds  rounds over the modes per link (default 2); --epochs timed epochs per mode and round (default 3)
#   --nodes, --degree  the planted-partition graph (default 200000 nodes, degree 10, 128 features,
#             METIS into 2 parts: at 1 Gbit/s one-shot's exchange takes longer than its compute)
#   --out     results folder (default bench/results/gnn-network): gnn-network.csv (one row per
#             mode and timed epoch: slowest rank's seconds, mean compute / communication / waiting,
#             bytes sent per rank, loss, load), gnn-network.png (median epoch against bandwidth),
#             gnn-network.txt (the printed lines and the load before and after each link)
# Each rank runs LibTorch on one thread (MN4J_THREADS=1): one rank per core. Needs root;
# MN4J_CLUSTER names the cluster (default gnnnet; taken down at the end).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

links=1gbit,2500mbit,10gbit,none rounds=2 epochs=3 modes=sar,one-shot,pipelined,pipelined-s2,sampled
nodes=200000 degree=10 out=$root/bench/results/gnn-network build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --links) links=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --degree) degree=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) bench_usage "$0"; exit 0 ;;
    *) echo "gnn-network: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
bench_build
cp=$(bench_classpath io.mn4j.bench.GnnNetworkBenchmark)
name=${MN4J_CLUSTER:-gnnnet}
data=$root/bench/results/work/gnn-network   # under the checkout: every simulated host sees it
mkdir -p "$out" "$data"
log=$out/gnn-network.txt
csv=$out/gnn-network.csv
: > "$csv"
echo "# $(date -Is) OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} nodes=$nodes degree=$degree rounds=$rounds epochs=$epochs" > "$log"

java -cp "$cp" io.mn4j.bench.GnnMemoryBenchmark partition --out "$data" --parts 2 --nodes "$nodes" --degree "$degree" \
  --features 128 --classes 16 --partitioner metis | tee -a "$log"
trap '"$root/scripts/cluster" --name "$name" down >/dev/null' EXIT
for link in ${links//,/ }; do
  if [ "$link" = none ]; then up=(); else up=(--link "$link"); fi
  "$root/scripts/cluster" --name "$name" up --hosts 2 "${up[@]}"
  echo "== link $link, before: $(uptime)" | tee -a "$log"
  MN4J_THREADS=1 "$root/scripts/cluster" --name "$name" run --slots 1,1 -cp "$cp" \
    io.mn4j.bench.GnnNetworkBenchmark --data "$data" --link "$link" --modes "$modes" --rounds "$rounds" \
    --epochs "$epochs" --csv "$csv" 2>&1 | grep --line-buffered -v '^\[main\] INFO' | tee -a "$log"
  echo "== link $link, after: $(uptime)" | tee -a "$log"
done
java -cp "$cp" io.mn4j.bench.GnnNetworkPlot --csv "$csv" --png "$out/gnn-network.png"
echo "Results: $csv, $out/gnn-network.png, log $log"
