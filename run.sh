#!/usr/bin/env bash
# The main job: set up (Open MPI, mpi.jar, data), build, and train the model-parallel MLP on
# Fashion-MNIST across MN4J_NP ranks (default 2). Arguments go to io.mn4j.examples.Train.
set -euo pipefail
cd "$(dirname "$0")"
ompi=$(scripts/setup.sh)
echo "[mn4j] building (mvn package)" >&2
mvn -B -q -ntp -Dopenmpi.version="$ompi" package -DskipTests
exec scripts/mn4j-run -np "${MN4J_NP:-2}" io.mn4j.examples.Train "$@"
