#!/usr/bin/env bash
# Data-parallel gradient reduction across hosts: TrainDataParallel (MLP on Fashion-MNIST, one
# MultiNodeOptimizer step per batch) on 2 simulated hosts x 2 ranks (scripts/cluster), the link
# between them shaped, with the gradients reduced flat or hierarchically, in float32 or bfloat16.
#
#   bench/data-parallel.sh [--links 1gbit,10gbit] [--variants flat,hierarchical,...] [--rounds R] [--no-build]
#
#   --variants  ROUTE or ROUTE:DTYPE (TrainDataParallel's --grad-reduction and --grad-dtype);
#               default flat,hierarchical,flat:bfloat16,hierarchical:bfloat16, launched in turn
#   --rounds    how many times the variants are run in turn per link (default 1)
# Each variant runs twice, 1 epoch and 2 epochs: the bytes host 1's link carried in the second
# epoch alone are the difference of the two runs (each host's eth0 counters, read before and after
# each run), so data loading and start-up cancel out; the epoch time is the 2-epoch run's second
# epoch (epochs.csv). Writes bench/results/data-parallel/data-parallel.csv
# (link,variant,round,epoch_seconds,tx_bytes_per_epoch,rx_bytes_per_epoch,test_accuracy,load),
# data-parallel.png (bytes and epoch time per variant) and data-parallel.txt (the log, with the load). Needs root; MN4J_CLUSTER names the cluster (default dpnet).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

links=1gbit,10gbit variants=flat,hierarchical,flat:bfloat16,hierarchical:bfloat16 rounds=1 build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --links) links=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) bench_usage "$0"; exit 0 ;;
    *) echo "data-parallel: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
bench_build
name=${MN4J_CLUSTER:-dpnet}
out=$root/bench/results/data-parallel
work=$root/bench/results/work/data-parallel   # under the checkout: every simulated host sees it
mkdir -p "$out" "$work"
csv=$out/data-parallel.csv log=$out/data-parallel.txt
echo "link,variant,round,epoch_seconds,tx_bytes_per_epoch,rx_bytes_per_epoch,test_accuracy,load" > "$csv"
echo "# $(date -Is) OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}" > "$log"
cluster() { "$root/scripts/cluster" --name "$name" "$@"; }
trap 'cluster down >/dev/null' EXIT

# Bytes host 1 has sent and received on its link so far.
counters() { cluster exec 1 cat /sys/class/net/eth0/statistics/tx_bytes /sys/class/net/eth0/statistics/rx_bytes | paste -sd' '; }

# train VARIANT EPOCHS DIR: one TrainDataParallel run; prints host 1's tx and rx bytes during it.
train() {
  local route=${1%%:*} dtype=float32 before after
  [[ $1 == *:* ]] && dtype=${1#*:}
  before=$(counters)
  cluster run --slots 2,2 io.mn4j.examples.TrainDataParallel --grad-reduction "$route" --grad-dtype "$dtype" \
    --epochs "$2" --out "$3" --no-progress --no-plot >> "$log" 2>&1
  after=$(counters)
  echo "$before $after" | awk '{ print $3 - $1, $4 - $2 }'
}

for link in ${links//,/ }; do
  if [ "$link" = none ]; then cluster up --hosts 2; else cluster up --hosts 2 --link "$link"; fi
  for ((round = 1; round <= rounds; round++)); do
    for v in ${variants//,/ }; do
      echo "== $link $v round $round: $(uptime)" | tee -a "$log"
      read -r tx1 rx1 < <(train "$v" 1 "$work/$link-$v-1")
      read -r tx2 rx2 < <(train "$v" 2 "$work/$link-$v-2")
      seconds=$(awk -F, 'NR == 3 { print $6 }' "$work/$link-$v-2/epochs.csv")
      accuracy=$(awk -F, 'NR == 3 { print $5 }' "$work/$link-$v-2/epochs.csv")
      line="$link,$v,$round,$seconds,$((tx2 - tx1)),$((rx2 - rx1)),$accuracy,$(cut -d' ' -f1 /proc/loadavg)"
      echo "$line" | tee -a "$log" >> "$csv"
    done
  done
done
column -s, -t "$csv"
java -cp "$(bench_classpath io.mn4j.bench.DataParallelPlot)" io.mn4j.bench.DataParallelPlot --csv "$csv" --png "$out/data-parallel.png"
echo "Results: $csv, $out/data-parallel.png, log $log"
