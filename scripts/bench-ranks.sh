#!/usr/bin/env bash
# `ibqos sim` on one thread, on THREADS threads and across RANKS MPI processes (one thread
# each), in rounds that alternate the three: wall time, peak memory per process, the window
# cost each process prints (windows, events that crossed partitions, time waiting at the
# windows' ends), and whether every run wrote the one-thread report byte for byte. Run by hand
# (not a test); results go to BENCHMARKS.md.
#
#   scripts/bench-ranks.sh [FABRIC [DURATION_US [ROUNDS [THREADS [RANKS]]]]]
#       FABRIC: ft10k (default: `fabric gen fat-tree --leaves 128 --spines 48 --hosts 80
#               --radix 128`, 10,416 nodes) or ft40k (`fabric gen fat-tree3 --radix 64
#               --pods 50 --hosts 25`, 40,000 hosts and 4,224 switches)
#       DURATION_US 1000, ROUNDS 2, THREADS 2, RANKS 2
#
# The traffic is the fabric-scale bench's: permutations on SL0 (2048-byte payloads) and SL1
# (4096), greedy, over EDR 4x links with 20 ns propagation, 64 KiB per VL and 100 ns credit
# latency; `qos TRUE` with OpenSM's default tables. The binary is a release build with the
# `mpi` feature (built here); mpirun is MPICH's (scripts/test installs it). Needs python3.
set -euo pipefail

cd "$(dirname "$0")/.."
fabric=${1:-ft10k} duration=${2:-1000} rounds=${3:-2} threads=${4:-2} ranks=${5:-2}
command -v mpirun >/dev/null || { echo "bench: mpirun is missing (scripts/test installs MPICH)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }

cargo build --release --quiet -p ibqos --features mpi
bin=$PWD/target/release/ibqos
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case $fabric in
ft10k) "$bin" fabric gen fat-tree --leaves 128 --spines 48 --hosts 80 --radix 128 -o "$work/ft.net" ;;
ft40k) "$bin" fabric gen fat-tree3 --radix 64 --pods 50 --hosts 25 -o "$work/ft.net" ;;
*) echo "bench: FABRIC is ft10k or ft40k" >&2; exit 1 ;;
esac
echo 'qos TRUE' >"$work/qos.conf"
cat >"$work/traffic.toml" <<EOF
duration_us = $duration
[link]
speed = "EDR"
propagation_ns = 20
vl_buffer_bytes = 65536
credit_latency_ns = 100
[[pattern]]
kind = "permutation"
sl = 0
payload = 2048
[[pattern]]
kind = "permutation"
sl = 1
payload = 4096
EOF
sim=(sim --topology "$work/ft.net" -F "$work/qos.conf" --traffic "$work/traffic.toml" --json)

# run NAME LAUNCHER...: one run, its wall time, each process's peak memory (/usr/bin/time -v
# around each process) and its stderr, into $work/NAME.*.
run() {
    local name=$1 t0 t1
    shift
    t0=$(date +%s%N)
    "$@" /usr/bin/time -f 'peak %M KiB' "$bin" "${sim[@]}" "${extra[@]}" \
        >"$work/$name.json" 2>"$work/$name.err"
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000000 ))" >"$work/$name.ms"
}

for round in $(seq "$rounds"); do
    extra=(); run "one-$round" env
    extra=(--threads "$threads"); run "threads-$round" env
    extra=(); run "ranks-$round" mpirun -np "$ranks"
done

python3 - "$work" "$rounds" "$threads" "$ranks" <<'PY'
import hashlib, re, statistics, sys
work, rounds, threads, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
kinds = [("one", "1 thread"), ("threads", f"{threads} threads"), ("ranks", f"{ranks} processes")]
digest = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
first = digest(f"{work}/one-1.json")
same = True
for kind, label in kinds:
    walls, peaks, notes = [], [], []
    for r in range(1, rounds + 1):
        stem = f"{work}/{kind}-{r}"
        same &= digest(f"{stem}.json") == first
        walls.append(int(open(f"{stem}.ms").read()) / 1000)
        err = open(f"{stem}.err").read()
        peaks.append([int(k) // 1024 for k in re.findall(r"peak (\d+) KiB", err)])
        notes = re.findall(r"note: (?:process|\d+ thread).*", err)
    print(f"{label}: wall {', '.join(f'{w:.1f}' for w in walls)} s (median {statistics.median(walls):.1f});"
          f" peak memory per process {peaks[-1]} MB")
    for note in notes:
        print(f"  {note}")
    if kind == "one":
        one = statistics.median(walls)
    else:
        print(f"  speed-up against 1 thread: {one / statistics.median(walls):.2f}")
print(f"every run wrote the 1-thread report byte for byte: {same}")
PY
