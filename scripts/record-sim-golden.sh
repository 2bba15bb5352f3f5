#!/usr/bin/env bash
# Records the reports the simulator gives for the scenarios of ibqos/tests/sim_golden.rs, as
# ibqos/tests/data/sim-golden/<scenario>.json. Run it only to record what an engine does
# before a change to the engine, from that commit (say which in the commit message): the test
# then holds every later engine to the same bytes.
#
#   scripts/record-sim-golden.sh [path/to/ibqos]
set -euo pipefail
cd "$(dirname "$0")/.."
ibqos=${1:-target/debug/ibqos}
data=ibqos/tests/data/sim-golden
# name | net file | config flag | config | traffic | seed  (the same table as the test's)
while IFS='|' read -r name net flag config traffic seed; do
    "$ibqos" sim --topology "$net" "$flag" "$config" --traffic "$traffic" --seed "$seed" \
        --json >"$data/$name.json"
    echo "recorded $data/$name.json"
done <"$data/scenarios.txt"
