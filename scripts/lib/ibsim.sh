# Sourced by the bench scripts that run ibsim: one ibsim at a time, ended by its PID.
#
# The caller sets $net (the net file), $work (a scratch directory) and $socket_prefix.

ibsim_pid=
# The preload that lets OpenSM and infiniband-diags talk to ibsim.
shim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

# Exits with a message unless every program named is installed, and umad2sim too.
require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
    done
    [ -f "$shim" ] || { echo "bench: $shim is missing (apt-get install ibsim-utils)" >&2; exit 1; }
}

# Starts ibsim on $net with socket "$socket_prefix$$-$1" (exported as IBSIM_SOCKNAME), its
# output in $work/ibsim-$1.out, and waits up to 30 s for its socket (a big fabric takes a while).
start_ibsim() {
    export IBSIM_SOCKNAME="$socket_prefix$$-$1"
    ibsim -s -n "$net" >"$work/ibsim-$1.out" 2>&1 &
    ibsim_pid=$!
    for _ in $(seq 600); do
        grep -q "@$IBSIM_SOCKNAME:ctl@" /proc/net/unix && return
        sleep 0.05
    done
    echo "bench: ibsim did not come up" >&2
    exit 1
}

# Ends the ibsim start_ibsim started, if any.
stop_ibsim() {
    [ -n "$ibsim_pid" ] || return 0
    kill "$ibsim_pid"
    wait "$ibsim_pid" 2>/dev/null || true
    ibsim_pid=
}
