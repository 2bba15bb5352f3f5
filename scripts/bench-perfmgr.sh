#!/usr/bin/env bash
# A performance manager sweep of every port of a served fat tree of about 10,000 nodes: `ibqos
# sm` and `opensm`, each with `perfmgr TRUE`, on a fresh `ibqos fabric serve` with its latency
# model. Once the subnet is up, each SM is asked for two PerfMgr sweeps, one after the other
# (`ibqos ctl perf sweep`; OpenSM's console `perfmgr sweep`): the first reads every PMA's
# ClassPortInfo, the second every port's PortCounters and PortCountersExtended. For each sweep:
# the time from the request until the SM's status says Sleeping with no query outstanding
# (polled every 20 ms), and the CPU the SM spent meanwhile. At the end, the SM's peak resident
# set. Run by hand (not a test).
#
#   scripts/bench-perfmgr.sh [LEAVES SPINES HOSTS RADIX]     default: 128 48 80 128
#
# Needs opensm, ibsim-utils (libumad2sim.so) and python3. Every process started here is ended
# by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves=${1:-128} spines=${2:-48} hosts=${3:-80} radix=${4:-128}
. scripts/lib/served.sh
served_fat_tree
sm_pid=
trap '[ -n "$sm_pid" ] && kill "$sm_pid" 2>/dev/null; [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; true' EXIT

stop() { # $1: label. Ends the SM, then the served fabric.
    kill "$sm_pid"
    wait "$sm_pid" 2>/dev/null || true
    sm_pid=
    stop_serve "$1"
}
cpu_ms() { # CPU time of process $1 so far, in ms (utime + stime, clock ticks of 10 ms)
    awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
conf() { # $1: name
    printf 'log_file %s/%s.log\ndump_files_dir %s/\nperfmgr TRUE\nperfmgr_sweep_time_s 3600\n' \
        "$work" "$1" "$work" >"$work/$1.conf"
}
# Times one sweep: $1 the label, $2 a command that asks for it, $3 one that prints the status.
# The sweep has ended when the status, once seen busy, is idle again: OpenSM starts a sweep on
# its own thread, so an idle status right after the request may come from before it.
time_sweep() {
    local t0 c0 t1 c1 status busy=no
    t0=$(now_ms)
    c0=$(cpu_ms "$sm_pid")
    $2
    for _ in $(seq 30000); do
        sleep 0.02
        status=$($3)
        if grep -q 'sweep state *: Sleeping' <<<"$status" &&
            grep -q 'outstanding queries/max *: 0/' <<<"$status"; then
            if [ "$busy" = yes ]; then
                t1=$(now_ms)
                c1=$(cpu_ms "$sm_pid")
                echo "$1: $(( t1 - t0 )) ms, SM CPU $(( c1 - c0 )) ms"
                return
            fi
        elif grep -q 'sweep state' <<<"$status"; then
            busy=yes
        fi
    done
    echo "bench: $1 did not end" >&2
    exit 1
}
peak_rss() { awk '/VmHWM/ { print int($2 / 1024) " MiB" }' "/proc/$sm_pid/status"; }

# ibqos
conf ibqos
start_serve ibqos
socket=$work/ctl.sock
"$ibqos" sm -F "$work/ibqos.conf" --fabric "ibsim:$IBSIM_SOCKNAME@$node" \
    --cache-dir "$work/cache-ibqos" --control-socket "$socket" 2>"$work/ibqos.stderr" &
sm_pid=$!
for _ in $(seq 6000); do
    "$ibqos" ctl --socket "$socket" status 2>/dev/null | grep -q 'SUBNET UP' && break
    sleep 0.05
done
ask() { "$ibqos" ctl --socket "$socket" perf sweep >/dev/null; }
status() { "$ibqos" ctl --socket "$socket" perf; }
time_sweep "ibqos sweep 1 (ClassPortInfo)" ask status
time_sweep "ibqos sweep 2 (PortCounters, PortCountersExtended)" ask status
echo "ibqos peak RSS: $(peak_rss)"
stop ibqos

# OpenSM, its console on a FIFO (`console local`)
conf opensm
printf 'console local\n' >>"$work/opensm.conf"
start_serve opensm
mkfifo "$work/console"
(cd "$work" && OSM_CACHE_DIR="$work/cache-opensm/" OSM_TMP_DIR="$work/" SIM_HOST="$node" \
    LD_PRELOAD="$shim" exec opensm -F "$work/opensm.conf" <"$work/console" >"$work/opensm.out" 2>&1) &
sm_pid=$!
exec 3>"$work/console"
for _ in $(seq 6000); do
    grep -q 'SUBNET UP' "$work/opensm.log" 2>/dev/null && break
    sleep 0.05
done
ask() { echo "perfmgr sweep" >&3; }
status() { # the last status OpenSM's console printed, after asking for a new one
    local lines
    lines=$(wc -l <"$work/opensm.out")
    echo "perfmgr" >&3
    sleep 0.01
    tail -n +"$(( lines + 1 ))" "$work/opensm.out"
}
time_sweep "opensm sweep 1 (ClassPortInfo)" ask status
time_sweep "opensm sweep 2 (PortCounters, PortCountersExtended)" ask status
echo "opensm peak RSS: $(peak_rss)"
exec 3>&-
stop opensm
echo "files in $work"
