#!/usr/bin/env bash
# The credit-loop checker on a generated fat tree of about 10,000 nodes, in release:
#
# 1. `ibqos sm --once` on the fabric emulated in-process (qos TRUE): time to SUBNET UP, and the
#    time the SM's own check of the routing took after it (from the log's timestamps), with the
#    run's peak memory;
# 2. `ibqos credit-loops` on the dump that run wrote, and `ibqos lft-balance` on the same dump
#    (which reads it alike but checks nothing): wall time and peak memory of each, so the
#    difference is the checker's;
# 3. `ibqos credit-loops --every-sl` on the dump: all 16 SLs on every path, the worst case.
#
# Run by hand (not a test):
#
#   scripts/bench-credit-loops.sh [LEAVES SPINES HOSTS RADIX]     default: 128 48 80 128
#                                                                   (10,416 nodes, 10,416 LIDs)
set -euo pipefail

cd "$(dirname "$0")/.."
leaves=${1:-128} spines=${2:-48} hosts=${3:-80} radix=${4:-128}
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

cargo build --release --quiet -p ibqos
ibqos=${CARGO_TARGET_DIR:-$PWD/target}/release/ibqos
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
net=$work/fat-tree.net
"$ibqos" fabric gen fat-tree --leaves "$leaves" --spines "$spines" --hosts "$hosts" \
    --radix "$radix" -o "$net"
echo "fabric: $(grep -c '^Switch' "$net") switches, $(grep -c '^Ca' "$net") CAs"
printf 'qos TRUE\n' >"$work/opensm.conf"

measured() { # $1: label; the rest: the command. Prints wall time and peak memory.
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/$label.out" 2>"$work/$label.err" ||
        true
    read -r seconds kb <"$work/time"
    echo "$label: ${seconds} s, peak $((kb / 1024)) MB"
}

ms() { # An RFC 3339 timestamp of the log, as milliseconds of the day.
    local clock=${1#*T}
    clock=${clock%Z}
    IFS=: read -r h m s <<<"$clock"
    echo "$h $m $s" | awk '{ printf "%d", ($1 * 3600 + $2 * 60 + $3) * 1000 }'
}

RUST_LOG=info,ibqos_sm::engine::credit_loops=debug \
    measured sm "$ibqos" sm --once --fabric "sim:$net" -F "$work/opensm.conf" \
    --dump-fabric "$work/held.json"
up=$(grep -m1 'SUBNET UP' "$work/sm.err" | cut -d' ' -f1)
checked=$(grep -m1 'credit-loop check\|credit loop:' "$work/sm.err" | cut -d' ' -f1)
grep 'time to SUBNET UP' "$work/sm.err" "$work/sm.out" | sed 's/^[^:]*://' || true
echo "sm: the check after SUBNET UP took $(( $(ms "$checked") - $(ms "$up") )) ms"
grep -m1 'credit-loop check\|credit loop:' "$work/sm.err" | sed 's/^[^ ]* *//'

measured lft-balance "$ibqos" lft-balance --topology "$net" --dump "$work/held.json"
measured credit-loops "$ibqos" credit-loops --topology "$net" --dump "$work/held.json"
head -n 2 "$work/credit-loops.out"
measured every-sl "$ibqos" credit-loops --topology "$net" --dump "$work/held.json" --every-sl
head -n 2 "$work/every-sl.out"
