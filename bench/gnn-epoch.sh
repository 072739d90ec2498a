#!/usr/bin/env bash
# GNN epoch benchmark (io.mn4j.bench.GnnEpochBenchmark), both parts:
#  1. epoch time of TrainGnn's training step with 1 rank (mn4j, SAR and one-shot) vs the same
#     2-layer GCN written with plain LibTorch ops (embedding_bag and sparse_csr aggregation), on
#     TrainGnn's synthetic default graph and on Cora; ratios mn4j / plain;
#  2. bytes sent per layer in one-shot mode with MN4J_BENCH_NP ranks (default 2) vs boundary rows x
#     width x 4 bytes and the partitioner's communication volume.
# Usage: bench/gnn-epoch.sh [OUT_DIR] [extra options for part 1, e.g. --epochs 30]
# Builds first (MN4J_BENCH_BUILD=0 skips it). Leaves OPENBLAS_CORETYPE
# as the environment sets it (the table says which).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench/results}
shift || true
mkdir -p "$out"
build=${MN4J_BENCH_BUILD:-1}
. "$root/bench/lib.sh"
bench_build
"$root/bench/run" -np 1 GnnEpochBenchmark --what time --csv "$out/gnn-epoch-benchmark.csv" "$@" \
  | tee "$out/gnn-epoch-benchmark.txt"
"$root/bench/run" -np "${MN4J_BENCH_NP:-2}" GnnEpochBenchmark --what bytes --csv "$out/gnn-oneshot-bytes.csv" \
  | tee "$out/gnn-oneshot-bytes.txt"
