#!/usr/bin/env bash
# SA queries per second: OpenSM's own stress flow (`osmtest -f f`, after `-f c` writes the
# inventory it reads) against `ibqos sm` and against `opensm`, each on a fresh ibsim, several
# rounds alternating. Run by hand (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-sa-stress.sh [NETFILE] [ROUNDS]
#
# Both SMs run as daemons attached at the first CA of the net file, osmtest at the second. Needs
# ibsim-utils, opensm (osmtest) and python3. Every process started here is ended by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
net=$(realpath "${1:-fabric/data/two-switch.net}")
rounds=${2:-3}
socket_prefix=sabench
. scripts/lib/ibsim.sh
require_tools ibsim opensm osmtest python3

cargo build --release --quiet -p ibqos
ibqos=$PWD/target/release/ibqos
work=$(mktemp -d)
read -r sm_node client _ <<<"$(awk '/^(Hca|Ca)[ \t]/ { gsub(/"/, "", $3); printf "%s ", $3 }' "$net")"

sm_pid=
stop() {
    [ -n "$sm_pid" ] && { kill "$sm_pid"; wait "$sm_pid" 2>/dev/null || true; }
    stop_ibsim
    sm_pid=
}
trap 'stop 2>/dev/null || true' EXIT

printf 'partition_config_file %s/partitions.conf\nqos_policy_file %s/qos-policy.conf\n' \
    "$work" "$work" >"$work/osm.conf"
echo 'Default=0x7fff : ALL=full;' >"$work/partitions.conf"
printf 'qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n' \
    >"$work/qos-policy.conf"

stress() { # $1: run name. Waits for the SM's first sweep, then times osmtest's stress flow.
    sleep 3
    (cd "$work" && SIM_HOST="$client" LD_PRELOAD="$shim" osmtest -f c -i "$1.dat" \
        >"$work/$1-c.out" 2>&1 &&
        SIM_HOST="$client" LD_PRELOAD="$shim" osmtest -f f -i "$1.dat" >"$work/$1-f.out" 2>&1)
}

for r in $(seq "$rounds"); do
    start_ibsim "ibqos-$r"
    OSM_CACHE_DIR="$work/ibqos-cache-$r" "$ibqos" sm -F "$work/osm.conf" \
        --fabric "ibsim:$IBSIM_SOCKNAME@$sm_node" >"$work/ibqos-$r.log" 2>&1 &
    sm_pid=$!
    stress "ibqos-$r"
    stop
    start_ibsim "opensm-$r"
    OSM_CACHE_DIR="$work/osm-cache-$r/" OSM_TMP_DIR="$work/" SIM_HOST="$sm_node" LD_PRELOAD="$shim" \
        opensm -F "$work/osm.conf" -f "$work/opensm-$r.log" >"$work/opensm-$r.stdout" 2>&1 &
    sm_pid=$!
    stress "opensm-$r"
    stop
done

python3 - "$work" "$rounds" "$net" <<'PY'
import re, statistics, sys
work, rounds, net = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def rate(run):
    """Queries per second of the last (100,000-query) line of osmtest's stress flow."""
    text = open(f"{work}/{run}-f.out").read()
    assert 'TEST "Stress SA" PASS' in text, f"{run}: the stress flow did not pass"
    count, secs, usecs = re.findall(r"Querying (\d+) \w+ queries .* took (\d+):(\d+)", text)[-1]
    return int(count) / (int(secs) + int(usecs) / 1e6)

ours = [rate(f"ibqos-{r}") for r in range(1, rounds + 1)]
theirs = [rate(f"opensm-{r}") for r in range(1, rounds + 1)]
med = statistics.median
print(f"net file: {net}   rounds: {rounds}   (osmtest -f f, SA queries per second)")
print("ibqos  rounds:", ", ".join(f"{x:,.0f}" for x in ours), f"  median {med(ours):,.0f}")
print("opensm rounds:", ", ".join(f"{x:,.0f}" for x in theirs), f"  median {med(theirs):,.0f}")
print(f"ratio ibqos / opensm (medians): {med(ours) / med(theirs):.2f}")
PY
