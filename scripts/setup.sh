#!/usr/bin/env bash
# mn4j set-up: checks for Java 17+ and Maven, installs Open MPI (Debian), builds Open MPI's
# mpi.jar from the matching Debian source package (Debian does not ship it), installs it into the
# local Maven repository, and installs the other system packages the project uses (METIS,
# Fashion-MNIST, iproute2, util-linux and mount for the simulated cluster of scripts/cluster, and
# python3 with numpy for the test that reads an exported model). Idempotent: every step checks whether it is already done. Prints the Open MPI
# version on stdout (scripts/maven passes it to Maven), everything else on stderr.
# Say MN4J_SKIP_APT=1 to never call apt-get; MN4J_CACHE moves the source-package cache
# (default ~/.cache/mn4j).
set -euo pipefail

say()  { echo "[mn4j-setup] $*" >&2; }
die()  { echo "[mn4j-setup] ERROR: $*" >&2; exit 1; }

MPI_GROUP=org.open-mpi
MPI_ARTIFACT=mpi
CACHE_DIR="${MN4J_CACHE:-$HOME/.cache/mn4j}"
APT_PACKAGES=(openmpi-bin libopenmpi-dev metis dataset-fashion-mnist iproute2 util-linux mount)
JAVA_MIN=17

need_root() {
  [ "$(id -u)" = 0 ] || die "$1 needs root (run as root, or do it yourself: $2)"
}

# Dies unless apt-get may be called, to do $1 (or do it yourself: $2).
need_apt() {
  [ "${MN4J_SKIP_APT:-0}" != 1 ] || die "$1 needs apt-get and MN4J_SKIP_APT=1 (do it yourself: $2)"
  command -v apt-get >/dev/null || die "$1 needs apt-get, and there is none (do it yourself: $2)"
}

apt_updated=0
apt_update() {
  [ $apt_updated = 1 ] && return
  need_root "apt-get update" "apt-get update"
  say "apt-get update"
  apt-get update -qq >&2
  apt_updated=1
}

apt_install() {
  need_apt "installing $*" "apt-get install $*"
  need_root "installing $*" "apt-get install $*"
  apt_update
  say "installing Debian packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The major version of java or javac ($1): "17.0.15" -> 17, Java 8's "1.8.0_402" -> 8. Only the
# version line counts: JDK_JAVA_OPTIONS and VM warnings add lines with numbers of their own.
java_major() {
  local v
  v=$("$1" -version 2>&1 | grep -oE '(version "|^javac )[0-9]+(\.[0-9]+)*' | grep -oE '[0-9]+(\.[0-9]+)*' | head -1)
  v=${v#1.}
  echo "${v%%.*}"
}

# 1. System packages ----------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Java and Maven by command, not by package: a JDK or a Maven from elsewhere will do.
{ command -v java >/dev/null && command -v javac >/dev/null; } || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
# numpy by import, not by package: a python3 with numpy from elsewhere will do.
python3 -c 'import numpy' >/dev/null 2>&1 || missing+=(python3 python3-numpy)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v dpkg-query >/dev/null; then apt_install "${missing[@]}"; fi
else
  say "Debian packages present: ${APT_PACKAGES[*]}"
fi
# The scripts run java and javac from PATH; Maven runs on JAVA_HOME's when it is set.
for tool in java javac ${JAVA_HOME:+"$JAVA_HOME/bin/javac"}; do
  command -v "$tool" >/dev/null || die "no $tool: mn4j needs a JDK $JAVA_MIN or later (Debian: openjdk-17-jdk-headless)"
  v=$(java_major "$tool")
  [ -n "$v" ] && [ "$v" -ge $JAVA_MIN ] \
    || die "$(command -v "$tool") is Java ${v:-of unknown version}; mn4j needs $JAVA_MIN or later: put a JDK $JAVA_MIN+ first on PATH (and in JAVA_HOME if set; Debian: openjdk-17-jdk-headless)"
done
command -v mvn >/dev/null || die "no mvn on PATH (Debian: maven)"
say "Java $(java_major java) ($(command -v java)), Maven $(command -v mvn)"
command -v mpirun >/dev/null || die "no mpirun on PATH after installing Open MPI"
command -v mpicc  >/dev/null || die "no mpicc on PATH (package libopenmpi-dev)"

OMPI_INFO=$(ompi_info --parsable --all 2>/dev/null || true)
OMPI_VERSION=$(sed -n 's/^ompi:version:full:\(.*\)$/\1/p' <<<"$OMPI_INFO" | head -1)
[ -n "$OMPI_VERSION" ] || die "cannot read the Open MPI version from ompi_info"
case "$OMPI_VERSION" in
  4.*|5.*) ;;
  *) die "Open MPI $OMPI_VERSION has no Java bindings (they exist in 4.x and 5.x, removed in 6.0)";;
esac
grep -q "^bindings:java:yes" <<<"$OMPI_INFO" || die "Open MPI $OMPI_VERSION was built without Java bindings (ompi_info: bindings:java is not yes)"
say "Open MPI $OMPI_VERSION"

# 2. mpi.jar ------------------------------------------------------------------------------------
# Maven's local repository as mvn will use it, without running Maven (help:evaluate takes seconds
# and may download): the last -Dmaven.repo.local= in MAVEN_OPTS, then MAVEN_ARGS (read by Maven
# 3.9+ only: when its mvn script mentions it) or .mvn/maven.config; else <localRepository> of the
# user's settings.xml, then of the installation's; else ~/.m2/repository. Maven's "~" is Java's
# user.home: the passwd entry's home (or -Duser.home), not $HOME. Not seen: -s or -gs (other
# settings files) and -D given to scripts/maven on its command line.
maven_repo_local() {
  local mvn_home args home repo settings i
  mvn_home=$(dirname "$(dirname "$(readlink -f "$(command -v mvn)")")")
  args=${MAVEN_OPTS:-}
  if grep -qs MAVEN_ARGS "$mvn_home/bin/mvn"; then args="$args ${MAVEN_ARGS:-}"; fi
  if [ -f .mvn/maven.config ]; then args="$args $(tr '\n' ' ' < .mvn/maven.config)"; fi
  # The last -D$1= in args, unquoted.
  define() {
    grep -oE -- "-D$1=(\"[^\"]*\"|'[^']*'|[^ ]+)" <<<"$args" | tail -1 | sed -E "s/^-D[^=]*=//; s/^[\"'](.*)[\"']\$/\1/" || true
  }
  home=$(define 'user\.home')
  home=${home:-$(getent passwd "$(id -u)" | cut -d: -f6 || true)}
  home=${home:-$HOME}
  repo=$(define 'maven\.repo\.local')
  if [ -z "$repo" ]; then
    for settings in "$home/.m2/settings.xml" "$mvn_home/conf/settings.xml"; do
      [ -f "$settings" ] || continue
      # Comments out first: the stock settings.xml has a commented-out example.
      repo=$(perl -0777 -ne 's/<!--.*?-->//gs; print $1 if m{<localRepository>\s*(.*?)\s*</localRepository>}s' "$settings")
      [ -z "$repo" ] || break
    done
  fi
  repo=${repo:-$home/.m2/repository}
  # The expressions settings.xml allows there.
  repo=${repo//\$\{user.home\}/$home}
  for i in 1 2 3; do
    [[ $repo =~ \$\{env\.([A-Za-z_][A-Za-z0-9_]*)\} ]] || break
    repo=${repo//"${BASH_REMATCH[0]}"/${!BASH_REMATCH[1]:-}}
  done
  echo "$repo"
}
M2_REPO=$(maven_repo_local)
M2_JAR="$M2_REPO/org/open-mpi/$MPI_ARTIFACT/$OMPI_VERSION/$MPI_ARTIFACT-$OMPI_VERSION.jar"
if [ -f "$M2_JAR" ]; then
  say "mpi.jar $OMPI_VERSION already in the local Maven repository ($M2_REPO)"
else
  JAR=""
  # A build of Open MPI with --enable-mpi-java ships its own mpi.jar: prefer it.
  prefix=$(sed -n 's/^path:prefix:\(.*\)$/\1/p' <<<"$OMPI_INFO" | head -1)
  libdir=$(sed -n 's/^path:libdir:\(.*\)$/\1/p' <<<"$OMPI_INFO" | head -1)
  for cand in "$libdir/mpi.jar" "$prefix/lib/mpi.jar" "$prefix/share/java/mpi.jar"; do
    if [ -n "$cand" ] && [ -f "$cand" ]; then JAR="$cand"; say "using this Open MPI's own $cand"; break; fi
  done
  if [ -z "$JAR" ]; then
    ls /usr/lib/x86_64-linux-gnu/libmpi_java.so* /usr/lib/*/libmpi_java.so* >/dev/null 2>&1 \
      || die "this Open MPI has no libmpi_java.so (Java bindings not built)"
    SRC="$CACHE_DIR/openmpi-src"
    mkdir -p "$SRC"
    # The Debian source package of the installed binaries: its version, not theirs (a binNMU such
    # as 4.1.4-3+b1 is built from source 4.1.4-3), and its upstream tarball openmpi_4.1.4.orig.*.
    srcpkgver=$(dpkg-query -W -f='${source:Version}' libopenmpi-dev 2>/dev/null || true)
    upstream=${srcpkgver#*:}
    upstream=${upstream%-*}
    upstream=${upstream:-$OMPI_VERSION}
    tarball=$(ls "$SRC"/openmpi_"$upstream".orig.tar.* 2>/dev/null | head -1 || true)
    if [ -n "$tarball" ]; then
      say "Open MPI $upstream source already in $SRC"
    else
      need_apt "downloading the Debian source package openmpi${srcpkgver:+ $srcpkgver}" \
        "put openmpi_$upstream.orig.tar.* into $SRC, or install mpi.jar $OMPI_VERSION as $MPI_GROUP:$MPI_ARTIFACT:$OMPI_VERSION"
      if ! grep -qsE '^(Types:.*deb-src|deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
        need_root "adding a deb-src entry" "add deb-src lines to /etc/apt/sources.list.d/ and run apt-get update"
        say "adding deb-src for bookworm main (/etc/apt/sources.list.d/mn4j-src.sources)"
        cat > /etc/apt/sources.list.d/mn4j-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt_updated=0
        apt_update
      fi
      # apt-get source needs no root, but it needs the source indices: update them (as root) only
      # when it fails.
      fetch() { ( cd "$SRC" && apt-get source -qq --download-only "$1" >&2 ); }
      fetch_updating() { fetch "$1" || { [ "$(id -u)" = 0 ] && [ $apt_updated = 0 ] && apt_update && fetch "$1"; }; }
      say "downloading Debian source package openmpi${srcpkgver:+ $srcpkgver} into $SRC"
      fetch_updating "openmpi${srcpkgver:+=$srcpkgver}" \
        || { [ -n "$srcpkgver" ] && say "no openmpi $srcpkgver in the archive: trying its current openmpi" && fetch_updating openmpi; } \
        || die "apt-get source openmpi failed (as root, apt-get update may help)"
      tarball=$(ls "$SRC"/openmpi_"$upstream".orig.tar.* 2>/dev/null | head -1 || true)
      [ -n "$tarball" ] || die "the Debian source package downloaded into $SRC is not Open MPI $upstream ($(cd "$SRC" && ls -- *.dsc 2>/dev/null | tr '\n' ' ')); clear the cache with: rm -rf $SRC"
    fi
    BUILD="$CACHE_DIR/mpi-java-build"
    rm -rf "$BUILD"; mkdir -p "$BUILD/src" "$BUILD/classes"
    say "extracting the Java bindings from $(basename "$tarball")"
    tar -xf "$tarball" -C "$BUILD/src" --wildcards '*/ompi/mpi/java/java/*.java'
    srcver=$(basename "$(ls -d "$BUILD"/src/*/)" | sed 's/^openmpi-//')
    [ "$srcver" = "$OMPI_VERSION" ] \
      || die "$tarball holds Open MPI $srcver but the installed one is $OMPI_VERSION; clear the cache with: rm -rf $SRC"
    javac -nowarn -encoding UTF-8 -d "$BUILD/classes" "$BUILD"/src/*/ompi/mpi/java/java/*.java 2>"$BUILD/javac.log" \
      || { cat "$BUILD/javac.log" >&2; die "javac of the Open MPI Java bindings failed"; }
    JAR="$BUILD/mpi.jar"
    jar cf "$JAR" -C "$BUILD/classes" .
    say "built $JAR ($(stat -c %s "$JAR") bytes)"
  fi
  # Maven's output to stderr: its [ERROR] lines say why, and stdout is only the version.
  mvn -q -B install:install-file -Dfile="$JAR" -DgroupId=$MPI_GROUP -DartifactId=$MPI_ARTIFACT \
      -Dversion="$OMPI_VERSION" -Dpackaging=jar >&2 || die "mvn install:install-file of mpi.jar failed (its output is above)"
  [ -f "$M2_JAR" ] || die "mvn install:install-file put mpi.jar elsewhere than $M2_REPO, where this script looks for it (the local repository set by -s, -gs or a command-line -D?)"
  say "installed $MPI_GROUP:$MPI_ARTIFACT:$OMPI_VERSION into the local Maven repository ($M2_REPO)"
fi
echo "$OMPI_VERSION"
