#!/usr/bin/env bash
# Peak memory per rank and epoch time of partitioned full-graph GNN training: GCN and GAT, SAR's
# SAR, SEQUENTIAL and ONE_SHOT (and PIPELINED, sampled), 1, 2 and 4 ranks;
# --modes pipelined adds PipeGCN's stale exchange; --models sage --modes sampled, GraphSAGE on sampled
# mini-batches (PyG's distributed training; an epoch is one pass over the training nodes).
#
#   bench/gnn-memory.sh [options]
#
#   --nodes N          graph nodes (default 400000)           --degree D     average degree (25)
#   --features F       input features (128)                   --classes C    classes (16)
#   --hidden H         hidden width (128)                     --layers L     graph layers (3)
#   --heads K          attention heads of hidden GAT layers (4)
#   --ranks LIST       rank counts (1,2,4)                    --models LIST  gcn,gat
#   --modes LIST       sar,sequential,one-shot[,pipelined][,sampled]  --epochs E  epochs per run (2)
#   --fanouts LIST     sampled mode: neighbours per hop (10 per layer)
#   --batch-size B     sampled mode: seeds per rank and batch (1024)
#   --partitioner P    metis (gpmetis) or ldg (metis)         --seed S       graph/partition seed (1)
#   --data DIR         partition directory (default ${TMPDIR:-/tmp}/mn4j-gnn-memory/<graph>)
#   --malloc fixed|default
#                      fixed (default): MALLOC_MMAP_THRESHOLD_=131072 for the ranks, so glibc maps
#                      every tensor of 128 KiB or more on its own and returns it when it is freed;
#                      default: glibc's adaptive threshold (up to 32 MiB), under which freed tensor
#                      memory stays in the heap and resident sizes include the allocator's cache
#   --time-repeats R   extra runs of GCN SAR and ONE_SHOT on 2 ranks (one per core), alternating, 3
#                      epochs each, for the epoch-time target (default 2; 0 skips them)
#   --edges-per-step E SAR mode: most edges per step of a GAT layer (0 = whole shards; default:
#                      the shard manager's)
#   --timeout SEC      per configuration (default 3600)       --no-build     use the existing build
#   --out DIR          where the CSV, plot and log go (default bench/results)
#   --quick            20000 nodes (checks that everything works, a few minutes)
#
# Steps: (1) build; (2) draw the graph and partition it once per rank count into DATA/pN, in a
# process of its own, so that generation never counts in a rank's memory; (3) one mpirun per
# configuration (fresh processes: every peak is that configuration's), each rank loading only its
# partition and reporting VmHWM above its idle baseline (JVM + LibTorch + MPI); (4) the table, the
# targets and the plot. Writes gnn-memory.csv and gnn-memory.png to bench/results (or --out), and
# the full per-rank log to work/gnn-memory.log there.
# JVM flags of the ranks: -XX:+UseSerialGC -Dorg.bytedeco.javacpp.maxPhysicalBytes=0 plus
# MN4J_JAVA_FLAGS; extra mpirun flags: MN4J_MPIRUN_FLAGS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

nodes=400000 degree=25 features=128 classes=16 hidden=128 layers=3 heads=4
ranks=1,2,4 models=gcn,gat modes=sar,sequential,one-shot epochs=2 partitioner=metis seed=1
edges_per_step=-1 data="" malloc=fixed timeout=3600 build=1 time_repeats=2 out=$root/bench/results fanouts= batch_size=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --degree) degree=$2; shift 2 ;;
    --features) features=$2; shift 2 ;;
    --classes) classes=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --heads) heads=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --partitioner) partitioner=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --malloc) malloc=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --edges-per-step) edges_per_step=$2; shift 2 ;;
    --time-repeats) time_repeats=$2; shift 2 ;;
    --fanouts) fanouts=$2; shift 2 ;;
    --batch-size) batch_size=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
    --quick) nodes=20000; shift ;;
    -h|--help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-gnn-memory: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
case "$malloc" in fixed|default) ;; *) echo "bench-gnn-memory: --malloc must be fixed or default" >&2; exit 2 ;; esac
# Sampled mode: 10 neighbours per node at every hop unless --fanouts says otherwise.
[ -n "$fanouts" ] || fanouts=$(printf '10%.0s,' $(seq "$layers") | sed 's/,$//')
work=$out/work
mkdir -p "$work"
data=${data:-${TMPDIR:-/tmp}/mn4j-gnn-memory/n${nodes}-d${degree}-f${features}-c${classes}-${partitioner}-s${seed}}
csv=$out/gnn-memory.csv
png=$out/gnn-memory.png
log=$work/gnn-memory.log

. bench/lib.sh
bench_build
cp=$(bench_classpath io.mn4j.bench.GnnMemoryBenchmark)
main=io.mn4j.bench.GnnMemoryBenchmark

# JavaCPP unpacks LibTorch into its cache on first use; do it once, with the ranks' JVM flags (a
# -Dorg.bytedeco.javacpp.cachedir in MN4J_JAVA_FLAGS moves the cache), before ranks race.
java -cp "$cp" ${MN4J_JAVA_FLAGS:-} io.mn4j.communicator.LoadNativeLibraries >/dev/null

{
  echo "== $(date -Is) bench-gnn-memory: nodes=$nodes degree=$degree features=$features classes=$classes hidden=$hidden"
  echo "   layers=$layers heads=$heads ranks=$ranks models=$models modes=$modes epochs=$epochs partitioner=$partitioner"
  echo "   malloc=$malloc OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} cores=$(nproc) data=$data"
} | tee -a "$log"

echo "== partitioning (once per rank count, a separate process)" | tee -a "$log"
java -cp "$cp" -XX:+UseSerialGC "$main" partition --out "$data" --parts "$ranks" --nodes "$nodes" --degree "$degree" \
  --features "$features" --classes "$classes" --partitioner "$partitioner" --seed "$seed" 2>&1 \
  | grep -v '^\[main\] INFO' | tee -a "$log"

if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
envflags=()
[ "$malloc" = fixed ] && envflags=(-x MALLOC_MMAP_THRESHOLD_=131072)
rm -f "$csv"
failed=0

# One configuration: fresh processes under mpirun; rank 0 appends a row to the CSV.
run_config() { # np model mode epochs
  local np=$1 model=$2 mode=$3 ep=$4 rc
  # --oversubscribe always, as scripts/mn4j-run: Open MPI 4.1 counts slots per physical core, not
  # per hardware thread (nproc), and without binding it costs nothing when the ranks fit.
  local flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
  echo "== $(date +%T) $model $mode, $np ranks, $ep epochs (load average: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$log"
  set +e
  timeout "$timeout" mpirun -np "$np" "${flags[@]}" "${envflags[@]}" ${MN4J_MPIRUN_FLAGS:-} \
    java -cp "$cp" -XX:+UseSerialGC -Dorg.bytedeco.javacpp.maxPhysicalBytes=0 ${MN4J_JAVA_FLAGS:-} "$main" run \
    --data "$data" --model "$model" --mode "$mode" --epochs "$ep" --hidden "$hidden" --layers "$layers" \
    --heads "$heads" --edges-per-step "$edges_per_step" --fanouts "$fanouts" --batch-size "$batch_size" --csv "$csv" < /dev/null 2>&1 | grep -v 'INFO\|index_reduce() is in beta' >> "$log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    echo "   FAILED (exit code $rc; see $log)" | tee -a "$log"
    failed=$((failed + 1))
  else
    grep "^$model $mode, $np ranks" "$log" | tail -n 1 | sed 's/^/   /'
  fi
}

IFS=, read -r -a rank_list <<< "$ranks"
IFS=, read -r -a model_list <<< "$models"
IFS=, read -r -a mode_list <<< "$modes"
for np in "${rank_list[@]}"; do
  for model in "${model_list[@]}"; do
    for mode in "${mode_list[@]}"; do
      # SAGE trains on sampled mini-batches only, and only SAGE does.
      case "$model/$mode" in sage/sampled) ;; sage/* | */sampled) continue ;; esac
      run_config "$np" "$model" "$mode" "$epochs"
    done
  done
done
# The epoch-time target compares GCN modes 1 and 3 on one rank per core; other processes on this
# machine add noise to single epochs, so both run again, alternating, and the report takes the best.
if [[ ",$ranks," == *",2,"* ]] && [[ ",$models," == *",gcn,"* ]]; then
  for ((r = 1; r <= time_repeats; r++)); do
    run_config 2 gcn sar 3
    run_config 2 gcn one-shot 3
  done
fi

echo "== report" | tee -a "$log"
java -cp "$cp" "$main" report --csv "$csv" --png "$png" | tee -a "$log"
echo "csv: $csv"
echo "log: $log"
[ "$failed" = 0 ] || { echo "bench-gnn-memory: $failed configuration(s) failed" >&2; exit 1; }
