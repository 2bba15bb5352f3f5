#!/usr/bin/env bash
# Time to SUBNET UP and SMPs sent: `ibqos sm --once` against `opensm -o`, each on a fresh ibsim,
# several rounds, medians. Run by hand (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-subnet-up.sh [NETFILE] [ROUNDS]      QOS=TRUE to turn QoS on for both SMs
#
# Needs ibsim-utils, opensm and python3. Every process started here is ended by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
net=$(realpath "${1:-fabric/data/fat-tree-648.net}")
rounds=${2:-5}
qos=${QOS:-FALSE}
socket_prefix=bench
. scripts/lib/ibsim.sh
require_tools ibsim opensm python3

cargo build --release --quiet -p ibqos
ibqos=$PWD/target/release/ibqos
work=$(mktemp -d)
# The SMs attach at the first CA of the net file.
node=$(awk '/^(Hca|Ca)[ \t]/ { gsub(/"/, "", $3); print $3; exit }' "$net")

trap 'stop_ibsim 2>/dev/null || true' EXIT

# OpenSM's configuration: its own defaults with every path inside $work.
opensm -c "$work/default.conf" >/dev/null 2>&1 || true
sed -e "s|^log_file .*|log_file $work/opensm.log|" \
    -e "s|^dump_files_dir .*|dump_files_dir $work/|" \
    -e "s|^partition_config_file .*|partition_config_file $work/partitions.conf|" \
    -e "s|^qos_policy_file .*|qos_policy_file $work/qos-policy.conf|" \
    -e "s|^qos .*|qos $qos|" "$work/default.conf" >"$work/osm.conf"
echo 'Default=0x7fff, ipoib : ALL=full;' >"$work/partitions.conf"
printf 'qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n' \
    >"$work/qos-policy.conf"

run_opensm() { # $1: round, $2: extra flags
    rm -f "$work/opensm.log"
    local t0 t1
    t0=$(date +%s%N)
    OSM_CACHE_DIR="$work/osm-cache-$1/" OSM_TMP_DIR="$work/" SIM_HOST="$node" LD_PRELOAD="$shim" \
        opensm -o -F "$work/osm.conf" $2 >"$work/opensm-$1.stdout" 2>&1
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" >"$work/opensm-$1.wall_us"
    cp "$work/opensm.log" "$work/opensm-$1.log"
}

for r in $(seq "$rounds"); do
    start_ibsim "ibqos-$r"
    t0=$(date +%s%N)
    "$ibqos" sm --once --json --fabric "ibsim:$IBSIM_SOCKNAME@$node" --cache-dir "$work/ibqos-cache-$r" \
        -F "$work/osm.conf" >"$work/ibqos-$r.json" 2>"$work/ibqos-$r.log"
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" >"$work/ibqos-$r.wall_us"
    stop_ibsim
    start_ibsim "opensm-$r"
    run_opensm "$r" ""
    stop_ibsim
done
# One more OpenSM run logging every MAD (FRAMES), only to count the SMPs it sends: the logging
# slows it down, so it is not timed.
start_ibsim count
run_opensm count "-D 0x21"
stop_ibsim

python3 - "$work" "$rounds" "$net" "$qos" <<'PY'
import json, re, statistics, sys
work, rounds, net, qos = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def stamp(line):
    """Microseconds of the day from an OpenSM log line: `Nov 22 11:49:39 732221 [...`."""
    _, _, clock, micros = line.split()[:4]
    hours, minutes, seconds = (int(x) for x in clock.split(":"))
    return ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + int(micros)

ibqos_up, ibqos_wall, ibqos_smps, osm_up, osm_wall = [], [], [], [], []
for r in range(1, rounds + 1):
    summary = json.load(open(f"{work}/ibqos-{r}.json"))
    assert summary["subnet_up"], f"ibqos round {r}: {summary['result']}"
    ibqos_up.append(summary["time_to_subnet_up_ms"])
    ibqos_smps.append(summary["smps_sent"])
    ibqos_wall.append(int(open(f"{work}/ibqos-{r}.wall_us").read()) / 1000)
    log = open(f"{work}/opensm-{r}.log").read().splitlines()
    start = next(stamp(l) for l in log if "Entering DISCOVERING state" in l)
    up = next(stamp(l) for l in log if "SUBNET UP" in l)
    osm_up.append((up - start) / 1000)
    osm_wall.append(int(open(f"{work}/opensm-{r}.wall_us").read()) / 1000)

sent = {}
method = None
for line in open(f"{work}/opensm-count.log"):
    m = re.search(r"method\.+0x([0-9a-f]+) \((\w+)\)", line)
    if m:
        method = m.group(2)
    m = re.search(r"attr_id\.+0x([0-9a-f]+) \((\w+)\)", line)
    if m and method in ("SubnGet", "SubnSet"):
        key = (m.group(2), method)
        sent[key] = sent.get(key, 0) + 1
        method = None
osm_smps = sum(sent.values())
ours = json.load(open(f"{work}/ibqos-1.json"))

med = statistics.median
print(f"net file: {net}   qos: {qos}   rounds: {rounds}")
print(f"{'':32}{'ibqos sm --once':>18}{'opensm -o':>14}{'ratio':>8}")
rows = [("sweep to SUBNET UP, median ms", med(ibqos_up), med(osm_up)),
        ("process wall time, median ms", med(ibqos_wall), med(osm_wall)),
        ("SMPs sent", med(ibqos_smps), osm_smps)]
for name, a, b in rows:
    print(f"{name:32}{a:18.1f}{b:14.1f}{a / b:8.2f}")
print("ibqos rounds (ms):", ", ".join(f"{x:.1f}" for x in ibqos_up))
print("opensm rounds (ms):", ", ".join(f"{x:.1f}" for x in osm_up))
print("SMPs by attribute and method:")
for s in ours["smps"]:
    print(f"  ibqos  {s['attribute']:24} {s['method']:8} {s['count']}")
for (attr, meth), n in sorted(sent.items()):
    print(f"  opensm {attr:24} {meth:8} {n}")
PY
