#!/usr/bin/env bash
# DFSSSP routing time: ibqos's engine against OpenSM's dfsssp, side by side in one run. Run by
# hand (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-routing.sh [NETFILE] [ROUNDS]
#
# Without NETFILE: a 6x6 torus with 28 hosts per switch (1,044 nodes), where DFSSSP must
# break credit loops and still fits the 8 VLs of ibsim's ports (an 8x8 torus with 16 hosts
# needs 9: OpenSM and ibqos both refuse it, ERR AD25).
#
# What is timed, the median of ROUNDS each:
# - ibqos: the engine's routing call in-process (fabric/benches/routing.rs), on 8 data VLs;
#   the net file is read and LIDs given before the clock starts.
# - OpenSM: `opensm -o` on a fresh ibsim, from its log's "building routing with 'dfsssp'" to
#   the last line DFSSSP logs (the paths per VL after balancing): the graph, the Dijkstras and
#   the deadlock removal, before the LFTs are sent. Discovery, LIDs and the LFT pushes are out.
#
# Needs ibsim-utils, opensm and python3. Every process started here is ended by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
rounds=${2:-3}
socket_prefix=benchr
. scripts/lib/ibsim.sh
require_tools ibsim opensm python3

cargo build --release --quiet -p ibqos
ibqos=$PWD/target/release/ibqos
work=$(mktemp -d)
if [ -n "${1:-}" ]; then
    net=$(realpath "$1")
else
    net=$work/torus-6x6.net
    "$ibqos" fabric gen torus --x 6 --y 6 --hosts 28 -o "$net"
fi
nodes=$(grep -cE '^(Switch|Hca|Ca)[[:space:]]' "$net")
# OpenSM attaches at the first CA of the net file.
node=$(awk '/^(Hca|Ca)[ \t]/ { gsub(/"/, "", $3); print $3; exit }' "$net")

echo "fabric: $net ($nodes nodes), $rounds rounds, load: $(uptime | sed 's/.*load/load/')"
echo "ibqos (in-process routing call, ms):"
cargo bench --quiet -p ibqos-fabric --bench routing -- "$net" "$rounds" | sed 's/^/  /'

trap 'stop_ibsim 2>/dev/null || true' EXIT

# OpenSM's own defaults with every path inside $work, DFSSSP, and VERBOSE for the start line.
opensm -c "$work/default.conf" >/dev/null 2>&1 || true
sed -e "s|^log_file .*|log_file $work/opensm.log|" \
    -e "s|^dump_files_dir .*|dump_files_dir $work/|" \
    -e "s|^partition_config_file .*|partition_config_file $work/partitions.conf|" \
    -e "s|^routing_engine .*|routing_engine dfsssp|" \
    -e "s|^log_flags .*|log_flags 0x07|" "$work/default.conf" >"$work/osm.conf"
echo 'Default=0x7fff, ipoib : ALL=full;' >"$work/partitions.conf"

# Microseconds from the first line matching $2 to the last line matching $3 of log $1
# (OpenSM stamps each line "Mon DD HH:MM:SS uuuuuu").
span_us() {
    python3 - "$@" <<'PY'
import re, sys
stamp = re.compile(r"^\w{3} +\d+ (\d\d):(\d\d):(\d\d) (\d{6}) ")
def us(line):
    h, m, s, u = map(int, stamp.match(line).groups())
    return ((h * 60 + m) * 60 + s) * 1_000_000 + u
lines = open(sys.argv[1], errors="replace").read().splitlines()
first = next(us(l) for l in lines if sys.argv[2] in l)
last = [us(l) for l in lines if re.search(sys.argv[3], l)][-1]
print(last - first)
PY
}

echo "OpenSM (dfsssp in its log, ms):"
for r in $(seq "$rounds"); do
    start_ibsim "$r"
    rm -f "$work/opensm.log"
    OSM_CACHE_DIR="$work/osm-cache-$r/" OSM_TMP_DIR="$work/" SIM_HOST="$node" LD_PRELOAD="$shim" \
        timeout 1800 opensm -o -F "$work/osm.conf" >"$work/opensm-$r.stdout" 2>&1
    stop_ibsim
    cp "$work/opensm.log" "$work/opensm-$r.log"
    grep -q "dfsssp tables configured\|Virtual Lanes needed" "$work/opensm-$r.log" ||
        { echo "bench: OpenSM did not route with dfsssp (see $work/opensm-$r.log)" >&2; exit 1; }
    span_us "$work/opensm-$r.log" "building routing with 'dfsssp'" \
        "dfsssp_remove_deadlocks: +[0-9]+\. lane: " >"$work/opensm-$r.us"
done
python3 - "$work" "$rounds" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
times = [int(open(f"{work}/opensm-{r}.us").read()) / 1000 for r in range(1, rounds + 1)]
print(f"  dfsssp {statistics.median(times):.1f}")
PY
grep -h "Virtual Lanes" "$work/opensm-1.log" | sed 's/^.*-> /  OpenSM: /'
echo "logs: $work"
