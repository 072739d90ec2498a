# Sourced (not run) by the benchmark scripts in bench/: the build and the class path they share.
# Expects $root (the checkout) and $build (1: run Maven first).

# Prints the comment block at the top of script $1: its --help.
bench_usage() {
  sed -n '2,/^set -euo/p' "$1" | grep '^#' | sed 's/^# \{0,1\}//'
}

# Builds the benchmarks and everything they use (scripts/maven runs the set-up first).
bench_build() {
  if [ "${build:-1}" = 1 ]; then
    echo "== set-up and build (scripts/maven -q package -DskipTests -pl bench -am)"
    "$root/scripts/maven" -q package -DskipTests -pl bench -am
  fi
}

# Prints the benchmarks' class path: mn4j's modules from this checkout's target/classes first
# (current even after a plain compile), then the jars `mvn package` copies to bench/target/lib.
# Dies, naming the missing piece, when the build is not there ($1: the class that must be built).
bench_classpath() {
  local main=$1 cp="" m
  for tool in mpirun java; do
    command -v "$tool" >/dev/null || { echo "$(basename "$0"): $tool not found (run scripts/setup.sh)" >&2; exit 1; }
  done
  [ -f "$root/bench/target/classes/${main//.//}.class" ] && [ -d "$root/bench/target/lib" ] || {
    echo "$(basename "$0"): bench/target has no $main or no lib/; run without --no-build" >&2; exit 1; }
  for m in communicator functions iterators gnn examples bench; do cp+="$root/$m/target/classes:"; done
  echo "${cp}$root/bench/target/lib/*"
}
