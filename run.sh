#!/usr/bin/env bash
# The main job: set up (Open MPI, mpi.jar, data), build, and train the model-parallel MLP on
# Fashion-MNIST across MN4J_NP ranks (default 2). Arguments go to io.mn4j.examples.Train.
set -euo pipefail
cd "$(dirname "$0")"
echo "[mn4j] set-up and build (scripts/maven package)" >&2
scripts/maven -q package -DskipTests
exec scripts/mn4j-run -np "${MN4J_NP:-2}" io.mn4j.examples.Train "$@"
