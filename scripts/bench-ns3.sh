#!/usr/bin/env bash
# The simulator bench (sim/benches/sim.rs) against ns-3 on the same workload, in rounds that
# alternate the three runs so that a shared machine's drift falls on all of them: per
# duration, the median run time, packet-hops and events per second of each, and the ratios of
# packet-hops per second taken round by round.
#
#   scripts/bench-ns3.sh [ROUNDS] [DURATION_US ...]      default: 5 rounds; 100 300 us
#
# The three runs, each on one core:
# - ibqos: the bench's binary, `-- DURATION 2048` (what `cargo bench -p ibqos-sim --bench sim
#   -- DURATION 2048` runs).
# - ns-3 bare: scripts/ns3/fat-tree-all-to-all.cc with table-lookup switches and no IP.
# - ns-3 ipv4: the same with ns-3's IPv4 stack, UDP and static routes.
#
# What is the same on both sides: fabric/data/fat-tree-648.net; every host sending to every
# other as fast as its link allows; 2048-byte payloads, each packet 2112 bytes on the wire
# (payload and InfiniBand headers in 64-byte blocks); 32 Gb/s links (4x QDR, the bench's
# default) with 5 ns of propagation; shortest paths balanced over ports per destination; the
# simulated time. A packet-hop is a packet starting to cross a link on both sides. Each `run`
# timer covers the event loop alone, from time 0 to the stop: the bench's `run_until`, ns-3's
# Simulator::Run(); set-up and report are outside it.
#
# What is not the same:
# - ns-3 models less. Its links are store-and-forward FIFOs with no credits, no VLs, no
#   arbitration and no per-flow statistics. The bench's engine runs credits, 8 VLs, the IBA VL
#   arbiter and per-flow counts.
# - The order of destinations: ns-3's sources rotate so that no two packets ever meet in a
#   switch (the program's header says why); the bench's flows meet, and wait for credits.
# - So the two sides move different numbers of packets in the same simulated time (in 300 us,
#   1,459,944 packet-hops in ns-3 and 1,002,354 in the bench); compare packet-hops per second,
#   not run times.
# - The routes: the bench routes with ibqos's minhop; ns-3 gets tables computed from the net
#   file with minhop's balancing (fewest destinations per port), not the same LFTs.
# - ns-3 comes from PyPI's `ns3` wheel (3.44.post0), the C++ libraries and headers, installed
#   with --no-deps into a venv under target/ns3 when missing (its Python bindings are not used).
#   The wheel's libraries are a release build with ns-3's logging and asserts compiled in
#   (NS3_LOG_ENABLE, NS3_ASSERT_ENABLE), as its CMake files declare; ns-3's `optimized`
#   profile compiles both out, so a build of its own may run faster.
# - NS3_FROM=debian builds against Debian's libns3-dev instead (3.37 on bookworm), installed
#   with apt-get when missing (as root; scripts/lib/packages.sh). Its CMake files declare no
#   logging or asserts. Its point-to-point device takes 2 events per packet-hop where 3.44's
#   takes 3 (3.44 adds the device queue's dequeue notice, NetDeviceQueue::PacketDequeued).
# - ns-3's default scheduler (ns3::MapScheduler). NS3_SCHEDULER=ns3::HeapScheduler (or
#   ns3::CalendarScheduler, ...) runs another.
#
# Run by hand; results go to BENCHMARKS.md. It can run in CI (it installs what it needs and
# fails on any error), but .ci/run does not run it: it downloads ns-3 and takes minutes.
# Needs python3 (with venv and pip for the wheel), g++, and PyPI or Debian's archive.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh
rounds=${1:-5}
shift $(($# < 1 ? $# : 1))
durations=("$@")
[ ${#durations[@]} -gt 0 ] || durations=(100 300)
[ "$rounds" -ge 1 ] 2>/dev/null || { echo "bench: ROUNDS must be a number from 1 up" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
command -v g++ >/dev/null || { echo "bench: g++ is missing" >&2; exit 1; }

net=fabric/data/fat-tree-648.net
ns3_wheel_version=3.44.post0
ns3_dir=$PWD/target/ns3
venv=$ns3_dir/venv
ns3_from=${NS3_FROM:-pypi}

# ns-3's libraries and headers, and how to build against them: the include and library
# directories, the libraries' name prefix, the C++ standard and the definitions.
case $ns3_from in
pypi)
    installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("ns3"))' \
        2>/dev/null || true)
    if [ "$installed" != "$ns3_wheel_version" ]; then
        echo "bench: installing ns3==$ns3_wheel_version from PyPI into $venv" >&2
        rm -rf "$venv"
        if ! python3 -m venv "$venv"; then
            echo "bench: python3 -m venv failed (on Debian: apt-get install python3-venv)" >&2
            exit 1
        fi
        "$venv/bin/pip" install --quiet --no-deps "ns3==$ns3_wheel_version"
    fi
    ns3_root=$(echo "$venv"/lib/python3*/site-packages/ns3)
    include_dir=$ns3_root/include
    library_dir=$ns3_root/lib64
    core_library=$(echo "$library_dir"/libns3.*-core.so)
    [ -f "$core_library" ] || { echo "bench: no ns-3 core library in $library_dir" >&2; exit 1; }
    library_prefix=${core_library##*/lib}            # ns3.44-core.so
    library_prefix=${library_prefix%core.so}         # ns3.44-
    ns3_release=${library_prefix#ns}
    ns3_release="${ns3_release%-} (the ns3 $ns3_wheel_version wheel)"
    # What the wheel's CMake files give every program built against it.
    cxx_flags=(-std=c++20 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE)
    ;;
debian)
    # shellcheck source=scripts/lib/packages.sh
    . scripts/lib/packages.sh
    ensure_packages bench libns3-dev
    core_library=$(dpkg -L libns3-dev | grep '/libns3-core\.so$')
    include_dir=/usr/include
    library_dir=${core_library%/*}
    library_prefix=ns3-
    ns3_release="$(dpkg-query -W -f='${Version}' libns3-dev) (Debian's libns3-dev)"
    # Debian's CMake files declare no definitions; its 3.37 headers do not compile as C++20.
    cxx_flags=(-std=c++17)
    ;;
*)
    echo "bench: NS3_FROM is pypi or debian" >&2
    exit 1
    ;;
esac

# The ns-3 program, built when its source or ns-3 is newer than the binary.
source=scripts/ns3/fat-tree-all-to-all.cc
ns3_bin=$ns3_dir/fat-tree-all-to-all-$ns3_from
if ! [ "$ns3_bin" -nt "$source" ] || ! [ "$ns3_bin" -nt "$core_library" ]; then
    echo "bench: building $ns3_bin against ns-3 $ns3_release" >&2
    mkdir -p "$ns3_dir"
    libraries=()
    for module in internet traffic-control point-to-point network core; do
        libraries+=("-l$library_prefix$module")
    done
    g++ -O3 "${cxx_flags[@]}" -DNS3_RELEASE="\"$ns3_release\"" -I"$include_dir" \
        -o "$ns3_bin" "$source" -L"$library_dir" -Wl,-rpath,"$library_dir" "${libraries[@]}"
fi

ibqos_bin=$(bench_binary "$PWD" "$PWD/target")
scheduler=${NS3_SCHEDULER:-ns3::MapScheduler}
echo "ibqos: $ibqos_bin (commit $(git rev-parse --short HEAD))"
echo "ns-3: $ns3_release, $scheduler ($ns3_bin)"
# Both sides' timers are wall-clock: a busy machine slows them, so say how busy it was.
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for duration in "${durations[@]}"; do
    for _ in $(seq "$rounds"); do
        echo "ibqos $("$ibqos_bin" "$duration" 2048 | tr '\n' ' ')"
        for stack in bare ipv4; do
            echo "$stack $("$ns3_bin" --net="$net" --stack="$stack" --durationUs="$duration" \
                --payload=2048 --scheduler="$scheduler" | tr '\n' ' ')"
        done
    done >"$work/runs-$duration.txt"
    python3 - "$duration" "$work/runs-$duration.txt" <<'PY'
import re, statistics, sys

duration, path = sys.argv[1], sys.argv[2]
names = {"ibqos": "ibqos sim", "bare": "ns-3 bare", "ipv4": "ns-3 ipv4"}
runs = {who: [] for who in names}
for line in open(path):
    who, text = line.split(" ", 1)
    m = re.search(r"run: ([0-9.]+) s, (\d+) events .*? (\d+) packet-hops \(([0-9.]+) M", text)
    memory = re.search(r"peak resident memory: (\d+) MB", text)
    queued = re.search(r"at the stop (\d+) queued \(longest queue (\d+)\), (\d+) dropped", text)
    runs[who].append({
        "run": float(m[1]), "events": int(m[2]), "hops": int(m[3]),
        "memory": int(memory[1]), "queued": queued.groups() if queued else None,
    })

print(f"{duration} us, {len(runs['ibqos'])} rounds:")
for who, rr in runs.items():
    same = all((r["events"], r["hops"]) == (rr[0]["events"], rr[0]["hops"]) for r in rr)
    run = statistics.median(r["run"] for r in rr)
    hops_s = statistics.median(r["hops"] / r["run"] for r in rr) / 1e6
    events_s = statistics.median(r["events"] / r["run"] for r in rr) / 1e6
    extra = ""
    if rr[0]["queued"]:
        queued, longest, dropped = rr[0]["queued"]
        extra = f", at the stop {queued} packets queued (longest {longest}), {dropped} dropped"
    peak = max(r["memory"] for r in rr)
    print(f"  {names[who]}: run {run:.3f} s, {hops_s:.3f} M packet-hops/s, "
          f"{events_s:.2f} M events/s, {rr[0]['hops']} packet-hops, {rr[0]['events']} events, "
          f"peak {peak} MB"
          f"{extra}; every run the same counts: {same}")
for who in ("bare", "ipv4"):
    rs = [(a["hops"] / a["run"]) / (b["hops"] / b["run"]) for a, b in zip(runs["ibqos"], runs[who])]
    print(f"  ibqos sim / {names[who]}, packet-hops/s: {statistics.median(rs):.1f} "
          f"({min(rs):.1f} to {max(rs):.1f})")
PY
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
