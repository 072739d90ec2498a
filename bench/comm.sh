#!/usr/bin/env bash
# Communication benchmark: mn4j's Communicator (Java, LibTorch tensors) against plain C MPI, in one
# run, on the same sizes, rank counts and method (see bench/c/commbench.c and
# bench/src/main/java/io/mn4j/bench/CommBenchmark.java).
#
#   bench/comm.sh [--quick] [--no-build] [--stat min|median] [--repeats R] [--rounds K]
#
#   --quick      a few sizes, fewer iterations, one round (checks that everything works)
#   --no-build   use the existing build (bench/target etc.) instead of running Maven
#   --stat       statistic over the timed repeats: min (default; load from other processes only
#                ever adds time, so the fastest repeat is the best estimate of the operation's
#                own cost) or median
#   --repeats    timed repeats per size (default 21)
#   --rounds     run the whole C/Java alternation K times (default 2); the table shows, per row,
#                the fastest round of each side and the ratio of the medians of the rounds: the
#                speed of a launch drifts from one to the next
#   --join-only  measure nothing: join bench/results/comm-raw.csv again (table, CSV, plot)
#   --cluster LINKS  on the simulated cluster (scripts/cluster, docs/cluster.md) instead: 2 hosts x 1
#                rank, TCP between them, once per link setting in LINKS (comma-separated rates for
#                `scripts/cluster up --link`, `none` for an unshaped link; e.g. 1gbit,10gbit,none):
#                ping-pong and the 2-rank collectives, C and Java alternating, results per link in
#                bench/results/comm-cluster/LINK/ (same files as below); the 8-byte target there
#                is one-way latency within 2x of C's. Needs root; MN4J_CLUSTER names the cluster
#                (default bench; it is taken down at the end).
#
# Runs, for 2 ranks (one per core) ping-pong and the collectives, for 4 ranks (oversubscribed,
# yielding) the collectives; C and Java alternate per operation so that both see similar load.
# Java rows per collective: the allocating op (new tensors), its Into variant (a preallocated
# output, as C), and C's call through Open MPI's Java bindings alone (no mn4j, a reference). C
# also runs allgather_alloc and alltoall_alloc, the allocating operations' work (sizes first, then
# new memory), as the reference of the allocating Java rows.
# Writes bench/results/comm-raw.csv (impl,op,ranks,bytes,seconds_per_op,bandwidth; one line per
# round),
# bench/results/comm.csv (joined, with Java/C ratios), bench/results/comm.png (the ratios against
# the size) and bench/results/comm-load.txt (uptime before and after every launch), and prints the
# table.
# Environment: MN4J_JAVA_FLAGS (default -XX:+UseSerialGC), MN4J_MPIRUN_FLAGS (extra mpirun flags),
# MN4J_CP_PREFIX (class path entries put first, e.g. patched communicator classes to compare).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. bench/lib.sh

quick=() build=1 stat=min repeats=21 rounds= join_only=0 links=
while [ $# -gt 0 ]; do
  case "$1" in
    --cluster) links=$2; shift 2 ;;
    --join-only) join_only=1 build=0; shift ;;
    --quick) quick=(--quick); shift ;;
    --no-build) build=0; shift ;;
    --stat) stat=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) bench_usage "$0"; exit 0 ;;
    *) echo "bench-comm: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$rounds" ] || { [ ${#quick[@]} -gt 0 ] && rounds=1 || rounds=2; }
case "$stat" in median|min) ;; *) echo "bench-comm: --stat must be median or min" >&2; exit 2 ;; esac

results=$root/bench/results
work=$results/work
mkdir -p "$work"
cluster_name=${MN4J_CLUSTER:-bench}

bench_build
command -v mpicc >/dev/null || { echo "bench-comm: mpicc not found (run scripts/setup.sh)" >&2; exit 1; }
cp=$(bench_classpath io.mn4j.bench.CommBenchmark)
[ -n "${MN4J_CP_PREFIX:-}" ] && cp="$MN4J_CP_PREFIX:$cp"

if [ "$join_only" = 0 ]; then
  echo "== compiling bench/c/commbench.c"
  mpicc -O2 -Wall -o "$work/commbench" bench/c/commbench.c

  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # The malloc settings of scripts/mn4j-run, for C and Java alike.
  . scripts/glibc-tunables.sh
  # JavaCPP reads /proc/self/statm for every native object it registers while maxPhysicalBytes > 0
  # (~1.7 us per received tensor here). The Java rows run without that accounting; the row
  # pingpong_jcpp_default repeats the ping-pong with JavaCPP's default, what a program gets by default.
  java_flags=${MN4J_JAVA_FLAGS:--XX:+UseSerialGC -Dorg.bytedeco.javacpp.maxPhysicalBytes=0}
  default_accounting_flags=${MN4J_JAVA_FLAGS:--XX:+UseSerialGC}
  main=io.mn4j.bench.CommBenchmark

  # JavaCPP unpacks LibTorch into ~/.javacpp/cache on first load: one JVM first, before the ranks.
  echo "== loading LibTorch once"
  java -cp "$cp" $java_flags "$main" --load-only

  # Ranks get a core each while they fit. Open MPI 4.1 counts a slot per physical core, not per
  # hardware thread (nproc), so with hyper-threads -np 4 --bind-to core on 2 cores would fail.
  # The smaller of the physical cores and the CPUs this process may use (a container's limit).
  cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
  if [ "$(nproc)" -lt "$cores" ]; then cores=$(nproc); fi

  run() { # run NP IMPL OPS [JAVA_FLAGS]
    local np=$1 impl=$2 ops=$3 jflags=${4:-$java_flags} flags launch=(mpirun)
    if [ -n "$link" ]; then # one rank per simulated host: each has the machine's cores
      launch=("$root/scripts/cluster" --name "$cluster_name" mpirun --slots 1,1 --)
      flags=(--bind-to none --mca mpi_yield_when_idle 1)
    elif [ "$np" -le "$cores" ]; then
      flags=(--bind-to core --map-by core)
    else
      flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
    fi
    echo "== $impl, $np ranks: $ops   (load: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "before $impl np=$np $ops: $(uptime)" >> "$load"
    if [ "$impl" = c ]; then
      "${launch[@]}" -np "$np" "${flags[@]}" ${MN4J_MPIRUN_FLAGS:-} \
        "$work/commbench" --ops "$ops" --stat "$stat" --repeats "$repeats" "${quick[@]}" --out "$work/lines.csv"
    else
      "${launch[@]}" -np "$np" "${flags[@]}" ${MN4J_MPIRUN_FLAGS:-} \
        java -cp "$cp" $jflags "$main" --ops "$ops" --stat "$stat" --repeats "$repeats" "${quick[@]}" --out "$work/lines.csv"
    fi
    echo "after  $impl np=$np $ops: $(uptime)" >> "$load"
  }
fi

# measure OUT_DIR NP...: the C/Java alternation for the given rank counts, raw lines into OUT_DIR.
measure() {
  local dir=$1; shift
  raw=$dir/comm-raw.csv load=$dir/comm-load.txt
  mkdir -p "$dir"
  : > "$work/lines.csv"
  { echo "# $(date -Is) $(uname -n) nproc=$(nproc) cores=$cores OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} stat=$stat repeats=$repeats link=${link:-one host} ${quick[*]}"; } > "$load"
  for ((round = 1; round <= rounds; round++)); do
    echo "== round $round of $rounds" | tee -a "$load"
    run 2 c pingpong
    run 2 java pingpong,pingpong_into,pingpong_mpijava
    mark=$(wc -l < "$work/lines.csv")
    run 2 java pingpong "$default_accounting_flags"
    sed -i "$((mark + 1)),\$ s/^java,pingpong,/java,pingpong_jcpp_default,/" "$work/lines.csv"
    for np in "$@"; do
      for op in allgather alltoall allreduce; do
        # allgather_alloc, alltoall_alloc: C doing the allocating operations' work (sizes first,
        # then new memory), the reference of mn4j's allocating allgather and alltoall.
        if [ "$op" = allreduce ]; then run "$np" c "$op"; else run "$np" c "$op,${op}_alloc"; fi
        # allgather_into, ...: the same operation into a preallocated tensor, as C does;
        # allgather_mpijava, ...: C's call through the Java bindings, no mn4j (a reference).
        run "$np" java "$op,${op}_into,${op}_mpijava"
      done
    done
  done

  { echo "impl,op,ranks,bytes,seconds_per_op,bandwidth"; cat "$work/lines.csv"; } > "$raw"
}

# join OUT_DIR: the table, comm.csv and comm.png of OUT_DIR's raw lines.
join() {
  local out=$1 raw=$1/comm-raw.csv load=$1/comm-load.txt latency_target=${2:-abs}
  [ -f "$raw" ] || { echo "bench-comm: no $raw to join" >&2; exit 1; }
  rounds=$(grep -c '^c,pingpong,2,8,' "$raw") # one 8-byte C ping-pong per round
  stat=$(sed -n 's/.* stat=\([a-z]*\) repeats=\([0-9]*\).*/\1/p' "$load" | head -1)
  repeats=$(sed -n 's/.* stat=\([a-z]*\) repeats=\([0-9]*\).*/\2/p' "$load" | head -1)

# Join: one row per (op, ranks, bytes); Java's pingpong_into and pingpong_mpijava (the raw Java
# bindings, a reference that is not mn4j) are compared with C's pingpong. Two estimates across
# rounds: the best round of each side (the target column), and the ratio of the medians of the
# rounds (java_over_c_bandwidth_median): one lucky launch moves the first, not the second.
awk -F, -v csv="$out/comm.csv" -v latency_target="$latency_target" '
  function human(b) { return b >= 1048576 ? sprintf("%g MiB", b / 1048576) : b >= 1024 ? sprintf("%g KiB", b / 1024) : b " B" }
  function median(list,    a, m, i, j, x) {
    m = split(list, a, " ")
    for (i = 2; i <= m; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  NR == 1 { next }
  { key = $2 "," $3 "," $4; k1 = $1 "," key   # best round per row
    if (!(k1 in sec) || $5 + 0 < sec[k1] + 0) { sec[k1] = $5; bw[k1] = $6 }
    rounds[k1] = rounds[k1] " " $5
    if ($1 == "java" && !(key in seen)) { seen[key] = 1; order[n++] = key } }
  END {
    print "op,ranks,bytes,c_seconds_per_op,java_seconds_per_op,c_bandwidth,java_bandwidth,java_over_c_bandwidth,java_over_c_bandwidth_median,java_over_bindings_median,java_over_c_alloc_median" > csv
    printf "%-16s %5s %9s %12s %12s %10s %10s %8s %8s %8s %8s  %s\n", "op", "ranks", "size", "C us", "Java us", "C MB/s", "Java MB/s", "Java/C", "median", "/bind.", "/C alloc", "target (best round)"
    for (i = 0; i < n; i++) {
      split(order[i], k, ","); op = k[1]; ranks = k[2]; bytes = k[3]
      cop = op; sub(/_.*/, "", cop)   # pingpong_into, allgather_into, ...: against the plain C op
      ck = "c," cop "," ranks "," bytes; jk = "java," order[i]
      if (!(ck in sec)) continue
      ratio = bw[jk] / bw[ck]
      med = median(rounds[ck]) / median(rounds[jk])
      # Against the bindings alone in the same launch, round by round: both see the same phases.
      bk = "java," cop "_mpijava," ranks "," bytes; bind = ""
      if (op !~ /_mpijava$|_jcpp_default$/ && (bk in rounds)) {
        nj = split(rounds[jk], tj, " "); nb = split(rounds[bk], tb, " "); list = ""
        for (j = 1; j <= nj && j <= nb; j++) list = list " " tb[j] / tj[j]
        bind = sprintf("%.4f", median(list))
      }
      # The allocating allgather/alltoall against C doing the same work (allgather_alloc, ...).
      ak = "c," op "_alloc," ranks "," bytes; alloc = ""
      if (ak in rounds) alloc = sprintf("%.4f", median(rounds[ak]) / median(rounds[jk]))
      target = ""
      if (bytes >= 1048576) target = ratio >= 0.9 ? "ok (>=0.9)" : "MISSED (<0.9)"
      if (bytes == 8 && op ~ /^pingpong/ && latency_target == "abs") target = sec[jk] <= 5e-6 ? "ok (<=5us)" : "MISSED (>5us)"
      if (bytes == 8 && op ~ /^pingpong/ && latency_target == "c") target = sec[jk] <= 2 * sec[ck] ? "ok (<=2x C)" : "MISSED (>2x C)"
      if (op ~ /_mpijava$/) target = "(reference: raw Java bindings, no mn4j)"
      printf "%s,%s,%s,%s,%s,%s,%s,%.4f,%.4f,%s,%s\n", op, ranks, bytes, sec[ck], sec[jk], bw[ck], bw[jk], ratio, med, bind, alloc >> csv
      printf "%-16s %5s %9s %12.2f %12.2f %10.1f %10.1f %8.3f %8.3f %8s %8s  %s\n", op, ranks, human(bytes), sec[ck] * 1e6, sec[jk] * 1e6, bw[ck] / 1e6, bw[jk] / 1e6, ratio, med, (bind == "" ? "" : sprintf("%.3f", bind)), (alloc == "" ? "" : sprintf("%.3f", alloc)), target
    }
  }' "$raw"

echo
[ ${#quick[@]} -gt 0 ] && [ "$repeats" -gt 3 ] && repeats=3
echo "Time per op is the $stat of $repeats timed repeats (collectives: slowest rank), best of $rounds round(s)"
echo "(column median: ratio of the medians of the rounds instead;"
echo "column /bind.: median over rounds of the row against the bindings alone in the same launch, which"
echo "sees the same phases of the machine: what mn4j itself costs; column /C alloc: the allocating"
echo "allgather/alltoall against C doing their work, sizes first and then new memory, ratio of medians);"
echo "bandwidth = per-rank bytes / time."
echo "Java allgather/alltoall/allreduce/recv allocate their result tensors inside the op (part of the cost);"
echo "allgather_into/alltoall_into/allreduce_into/pingpong_into write into a preallocated tensor, as the C program does."
java -cp "$cp" io.mn4j.bench.CommBenchPlot --csv "$out/comm.csv" --png "$out/comm.png"
echo "Results: $out/comm.csv (joined), $raw (raw), plot: $out/comm.png, load log: $load"
echo "Load now: $(uptime)"
}

link=
if [ -z "$links" ]; then
  [ "$join_only" = 1 ] || measure "$results" 2 4
  join "$results"
  exit 0
fi
[ "$join_only" = 1 ] || trap '"$root/scripts/cluster" --name "$cluster_name" down >/dev/null' EXIT
for link in ${links//,/ }; do
  dir=$results/comm-cluster/$link
  if [ "$join_only" = 0 ]; then
    if [ "$link" = none ]; then up=(); else up=(--link "$link"); fi
    "$root/scripts/cluster" --name "$cluster_name" up --hosts 2 "${up[@]}"
    measure "$dir" 2
  fi
  echo "== link $link"
  join "$dir" c
done
