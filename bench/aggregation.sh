#!/usr/bin/env bash
# Aggregation kernel against the memory: mn4j's CSR kernel (io.mn4j.bench.AggregationBenchmark),
# a copy and a plain C CSR loop (bench/c/csragg.c, gcc -O3 -fopenmp, compiled here) on the same
# graphs in one run, forward and backward, in the original and the reverse Cuthill-McKee node order.
#
#   bench/aggregation.sh [--no-build] [--reps R] [--quick]
#
# Two sweeps on planted-partition graphs, 2 threads, R repetitions (default 5):
#   widths 16,32,64,128,256 at degree 16 on 500000 nodes (1M nodes at width 256 would hold 5 GB in
#   the JVM and 4 GB in the C program at once: too much beside other jobs on a 24 GiB machine),
#   degrees 5,10,16,25,50 at width 64 on 1000000 nodes (degree 16: the issue's reference point).
# Writes bench/results/aggregation-{width,degree}.{csv,txt,png} and aggregation-load.txt (uptime
# before and after each sweep). --quick: 100000 nodes, 1 repetition (checks that everything works).
# Peak memory: about 3 GB in the JVM (heap capped at 2 GB) and 2 GB in the C program.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

build=1 width_nodes=500000 degree_nodes=1000000 reps=5
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --reps) reps=$2; shift 2 ;;
    --quick) width_nodes=100000 degree_nodes=100000 reps=1; shift ;;
    -h|--help) bench_usage "$0"; exit 0 ;;
    *) echo "bench-aggregation: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

results=$root/bench/results
work=$results/work
mkdir -p "$work"
bench_build
bench_classpath io.mn4j.bench.AggregationBenchmark >/dev/null
command -v gcc >/dev/null || { echo "bench-aggregation: gcc not found (run scripts/setup.sh)" >&2; exit 1; }
echo "== compiling bench/c/csragg.c"
gcc -O3 -fopenmp -Wall -o "$work/csragg" bench/c/csragg.c

load=$results/aggregation-load.txt
echo "# $(date -Is) $(uname -n) nproc=$(nproc) reps=$reps" > "$load"
export MN4J_JAVA_FLAGS=${MN4J_JAVA_FLAGS:--Xmx2g}
sweep() { # sweep NAME NODES DEGREES WIDTHS
  echo "before $1: $(uptime)" >> "$load"
  bench/run AggregationBenchmark --nodes "$2" --degree "$3" --features "$4" --threads 2 --reps "$reps" \
    --methods mn4j-csr,c-csr,copy --node-order none,rcm --c-kernel "$work/csragg" --work "$work/aggregation" \
    --csv "$results/aggregation-$1.csv" --png "$results/aggregation-$1.png" | tee "$results/aggregation-$1.txt"
  echo "after  $1: $(uptime)" >> "$load"
}
# Largest first: with scripts/mn4j-run's malloc settings (no trimming) freed blocks are kept, and
# the smaller matrices that follow fit into them; ascending, the heap grows by every size in turn.
sweep width "$width_nodes" 16 256,128,64,32,16
sweep degree "$degree_nodes" 50,25,16,10,5 64
rm -rf "$work/aggregation"
echo "Results: $results/aggregation-{width,degree}.{csv,txt,png}, load log: $load"
