#!/usr/bin/env bash
# The simulator bench (sim/benches/sim.rs) on one thread and on THREADS, in rounds that
# alternate the two: per duration, the median run time and packet-hops per second of each,
# the ratio taken round by round, and whether every run gave the one-thread run's results.
# MODE `ib` runs the engine (`-- DURATION 2048 ib THREADS`): the same events and packet-hops,
# and the tests hold its reports to be the same byte for byte. It is the one mode since the
# bench's floor went; the argument stays so that the commands in BENCHMARKS.md still run.
# SIM_BENCH_NET and SIM_BENCH_PATTERN pass through to the bench. Run by hand (not a test);
# results go to BENCHMARKS.md.
#
#   scripts/bench-threads.sh MODE [THREADS] [ROUNDS] [DURATION_US ...]
#                            default: 2 threads, 7 rounds; 100 300 1000 us
#
# Needs python3.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh
mode=${1:?usage: scripts/bench-threads.sh ib [THREADS] [ROUNDS] [DURATION_US ...]}
threads=${2:-2}
rounds=${3:-7}
shift $(($# < 3 ? $# : 3))
durations=("$@")
[ ${#durations[@]} -gt 0 ] || durations=(100 300 1000)
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
case $mode in ib) ;; *) echo "bench: MODE is ib" >&2; exit 1 ;; esac
[ "$threads" -ge 2 ] 2>/dev/null || { echo "bench: THREADS must be a number from 2 up" >&2; exit 1; }

bin=$(bench_binary "$PWD" "$PWD/target")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for duration in "${durations[@]}"; do
    for _ in $(seq "$rounds"); do
        for t in 1 "$threads"; do
            echo "$t $("$bin" "$duration" 2048 "$mode" "$t" | tr '\n' ' ')"
        done
    done >"$work/runs-$duration.txt"
    python3 - "$duration" "$work/runs-$duration.txt" <<'PY'
import re, statistics, sys

duration, path = sys.argv[1], sys.argv[2]
runs = {}
for line in open(path):
    threads, text = line.split(" ", 1)
    m = re.search(r"run: ([0-9.]+) s, (\d+) events .*? (\d+) packet-hops \(([0-9.]+) M", text)
    memory = re.search(r"peak resident memory: (\d+) MB", text)
    runs.setdefault(int(threads), []).append({
        "run": float(m[1]), "hops_s": float(m[4]), "memory": int(memory[1]),
        "same": (m[2], m[3]),
    })
one, many = runs.pop(1), next(iter(runs.values()))
threads = next(iter(runs))
same = all(r["same"] == one[0]["same"] for r in one + many)
rs = [a["run"] / b["run"] for a, b in zip(one, many)]
print(f"{duration} us, {len(one)} rounds; every run the same results: {same}")
for name, rr in [("1 thread", one), (f"{threads} threads", many)]:
    print(f"  {name}: run {statistics.median(r['run'] for r in rr):.3f} s, "
          f"{statistics.median(r['hops_s'] for r in rr):.2f} M packet-hops/s, "
          f"peak {max(r['memory'] for r in rr)} MB")
won = sum(r > 1 for r in rs)
print(f"  1 thread / {threads} threads, run: {statistics.median(rs):.2f} "
      f"({min(rs):.2f} to {max(rs):.2f}, {threads} threads faster in {won} of {len(rs)})")
PY
done
