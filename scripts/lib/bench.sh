# Sourced by the simulator's bench scripts.

# The bench binary cargo builds in checkout $1 with target directory $2 (`--no-run` names it,
# relative to the checkout when the target directory is inside it).
bench_binary() {
    local built
    built=$(cd "$1" && CARGO_TARGET_DIR=$2 cargo bench -p ibqos-sim --bench sim --no-run 2>&1 |
        sed -n 's/.*Executable benches\/sim.rs (\(.*\))/\1/p' | tail -1)
    case $built in
    /*) echo "$built" ;;
    *) echo "$1/$built" ;;
    esac
}
