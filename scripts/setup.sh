#!/usr/bin/env bash
# mn4j set-up: installs Open MPI (Debian), builds Open MPI's mpi.jar from the matching Debian
# source package (Debian does not ship it), installs it into the local Maven repository, and
# installs the other system packages the project uses (METIS, Fashion-MNIST). Idempotent: every
# step checks whether it is already done. Say MN4J_SKIP_APT=1 to never call apt-get.
set -euo pipefail

say()  { echo "[mn4j-setup] $*" >&2; }
die()  { echo "[mn4j-setup] ERROR: $*" >&2; exit 1; }

MPI_GROUP=org.open-mpi
MPI_ARTIFACT=mpi
CACHE_DIR="${MN4J_CACHE:-$HOME/.cache/mn4j}"
APT_PACKAGES=(openmpi-bin libopenmpi-dev metis dataset-fashion-mnist)

need_root() {
  [ "$(id -u)" = 0 ] || die "$1 needs root (run as root, or install it yourself: $2)"
}

apt_updated=0
apt_install() {
  [ "${MN4J_SKIP_APT:-0}" = 1 ] && die "missing packages $* and MN4J_SKIP_APT=1"
  command -v apt-get >/dev/null || die "no apt-get: install $* with your system's package manager"
  need_root "installing $*" "apt-get install $*"
  if [ $apt_updated = 0 ]; then say "apt-get update"; apt-get update -qq; apt_updated=1; fi
  say "installing Debian packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. System packages ----------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v dpkg-query >/dev/null; then apt_install "${missing[@]}"; fi
else
  say "Debian packages present: ${APT_PACKAGES[*]}"
fi
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
M2_JAR="$HOME/.m2/repository/org/open-mpi/$MPI_ARTIFACT/$OMPI_VERSION/$MPI_ARTIFACT-$OMPI_VERSION.jar"
if [ -f "$M2_JAR" ]; then
  say "mpi.jar $OMPI_VERSION already in the local Maven repository"
else
  JAR=""
  # A build of Open MPI with --enable-mpi-java ships its own mpi.jar: prefer it.
  prefix=$(sed -n 's/^path:prefix:\(.*\)$/\1/p' <<<"$OMPI_INFO" | head -1)
  libdir=$(sed -n 's/^path:libdir:\(.*\)$/\1/p' <<<"$OMPI_INFO" | head -1)
  for cand in "$libdir/mpi.jar" "$prefix/lib/mpi.jar" "$prefix/share/java/mpi.jar"; do
    if [ -n "$cand" ] && [ -f "$cand" ]; then JAR="$cand"; say "using this Open MPI's own $cand"; break; fi
  done
  if [ -z "$JAR" ]; then
    command -v apt-get >/dev/null || die "no mpi.jar in this Open MPI and no apt-get to fetch its source"
    ls /usr/lib/x86_64-linux-gnu/libmpi_java.so* /usr/lib/*/libmpi_java.so* >/dev/null 2>&1 \
      || die "this Open MPI has no libmpi_java.so (Java bindings not built)"
    SRC="$CACHE_DIR/openmpi-src"
    mkdir -p "$SRC"
    if ! ls "$SRC"/openmpi_*.orig.tar.* >/dev/null 2>&1; then
      need_root "adding a deb-src entry" "apt-get source --download-only openmpi"
      if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/ && ! grep -qs "^deb-src" /etc/apt/sources.list; then
        say "adding deb-src for bookworm main (/etc/apt/sources.list.d/mn4j-src.sources)"
        cat > /etc/apt/sources.list.d/mn4j-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt_updated=0
      fi
      [ $apt_updated = 1 ] || { say "apt-get update"; apt-get update -qq; apt_updated=1; }
      pkgver=$(dpkg-query -W -f='${Version}' libopenmpi3 2>/dev/null || true)
      say "downloading Debian source package openmpi${pkgver:+=$pkgver}"
      ( cd "$SRC" && apt-get source -qq --download-only "openmpi${pkgver:+=$pkgver}" >/dev/null 2>&1 ) \
        || ( cd "$SRC" && apt-get source -qq --download-only openmpi >/dev/null ) \
        || die "apt-get source openmpi failed"
    fi
    tarball=$(ls "$SRC"/openmpi_*.orig.tar.* | head -1)
    BUILD="$CACHE_DIR/mpi-java-build"
    rm -rf "$BUILD"; mkdir -p "$BUILD/src" "$BUILD/classes"
    say "extracting the Java bindings from $(basename "$tarball")"
    tar -xf "$tarball" -C "$BUILD/src" --wildcards '*/ompi/mpi/java/java/*.java'
    srcver=$(basename "$(ls -d "$BUILD"/src/*/)" | sed 's/^openmpi-//')
    [ "$srcver" = "$OMPI_VERSION" ] || die "source package is Open MPI $srcver but the installed one is $OMPI_VERSION"
    javac -nowarn -encoding UTF-8 -d "$BUILD/classes" "$BUILD"/src/*/ompi/mpi/java/java/*.java 2>"$BUILD/javac.log" \
      || { cat "$BUILD/javac.log" >&2; die "javac of the Open MPI Java bindings failed"; }
    JAR="$BUILD/mpi.jar"
    jar cf "$JAR" -C "$BUILD/classes" .
    say "built $JAR ($(stat -c %s "$JAR") bytes)"
  fi
  command -v mvn >/dev/null || die "no mvn on PATH"
  mvn -q -B install:install-file -Dfile="$JAR" -DgroupId=$MPI_GROUP -DartifactId=$MPI_ARTIFACT \
      -Dversion="$OMPI_VERSION" -Dpackaging=jar >/dev/null || die "mvn install:install-file of mpi.jar failed"
  say "installed $MPI_GROUP:$MPI_ARTIFACT:$OMPI_VERSION into the local Maven repository"
fi
echo "$OMPI_VERSION"
