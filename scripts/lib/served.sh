# Sourced by the bench scripts that run SMs on a served fat tree: the tree, `ibqos fabric serve`
# on it, one at a time, ended by its PID.
#
# The caller sets $leaves, $spines, $hosts and $radix, and calls `served_fat_tree` first.

serve_pid=
# The preload that lets OpenSM talk to a served fabric as to ibsim.
shim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

# Checks for opensm, python3 and umad2sim; builds ibqos ($ibqos); writes the fat tree to $net in
# a new scratch directory ($work); sets $node, where clients attach.
served_fat_tree() {
    local tool
    for tool in opensm python3; do
        command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
    done
    [ -f "$shim" ] || { echo "bench: $shim is missing (apt-get install ibsim-utils)" >&2; exit 1; }
    cargo build --release --quiet -p ibqos
    ibqos=${CARGO_TARGET_DIR:-$PWD/target}/release/ibqos
    work=$(mktemp -d)
    net=$work/fat-tree.net
    "$ibqos" fabric gen fat-tree --leaves "$leaves" --spines "$spines" --hosts "$hosts" \
        --radix "$radix" -o "$net"
    node=H0_0
    echo "fabric: $(grep -c '^Switch' "$net") switches, $(grep -c '^Ca' "$net") CAs ($net)"
}

# Serves $net with socket "bench$$-$1" (exported as IBSIM_SOCKNAME), its log in
# $work/serve-$1.log, with the flags in SERVE_ARGS. Prints the time from start to the bound
# control socket.
start_serve() {
    export IBSIM_SOCKNAME="bench$$-$1"
    local t0 t1
    t0=$(date +%s%N)
    # shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
    "$ibqos" fabric serve "$net" --sockname "$IBSIM_SOCKNAME" --attach "$node" ${SERVE_ARGS:-} \
        2>"$work/serve-$1.log" &
    serve_pid=$!
    for _ in $(seq 2000); do
        if grep -q "@$IBSIM_SOCKNAME:ctl@" /proc/net/unix; then
            t1=$(date +%s%N)
            echo "serve $1: ready in $(( (t1 - t0) / 1000000 )) ms"
            return
        fi
        sleep 0.01
    done
    echo "bench: ibqos fabric serve did not come up" >&2
    exit 1
}

# Ends the fabric start_serve $1 started, and prints its own count of what it carried.
stop_serve() {
    kill "$serve_pid"
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=
    tail -n 1 "$work/serve-$1.log"
}
