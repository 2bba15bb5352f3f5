#!/usr/bin/env bash
# The floor of the simulator bench (sim/benches/sim.rs, `-- DURATION 2048 floor THREADS`) on one
# thread and on THREADS, in rounds that alternate the two: per duration, the median run time
# and packet-hops per second of each, the ratio taken round by round, and whether every run
# gave the one-thread run's results (packet-hops, events, deliveries and their fingerprint).
# Run by hand (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-floor-threads.sh [THREADS] [ROUNDS] [DURATION_US ...]
#                                   default: 2 threads, 7 rounds; 100 300 1000 us
#
# Needs python3.
set -euo pipefail

cd "$(dirname "$0")/.."
threads=${1:-2}
rounds=${2:-7}
shift $(($# < 2 ? $# : 2))
durations=("$@")
[ ${#durations[@]} -gt 0 ] || durations=(100 300 1000)
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
[ "$threads" -ge 2 ] 2>/dev/null || { echo "bench: THREADS must be a number from 2 up" >&2; exit 1; }

bin=$(cargo bench -p ibqos-sim --bench sim --no-run 2>&1 |
    sed -n 's/.*Executable benches\/sim.rs (\(.*\))/\1/p' | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for duration in "${durations[@]}"; do
    for _ in $(seq "$rounds"); do
        "$bin" "$duration" 2048 floor 1 | grep "floor run"
        "$bin" "$duration" 2048 floor "$threads" | grep "floor run"
    done >"$work/runs-$duration.txt"
    python3 - "$duration" "$work/runs-$duration.txt" <<'EOF'
import re, statistics, sys

duration, path = sys.argv[1], sys.argv[2]
runs = {}
for line in open(path):
    m = re.search(r"run: ([0-9.]+) s, (\d+) events .* (\d+) packet-hops \(([0-9.]+) M.*, (\d+) delivered, .*fingerprint ([0-9a-f]+), threads (\d+)", line)
    runs.setdefault(int(m[7]), []).append({
        "run": float(m[1]), "hops_s": float(m[4]), "same": (m[2], m[3], m[5], m[6]),
    })
one, many = runs.pop(1), next(iter(runs.values()))
threads = next(iter(runs))
same = all(r["same"] == one[0]["same"] for r in one + many)
rs = [a["run"] / b["run"] for a, b in zip(one, many)]
print(f"{duration} us, {len(one)} rounds; every run the same results: {same}")
for name, rr in [("1 thread", one), (f"{threads} threads", many)]:
    print(f"  {name}: run {statistics.median(r['run'] for r in rr):.3f} s, "
          f"{statistics.median(r['hops_s'] for r in rr):.2f} M packet-hops/s")
won = sum(r > 1 for r in rs)
print(f"  1 thread / {threads} threads, run: {statistics.median(rs):.2f} "
      f"({min(rs):.2f} to {max(rs):.2f}, {threads} threads faster in {won} of {len(rs)})")
EOF
done
