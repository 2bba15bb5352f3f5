#!/usr/bin/env bash
# `ibqos fabric serve` on a generated fat tree of about 10,000 nodes: time to load and serve it,
# then `ibqos sm --once -F` and `opensm -o -F` with the same opensm.conf (defaults; qos TRUE; qos
# TRUE with use_optimized_slvl TRUE on switches that advertise it), each on a fresh served fabric
# with the served fabric's default latency model (20 us a switch SMA, 2 us a CA's, 100 ns a
# link; SERVE_ARGS adds `ibqos fabric serve` flags, e.g. "--switch-sma-ns 0 --ca-sma-ns 0
# --wire-ns 0" for ibsim's instant answers): MADs the fabric received, time to SUBNET UP and
# each SM's peak memory (maximum resident set). ROWS picks rows by name (default: all of
# defaults qos optimized-slvl ftree-qos). Run by hand (not a test).
#
#   scripts/bench-fabric-serve.sh [LEAVES SPINES HOSTS RADIX]     default: 128 48 80 128
#                                                                   (10,416 nodes, 10,416 LIDs)
#
# Needs opensm, ibsim-utils (libumad2sim.so) and python3. Every process started here is ended
# by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
leaves=${1:-128} spines=${2:-48} hosts=${3:-80} radix=${4:-128}
. scripts/lib/served.sh
served_fat_tree
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; true' EXIT

printf 'qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\nend-qos-levels\n' \
    >"$work/qos-policy.conf"
echo 'Default=0x7fff, ipoib : ALL=full;' >"$work/partitions.conf"
osm_conf() { # $1: name, $2: extra options
    printf 'log_file %s/%s.log\ndump_files_dir %s/\npartition_config_file %s/partitions.conf\nqos_policy_file %s/qos-policy.conf\n%b' \
        "$work" "$1" "$work" "$work" "$work" "$2" >"$work/$1.conf"
}

run_opensm() { # $1: name, $2: extra options
    osm_conf "$1" "$2"
    start_serve "$1"
    local t0 t1
    t0=$(date +%s%N)
    (cd "$work" && OSM_CACHE_DIR="$work/cache-$1/" OSM_TMP_DIR="$work/" SIM_HOST="$node" \
        LD_PRELOAD="$shim" /usr/bin/time -f %M -o "$work/$1.rss" \
        opensm -o -F "$work/$1.conf" >"$work/$1.stdout" 2>&1)
    t1=$(date +%s%N)
    echo "opensm -o ($1): exit after $(( (t1 - t0) / 1000000 )) ms;" \
        "peak RSS $(( $(cat "$work/$1.rss") / 1024 )) MiB;" \
        "SUBNET UP after $(python3 - "$work/$1.log" <<'PY'
import sys
def stamp(line):
    _, _, clock, micros = line.split()[:4]
    h, m, s = (int(x) for x in clock.split(":"))
    return ((h * 60 + m) * 60 + s) * 1_000_000 + int(micros)
log = open(sys.argv[1]).read().splitlines()
start = next(stamp(l) for l in log if "Entering DISCOVERING state" in l)
up = next((stamp(l) for l in log if "SUBNET UP" in l), None)
print("never" if up is None else f"{(up - start) / 1000:.0f} ms")
PY
)"
    stop_serve "$1"
}

run_ibqos() { # $1: name, $2: opensm.conf options for ibqos sm -F
    osm_conf "$1" "$2"
    start_serve "$1"
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f %M -o "$work/$1.rss" \
        "$ibqos" sm --once --json -F "$work/$1.conf" --fabric "ibsim:$IBSIM_SOCKNAME@$node" \
        --cache-dir "$work/cache-$1" >"$work/$1.json" 2>"$work/$1.stderr"
    t1=$(date +%s%N)
    python3 - "$work/$1.json" "$(( (t1 - t0) / 1000000 ))" "$1" "$(cat "$work/$1.rss")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"ibqos sm --once ({sys.argv[3]}): exit after {sys.argv[2]} ms; "
      f"peak RSS {int(sys.argv[4]) // 1024} MiB; {s['result']} after "
      f"{s['time_to_subnet_up_ms']:.0f} ms; {s['smps_sent']} SMPs sent, {s['timeouts']} timeouts, "
      f"{s['qos_ports_verified']} QoS ports verified, {s['qos_ports_failed']} failed")
PY
    stop_serve "$1"
}

both() { # $1: row name, $2: opensm.conf options. Runs the row if ROWS names it.
    case " ${ROWS:-defaults qos optimized-slvl ftree-qos} " in *" $1 "*) ;; *) return ;; esac
    run_ibqos "ibqos-$1" "$2"
    run_opensm "opensm-$1" "$2"
}
both defaults ""
both qos "qos TRUE\n"
# use_optimized_slvl only changes anything on switches that advertise
# OptimizedSLtoVLMappingProgramming: the same fabric with `# ibqos: optsl2vl=1` on every switch.
sed -e '/^Switch/s/$/ # ibqos: optsl2vl=1/' "$net" >"$work/fat-tree-optsl2vl.net"
net=$work/fat-tree-optsl2vl.net
both optimized-slvl "qos TRUE\nuse_optimized_slvl TRUE\n"
# The fat-tree engine with QoS as a fat-tree site would program it: optimized SL2VL.
both ftree-qos "routing_engine ftree\nqos TRUE\nuse_optimized_slvl TRUE\n"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; files in $work"
