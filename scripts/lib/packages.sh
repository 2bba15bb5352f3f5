# Sourced by scripts/test, .ci/run and .ci/deb: the Debian packages a script needs, installed when
# missing.

# What `ibqos sim` across processes (ibqos-sim-mpi, the `mpi` feature) builds and runs with:
# MPICH's library and its mpirun (Hydra), and libclang, with which the mpi crate generates its
# bindings to the library.
mpi_packages=(mpich libmpich-dev libclang-dev)

# ensure_packages WHO PACKAGE...: installs with apt-get those of the Debian packages that are not
# installed, when run as root. As another user it prints the command that installs them and
# returns 1, having changed nothing. WHO prefixes its messages. Then prints each package's
# version, so that a log says which programs a run used.
ensure_packages() {
    local who=$1 package missing=()
    shift
    if ! command -v dpkg-query >/dev/null; then
        echo "$who: no dpkg-query to check for the Debian packages $*; going on without" >&2
        return 0
    fi
    for package in "$@"; do
        if [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" != installed ]; then
            missing+=("$package")
        fi
    done
    if [ ${#missing[@]} -ne 0 ]; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "$who: these Debian packages are missing: ${missing[*]}" >&2
            echo "$who: install them as root, then run this again:" >&2
            echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
            return 1
        fi
        echo "$who: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
    fi
    dpkg-query -W -f="$who: \${Package} \${Version}\n" "$@" >&2 || true
}
