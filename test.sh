#!/usr/bin/env bash
# The whole test suite: set up (Open MPI, mpi.jar, data), build, run unit tests and the
# multi-rank tests (real mpirun jobs with 1, 2, 3 and 4 ranks). Installs the library into the local
# Maven repository on the way, as a user would, so that a test can build a project against it.
set -euo pipefail
cd "$(dirname "$0")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
scripts/maven install "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "---- failed tests ----"
    scripts/failed-tests || true
fi
exit "$status"
