#!/usr/bin/env bash
# GNN epoch benchmark (io.mn4j.examples.bench.GnnEpochBenchmark), both parts:
#  1. epoch time of TrainGnn's training step with 1 rank (mn4j, SAR and one-shot) vs the same
#     2-layer GCN written with plain LibTorch ops (embedding_bag and sparse_csr aggregation), on
#     TrainGnn's synthetic default graph and on Cora; ratios mn4j / plain;
#  2. bytes sent per layer in one-shot mode with MN4J_BENCH_NP ranks (default 2) vs boundary rows x
#     width x 4 bytes and the partitioner's communication volume.
# Usage: scripts/bench-gnn-epoch.sh [OUT_DIR] [extra options for part 1, e.g. --epochs 30]
# Needs a build with dependencies copied (scripts/maven -q package -DskipTests). Leaves OPENBLAS_CORETYPE
# as the environment sets it (the table says which).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-bench-results}
shift || true
mkdir -p "$out"
"$here/mn4j-run" -np 1 io.mn4j.examples.bench.GnnEpochBenchmark --what time --csv "$out/gnn-epoch-benchmark.csv" "$@" \
  | tee "$out/gnn-epoch-benchmark.txt"
"$here/mn4j-run" -np "${MN4J_BENCH_NP:-2}" io.mn4j.examples.bench.GnnEpochBenchmark --what bytes --csv "$out/gnn-oneshot-bytes.csv" \
  | tee "$out/gnn-oneshot-bytes.txt"
