#!/usr/bin/env bash
# The simulator bench (sim/benches/sim.rs: fat-tree-648 all-to-all) of an older commit against
# the working tree's, in rounds that alternate the two, so that a shared machine's drift falls
# on both: per duration, the median run time, packet-hops and events per second, peak memory,
# and the ratios taken round by round. Run by hand (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-sim-engines.sh OLD_COMMIT [ROUNDS] [DURATION_US ...]
#                                                      default: 9 rounds; 100 300 1000 us
#
# Builds OLD_COMMIT's bench in a temporary worktree with its own target directory (removed at
# the end). Needs git and python3.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh
old=${1:?usage: scripts/bench-sim-engines.sh OLD_COMMIT [ROUNDS] [DURATION_US ...]}
rounds=${2:-9}
shift $(($# < 2 ? $# : 2))
durations=("$@")
[ ${#durations[@]} -gt 0 ] || durations=(100 300 1000)
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }

work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/old" "$old" >/dev/null

old_bin=$(bench_binary "$work/old" "$work/old-target")
new_bin=$(bench_binary "$PWD" "$PWD/target")
echo "old: $old ($old_bin)"
echo "new: working tree at $(git rev-parse --short HEAD) ($new_bin)"

for duration in "${durations[@]}"; do
    for _ in $(seq "$rounds"); do
        echo "old $("$old_bin" "$duration" | tr '\n' ' ')"
        echo "new $("$new_bin" "$duration" | tr '\n' ' ')"
    done >"$work/runs-$duration.txt"
    python3 - "$duration" "$work/runs-$duration.txt" <<'EOF'
import re, statistics, sys

duration, path = sys.argv[1], sys.argv[2]
runs = {"old": [], "new": []}
for line in open(path):
    who, text = line.split(" ", 1)
    run = re.search(r"run: ([0-9.]+) s, (\d+) events \(([0-9.]+) M events/s\), (\d+) packet-hops \(([0-9.]+) M", text)
    report = re.search(r"report ([0-9.]+) s", text)
    memory = re.search(r"peak resident memory: (\d+) MB", text)
    runs[who].append({
        "run": float(run[1]), "events": int(run[2]), "events_s": float(run[3]),
        "hops": int(run[4]), "hops_s": float(run[5]),
        "report": float(report[1]) if report else 0.0, "memory": int(memory[1]),
    })

def median(who, key):
    return statistics.median(r[key] for r in runs[who])

def ratios(slower, faster, key=lambda r: r["run"]):
    rs = [key(a) / key(b) for a, b in zip(runs[slower], runs[faster])]
    won = sum(r > 1 for r in rs)
    return f"{statistics.median(rs):.2f} ({min(rs):.2f} to {max(rs):.2f}, {faster} faster in {won} of {len(rs)})"

print(f"{duration} us, {len(runs['old'])} rounds:")
for who in runs:
    r = runs[who][0]
    print(f"  {who:5}: run {median(who, 'run'):.3f} s, {median(who, 'hops_s'):.2f} M packet-hops/s, "
          f"{median(who, 'events_s'):.2f} M events/s, {r['hops']} packet-hops, {r['events']} events, "
          f"peak {r['memory']} MB")
print(f"  old/new run {ratios('old', 'new')}")
total = lambda r: r["run"] + r["report"]
print(f"  old/new run + report {ratios('old', 'new', total)}")
EOF
done
