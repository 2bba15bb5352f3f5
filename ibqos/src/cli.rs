//! The command line: what an administrator types, validated into typed values.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use ibqos_qos::{PortClass, VlCount};

use ibqos_emu::Latency;

use ibqos_transport::FabricSpec;

/// An InfiniBand subnet manager centred on QoS.
///
/// It reads OpenSM's own opensm.conf (exactly as OpenSM 3.3.23 reads it, and says where OpenSM
/// would silently change what you wrote) and its own ibqos.toml.
#[derive(Debug, Parser)]
#[command(name = "ibqos", version, propagate_version = true)]
#[command(after_help = "Examples:\n  \
    ibqos check /etc/opensm/opensm.conf\n  \
    ibqos plan -F opensm.conf --class ca --vls 8 --oper-vls 8 --low-cap 8 --high-cap 8\n  \
    ibqos plan -c ibqos.toml --topology fabric.net\n  \
    ibqos migrate /etc/opensm/opensm.conf -o ibqos.toml")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check configuration files and print diagnostics like a compiler.
    ///
    /// Each file is read as ibqos.toml if its name ends in .toml, otherwise as opensm.conf.
    /// Every step OpenSM takes silently (a VL taken mod 15, a wrapped weight, a `key=value` line
    /// ignored, `true` read as FALSE, ...) is reported with file:line:col. Exits 1 if any file has
    /// an error, or with --strict any warning.
    ///
    /// The GUID files the routing options name (root_guid_file, cn_guid_file, io_guid_file,
    /// guid_routing_order_file) are read as OpenSM reads them, each bad line placed. A routing
    /// option no engine that may route reads is a warning. ibqos has no unicast routing cache:
    /// with use_ucast_cache it routes again at every heavy sweep, which can balance otherwise
    /// than OpenSM's cache after CAs or leaf switches left.
    #[command(after_help = "Examples:\n  \
        ibqos check /etc/opensm/opensm.conf\n  \
        ibqos check --strict ibqos.toml\n  \
        ibqos check --partitions new-partitions.conf /etc/opensm/opensm.conf\n  \
        ibqos check --json opensm.conf | jq -r .code")]
    Check(CheckArgs),
    /// Print the QoS tables programmed on one kind of port, or per port group on a fabric.
    ///
    /// Shows the SL-to-VL table, the VL arbitration blocks (low and high priority) and the
    /// VLHighLimit that OpenSM 3.3.23 would program on a port of the given class and
    /// capabilities, with two documented fixes: a VLArb cap above 32 programs entries 33-64,
    /// and VLs are masked with the OperVLs being programmed. With --topology, the tables the
    /// policy's qos-setup gives each port of a fabric instead.
    #[command(after_help = "Examples:\n  \
        ibqos plan -F opensm.conf --class ca --vls 8 --low-cap 8 --high-cap 8\n  \
        ibqos plan -F opensm.conf --class swe --vls 8 --oper-vls 4 --low-cap 64 --high-cap 64\n  \
        ibqos plan -c ibqos.toml --topology fabric.net --json")]
    Plan(PlanArgs),
    /// Convert opensm.conf to ibqos.toml or back.
    ///
    /// The direction follows the input's name: a .toml input is written as opensm.conf, anything
    /// else as ibqos.toml. Whatever the target format cannot express is reported, never dropped
    /// silently; with --strict such a loss is an error and nothing is written.
    #[command(after_help = "Examples:\n  \
        ibqos migrate /etc/opensm/opensm.conf -o ibqos.toml\n  \
        ibqos migrate ibqos.toml -o opensm.conf --force\n  \
        ibqos migrate /etc/opensm/opensm.conf -o -")]
    Migrate(MigrateArgs),
    /// Read one attribute of one node over the fabric, like smpquery.
    ///
    /// Sends one SubnGet (retrying on timeout) by directed route or to a LID and prints the
    /// decoded attribute as `Name: value` lines, or JSON.
    #[command(after_help = "Examples:\n  \
        ibqos query nodeinfo --dr 0,1\n  \
        ibqos query --fabric ibsim:sim@H1 portinfo --dr 0,1 --port 3\n  \
        ibqos query --fabric umad:mlx5_0:1 vlarb --lid 2 --port 3 --json")]
    Query(QueryArgs),
    /// Run the subnet manager of a fabric.
    ///
    /// Discovers the fabric by directed route, assigns LIDs (keeping the ones ports already hold
    /// and the ones its LID cache remembers), routes, programs every switch's forwarding table
    /// and brings every link up to ACTIVE, as OpenSM's heavy sweep does, then logs SUBNET UP and
    /// prints a summary. With --once it exits after that; otherwise it sweeps again every
    /// sweep_interval seconds until SIGTERM or SIGINT.
    ///
    /// M_Key protection, as OpenSM's. The configuration's m_key, m_key_protection_level (0-3),
    /// m_key_lease_period (seconds) and m_key_lookup (in ibqos.toml's `[opensm]` table) give every
    /// CA port and switch port 0 the key, protect bits and lease. Every SMP carries the key its
    /// target holds, kept in the cache directory's guid2mkey (mode 0600). ibqos.toml's `[sm]`
    /// m_key_per_port_secret (16 bytes or more) gives each port its own key. That key is
    /// HMAC-SHA256 of the secret and the port GUID, so one leaked key opens one port. No key is
    /// ever logged or printed. A port whose key was lost is taken back when its lease runs out.
    #[command(after_help = "Examples:\n  \
        ibqos sm --once -F examples/opensm-qos.conf\n  \
        ibqos sm --once --fabric ibsim:sim@H1 -F /etc/opensm/opensm.conf\n  \
        ibqos sm --dry-run --fabric umad -F new.conf\n  \
        ibqos sm --fabric umad -F /etc/opensm/opensm.conf --log-file /var/log/ibqos/ibqos.log\n  \
        systemctl reload ibqos@0x0002c903000a1b2c   # SIGHUP: read the configuration again")]
    Sm(SmArgs),
    /// Write every port's QoS state of a live fabric as JSON, sending no Set.
    ///
    /// Discovers the fabric by directed route as the SM does (NodeInfo, NodeDescription,
    /// SwitchInfo, the PortInfo of every port), then reads every port's tables: on a switch the
    /// SL2VL table of every (input, output) pair, on a CA its own, and the VLArb blocks the
    /// port's VLArbitrationLowCap and HighCap fill; and every switch's LFT up to its
    /// LinearFDBTop. Only SubnGets are sent, so it reads a fabric
    /// whatever SM programmed it (OpenSM, ibqos) and changes nothing. The JSON is the format
    /// `ibqos fabric dump` and `ibqos sm --dump-fabric` write of an emulated fabric (nodes by
    /// GUID, named by NodeDescription), so the files compare with diff, and `ibqos sim --tables`
    /// simulates with exactly these tables and routes. A Get that gets no answer after its retries is an
    /// error naming its node and port, and then nothing is written.
    #[command(after_help = "Examples:\n  \
        ibqos dump --fabric umad -o fabric.json\n  \
        ibqos dump --fabric ibsim:sim@H1 -o fabric.json\n  \
        ibqos dump --fabric sim:two-switch | diff - <(ibqos fabric dump two-switch)\n  \
        ibqos sim --topology fabric.net --tables fabric.json --traffic traffic.toml")]
    Dump(DumpArgs),
    /// Simulate traffic over a fabric with the QoS tables a configuration programs, or with
    /// those a fabric holds.
    ///
    /// A credit-based, packet-level simulation. Links have speed, width and propagation, and per-VL
    /// receive buffers in 64-byte credits. Every output port runs the IBA 7.6.9 VL arbiter with the
    /// tables the planner gives it (or, with --tables, those `ibqos dump` read from a live fabric).
    /// SL-to-VL applies at every hop, and routes come from minhop, as the SM computes them. Prints
    /// per flow, per SL and per VL on every link: bytes, throughput, share, latency, time blocked
    /// on credits, buffer occupancy and drops.
    #[command(after_help = "Examples:\n  \
        ibqos sim --topology fabric.net -F opensm.conf --traffic traffic.toml\n  \
        ibqos sim --topology fabric.net -c ibqos.toml --traffic traffic.toml --seed 7 --json\n  \
        ibqos sim --topology fabric.net -F opensm.conf --traffic traffic.toml --plot plots/\n  \
        ibqos dump --fabric umad -o held.json && \\\n    \
        ibqos sim --topology fabric.net --tables held.json --traffic traffic.toml")]
    Sim(SimArgs),
    /// Report how evenly the switches' forwarding tables spread routes over their ports, as
    /// infiniband-diags' check_lft_balance does.
    ///
    /// For each switch, the routes each port carries: the LIDs of CA and router ports that the
    /// switch's LFT forwards out of it, every LID of an LMC range counted. Switch LIDs are not
    /// counted, since only management traffic goes to them. Ports linked to a CA or router are
    /// listed but not counted: they carry the one node behind them, however the fabric is
    /// routed. A switch is balanced when its counted ports differ by at most one route. The
    /// worst port is the one carrying the most routes, and its share is its part of the
    /// switch's counted routes.
    ///
    /// The routes come from one of three places. A net file (--topology) is routed as the SM
    /// would route it, by the configuration's routing_engine list (-F, -c) or --routing-engine,
    /// with LIDs a simple LID manager gives (LMC 0) where the file has none. A live
    /// fabric (--fabric) is read by SubnGets alone, as `ibqos dump` reads it. A dump (--dump,
    /// with the --topology it was taken of) gives the LFTs and LIDs a fabric held.
    ///
    /// Prints the unbalanced switches as a table and a summary; --all lists every switch, and
    /// --ports each listed switch's ports. The exit status is 0 whether or not switches are
    /// unbalanced: read `unbalanced` in the --json output to act on it.
    #[command(
        name = "lft-balance",
        after_help = "Examples:\n  \
            ibqos lft-balance --topology fabric.net -F /etc/opensm/opensm.conf\n  \
            ibqos lft-balance --topology fabric.net --routing-engine updn --all --ports\n  \
            ibqos lft-balance --fabric umad\n  \
            ibqos lft-balance --topology fabric.net --dump held.json --json | jq .unbalanced"
    )]
    LftBalance(LftBalanceArgs),
    /// Prove that no credit loop can deadlock the fabric's unicast traffic, or name each loop.
    ///
    /// On a lossless fabric a packet waits in one channel (an output port and a VL) for credits
    /// on the next. When those waits close a cycle, a loaded fabric can stop for good: minhop
    /// does this on a torus or a ring. This builds the channel dependency graph of the routes
    /// and finds its cycles.
    ///
    /// Every path counts: from every CA and router port and every switch, to every LID. Each hop
    /// follows the switch's LFT and maps the path's SL to a VL with the switch's SL-to-VL table
    /// for that input and output port. The SLs are those PathRecords give: SL 0, and with qos
    /// on each qos-level's SL of the configuration, through the routing engine's own choice of
    /// SL (LASH, DFSSSP, Nue, torus-2QoS). --every-sl puts every SL on every path instead: the
    /// worst case, for applications that pick their SL themselves.
    ///
    /// Each loop is printed as its channels, `"S1"/P3 VL0` (node, output port, VL), with one
    /// route per dependency that closes it. The report also names forwarding that cannot
    /// deliver (no route, a forwarding loop, an unlinked port) and channels that drop packets
    /// (an SL mapped to VL15 or above the port's OperVLs).
    ///
    /// The routes and tables come from one of three places. A net file (--topology) is routed
    /// as the SM would route it, with the tables the configuration (-F, -c) programs. A live
    /// fabric (--fabric) is read by SubnGets alone, as `ibqos dump` reads it. A dump (--dump,
    /// with the --topology it was taken of) gives what a fabric held. A configuration given
    /// with --fabric or --dump only says which SLs paths use: a fabric's PathRecords are not
    /// in a dump, so an engine's own SLs are not known there; use --every-sl.
    ///
    /// Exit status: 0 when no credit loop exists, 1 when one does or the check could not run.
    #[command(
        name = "credit-loops",
        after_help = "Examples:\n  \
            ibqos credit-loops --topology torus.net --routing-engine minhop\n  \
            ibqos credit-loops --topology fabric.net -F /etc/opensm/opensm.conf\n  \
            ibqos credit-loops --fabric umad --every-sl\n  \
            ibqos credit-loops --topology fabric.net --dump held.json --json | jq .credit_loops"
    )]
    CreditLoops(CreditLoopsArgs),
    /// Serve or generate emulated fabrics.
    #[command(subcommand)]
    Fabric(FabricCommand),
    /// Ask a running `ibqos sm` over its control socket: OpenSM's console, for scripts too.
    ///
    /// The daemon listens on a Unix socket that only root and its own user may use (mode 0600):
    /// under systemd in its runtime directory, /run/ibqos/GUID/ctl.sock for the port GUID;
    /// elsewhere where `ibqos sm --control-socket PATH` says. Without --socket, the one
    /// daemon's socket under /run/ibqos is used.
    #[command(after_help = "Examples:\n  \
        ibqos ctl status\n  \
        ibqos ctl status --json | jq .last_sweep.qos_ports_failed\n  \
        ibqos ctl --socket /tmp/sm.sock sweep\n  \
        ibqos ctl reload          # as SIGHUP, and prints what each changed option became\n  \
        ibqos ctl loglevel 0x07   # OpenSM's log flags, until the next reload\n  \
        ibqos ctl perf dump mach  # the PerfMgr's counters, as OpenSM's dump_counters mach")]
    Ctl(CtlArgs),
    /// List this host's InfiniBand ports: device, port, port GUID, link state and rate.
    ///
    /// Read from sysfs (/sys/class/infiniband). Ethernet ports (RoCE, iWARP) are never listed:
    /// they have no SMI, so no subnet manager can run on them. With --guids, only the port
    /// GUIDs, one per line: what `ibqos sm --fabric umad:GUID` and the units ibqos@GUID.service
    /// take, and what ibqos.service starts one SM on each of with PORTS=ALL.
    #[command(after_help = "Examples:\n  \
        ibqos ports\n  \
        for guid in $(ibqos ports --guids); do systemctl start ibqos@$guid.service; done")]
    Ports(PortsArgs),
    /// Write the man pages and the shell completions (bash, zsh, fish) into a directory: what
    /// the package installs, generated from these very definitions.
    #[command(hide = true)]
    GenerateAssets(GenerateAssetsArgs),
}

#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The daemon's control socket.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    #[command(subcommand)]
    pub request: CtlRequest,
}

#[derive(Debug, Subcommand)]
pub enum CtlRequest {
    /// The SM's state as OpenSM's console `status` prints it, the last sweep and the QoS state.
    Status {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Sweep now (OpenSM's console `resweep`).
    Sweep,
    /// Read the configuration again, as SIGHUP; prints what each changed option became.
    Reload,
    /// Write OpenSM's dump files of the last sweep into dump_files_dir now.
    Dump,
    /// Log what OpenSM's log flags FLAGS ask for (0x01 errors, 0x02 info, 0x04 verbose, 0x08
    /// debug, 0x20 MADs), until the next reload.
    Loglevel {
        /// OpenSM's log flags, as `opensm -D` takes them: 0x03, 3.
        #[arg(value_parser = crate::logging::parse_log_flags)]
        flags: u8,
    },
    /// The performance manager (`perfmgr TRUE`), as OpenSM's console `perfmgr`: its state
    /// without a request.
    Perf {
        #[command(subcommand)]
        request: Option<PerfRequest>,
    },
    /// The QoS conformance report: each port's share of data per VL over the PerfMgr's last
    /// window, against what the VL arbitration the SM verified promises (`[sm] perfmgr_lanes`).
    QosReport {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PerfRequest {
    /// Sweep the ports' counters now (`perfmgr sweep`).
    Sweep,
    /// Write the counters to event_db_dump_file, else opensm_port_counters.log in
    /// dump_files_dir (`perfmgr dump_counters [mach]`).
    Dump {
        /// `mach`: OpenSM's tab-separated format.
        format: Option<PerfDumpFormat>,
    },
    /// Print the counters of every node, or of one (`perfmgr print_counters`).
    Counters {
        /// A node's GUID or description, with `:PORT` for one port.
        node: Option<String>,
    },
    /// Print the error counters that are not 0 (`perfmgr print_errors`).
    Errors {
        /// A node's GUID or description.
        node: Option<String>,
    },
    /// Start the sweep timer (`perfmgr enable`).
    Enable,
    /// Stop the sweep timer (`perfmgr disable`).
    Disable,
    /// Set the totals to 0, the fabric's counters untouched (`perfmgr clear_counters`).
    ClearCounters,
    /// Forget the nodes gone from the subnet (`perfmgr clear_inactive`).
    ClearInactive,
    /// Take the nodes gone from the subnet out of the database (`perfmgr set_rm_nodes`).
    SetRmNodes,
    /// Keep the nodes gone from the subnet in the database, inactive (`perfmgr
    /// clear_rm_nodes`).
    ClearRmNodes,
    /// Read each PMA's ClassPortInfo before its counters (`perfmgr set_query_cpi`).
    SetQueryCpi,
    /// Read the counters without ClassPortInfo (`perfmgr clear_query_cpi`).
    ClearQueryCpi,
    /// Print the PMAs' redirections, of every node or of one (`perfmgr dump_redir`).
    DumpRedir {
        /// A node's GUID or description.
        node: Option<String>,
    },
    /// Forget the PMAs' redirections, of every node or of one (`perfmgr clear_redir`).
    ClearRedir {
        /// A node's GUID or description.
        node: Option<String>,
    },
    /// Sweep every SECONDS from now on, starting now (`perfmgr sweep_time`).
    SweepTime {
        /// At least 1.
        seconds: String,
    },
}

/// The PerfMgr dump's other format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PerfDumpFormat {
    /// Tab-separated, a header before each node.
    Mach,
}

#[derive(Debug, Args)]
pub struct PortsArgs {
    /// Print only the port GUIDs, one per line.
    #[arg(long)]
    pub guids: bool,
}

#[derive(Debug, Args)]
pub struct GenerateAssetsArgs {
    /// The directory to write man/*.8 and completions/{ibqos.bash,_ibqos,ibqos.fish} into.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum FabricCommand {
    /// Serve an emulated fabric behind ibsim 0.10's socket protocol.
    ///
    /// Binds the abstract sockets @NAME:ctl and @NAME:out0..9 as ibsim does, so OpenSM and
    /// infiniband-diags run against it under libumad2sim.so (IBSIM_SOCKNAME=NAME SIM_HOST=NODE)
    /// and `ibqos sm --fabric ibsim:NAME@NODE` attaches natively. A client attaches where ibsim
    /// would put it: at the node its SIM_HOST names, else at --attach (port 1 of a CA, port 0 of
    /// a switch). Runs until SIGTERM or SIGINT.
    #[command(after_help = "Examples:\n  \
        ibqos fabric serve fabric.net --sockname lab\n  \
        IBSIM_SOCKNAME=lab SIM_HOST=H1 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so opensm -o")]
    Serve(FabricServeArgs),
    /// Generate a fabric and write it as a net file that ibsim and `fabric serve` load.
    #[command(after_help = "Examples:\n  \
        ibqos fabric gen fat-tree --leaves 4 --spines 2 --hosts 4 --radix 8 -o ft.net\n  \
        ibqos fabric gen fat-tree3 --radix 8 -o ft3.net\n  \
        ibqos fabric gen ring --switches 5 --hosts 2 -o ring.net\n  \
        ibqos fabric gen torus --x 4 --y 4 --hosts 1 -o torus.net\n  \
        ibqos fabric gen mesh --x 3 --y 3 --hosts 1 -o mesh.net\n  \
        ibqos fabric gen dragonfly --groups 4 --switches 3 --hosts 1 -o dragonfly.net")]
    Gen(FabricGenArgs),
    /// Write every port's state of an emulated fabric, as loaded, as JSON: SL2VL per input port,
    /// VLArb low and high, VLHighLimit, OperVLs, HOQLife, VLStallCount, NeighborMTU, LID and
    /// PortState, keyed by node GUID and port, and every switch's LFT. `ibqos sm --dump-fabric` writes the same format
    /// after a run, and `ibqos dump` of a live fabric, so any two states compare with diff.
    #[command(after_help = "Examples:\n  \
        ibqos fabric dump two-switch -o before.json\n  \
        ibqos fabric dump fabric.net --attach H2")]
    Dump(FabricDumpArgs),
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The fabric: `umad[:DEVICE[:PORT]]` (the kernel; by default the first InfiniBand port),
    /// `ibsim:SOCKNAME@NODE` (a native client of a running ibsim, attached at NODE) or
    /// `sim:TOPOLOGY[@NODE]` (a fabric emulated in this process, in its power-on state).
    #[arg(long, value_name = "SPEC")]
    pub fabric: FabricSpec,
    /// Where to write the JSON; standard output without it.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also read each congestion control agent (class 0x21 Gets to each switch's port 0 and
    /// each CA port). Off by default: ibsim takes class 0x21 for SMPs and corrupts the fabric.
    #[arg(long)]
    pub congestion: bool,
    #[command(flatten)]
    pub survey: SurveyArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("lft_source").required(true).args(["topology", "fabric"])))]
#[command(group(
    clap::ArgGroup::new("lft_routes").args(["opensm_conf", "toml", "dump"])
))]
pub struct LftBalanceArgs {
    /// A net file (or the built-in two-switch) to route as the SM would, or, with --dump, the
    /// fabric the dump was taken of.
    #[arg(
        long,
        value_name = "NET",
        conflicts_with_all = ["timeout_ms", "retries", "max_wire_smps"]
    )]
    pub topology: Option<String>,
    /// An opensm.conf: its routing_engine list routes --topology.
    #[arg(short = 'F', long = "opensm-conf", value_name = "OPENSM_CONF")]
    pub opensm_conf: Option<PathBuf>,
    /// An ibqos.toml: its routing engines route --topology.
    #[arg(short = 'c', long = "config", value_name = "IBQOS_TOML")]
    pub toml: Option<PathBuf>,
    /// The routing engines for --topology, as OpenSM's `routing_engine` lists them (`updn`,
    /// `ftree,updn`), in place of the configuration's; without either, minhop. A note on
    /// standard error names each engine passed over.
    #[arg(long, value_name = "NAMES", conflicts_with = "dump")]
    pub routing_engine: Option<String>,
    /// A dump of the --topology fabric (`ibqos dump`, `ibqos fabric dump`): every switch's LFT
    /// and every end port's LID as it holds them. A dump keeps no LMC, so only each port's
    /// base LID counts; read the fabric live (--fabric) when it runs an LMC above 0.
    #[arg(long, value_name = "DUMP_JSON")]
    pub dump: Option<PathBuf>,
    /// A live fabric, read by SubnGets alone: `umad[:DEVICE[:PORT]]`, `ibsim:SOCKNAME@NODE` or
    /// `sim:TOPOLOGY[@NODE]`, as `ibqos dump` takes it.
    #[arg(
        long,
        value_name = "SPEC",
        conflicts_with_all = ["opensm_conf", "toml", "routing_engine", "dump"]
    )]
    pub fabric: Option<FabricSpec>,
    #[command(flatten)]
    pub survey: SurveyArgs,
    /// List every switch, not only the unbalanced ones.
    #[arg(long)]
    pub all: bool,
    /// Under the table, each listed switch's ports: where each leads and the routes it carries.
    #[arg(long)]
    pub ports: bool,
    /// Print one JSON object (every switch and port) instead of text.
    #[arg(long, conflicts_with_all = ["all", "ports"])]
    pub json: bool,
}

impl LftBalanceArgs {
    /// The configuration file given, if any.
    pub fn config(&self) -> Option<&PathBuf> {
        self.opensm_conf.as_ref().or(self.toml.as_ref())
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("routes_source").required(true).args(["topology", "fabric"])))]
#[command(group(clap::ArgGroup::new("config_file").args(["opensm_conf", "toml"])))]
pub struct CreditLoopsArgs {
    /// A net file (or the built-in two-switch) to route as the SM would, or, with --dump, the
    /// fabric the dump was taken of.
    #[arg(
        long,
        value_name = "NET",
        conflicts_with_all = ["timeout_ms", "retries", "max_wire_smps"]
    )]
    pub topology: Option<String>,
    /// An opensm.conf: its routing_engine list, its QoS tables and its policy's SLs.
    #[arg(short = 'F', long = "opensm-conf", value_name = "OPENSM_CONF")]
    pub opensm_conf: Option<PathBuf>,
    /// An ibqos.toml: its routing engines, its QoS tables and its policy's SLs.
    #[arg(short = 'c', long = "config", value_name = "IBQOS_TOML")]
    pub toml: Option<PathBuf>,
    /// The routing engines for --topology, as OpenSM's `routing_engine` lists them (`updn`,
    /// `ftree,updn`), in place of the configuration's; without either, minhop.
    #[arg(long, value_name = "NAMES", conflicts_with_all = ["dump", "fabric"])]
    pub routing_engine: Option<String>,
    /// A dump of the --topology fabric (`ibqos dump`, `ibqos fabric dump`): every switch's LFT,
    /// every end port's LID, every port's SL-to-VL tables and OperVLs as it holds them.
    #[arg(long, value_name = "DUMP_JSON")]
    pub dump: Option<PathBuf>,
    /// A live fabric, read by SubnGets alone: `umad[:DEVICE[:PORT]]`, `ibsim:SOCKNAME@NODE` or
    /// `sim:TOPOLOGY[@NODE]`, as `ibqos dump` takes it.
    #[arg(long, value_name = "SPEC", conflicts_with = "dump")]
    pub fabric: Option<FabricSpec>,
    #[command(flatten)]
    pub survey: SurveyArgs,
    /// Every SL on every path, whatever PathRecords give: the worst case.
    #[arg(long)]
    pub every_sl: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

impl CreditLoopsArgs {
    /// The configuration file given, if any.
    pub fn config(&self) -> Option<&PathBuf> {
        self.opensm_conf.as_ref().or(self.toml.as_ref())
    }
}

/// How a survey of a live fabric sends its Gets.
#[derive(Debug, Args)]
pub struct SurveyArgs {
    /// How long to wait for each answer, in milliseconds (default: OpenSM's
    /// transaction_timeout).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub timeout_ms: Option<u64>,
    /// How many times to resend an unanswered Get (default: OpenSM's transaction_retries).
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// How many Gets to keep on the wire at once (default: OpenSM's max_wire_smps).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_wire_smps: Option<u32>,
}

#[derive(Debug, Args)]
pub struct FabricDumpArgs {
    /// An ibsim / ibnetdiscover net file, or the name of a built-in fabric (two-switch).
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
    /// The node the emulated SM port is at (it advertises IsSM); default: the first CA.
    #[arg(long, value_name = "NODE")]
    pub attach: Option<String>,
    /// Where to write the JSON; standard output without it.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Faults to inject: into an emulated fabric (`ibqos sm --fabric sim:...`, `ibqos fabric
/// serve`), or on receipt for `ibqos sm` on other fabrics.
#[derive(Debug, Args)]
#[command(next_help_heading = "Fault injection")]
pub struct FaultArgs {
    /// The probability (0-1) that a MAD is lost. On an emulated fabric the fabric itself loses
    /// it, each request and each response drawn separately (a lost response leaves its Set
    /// done); on ibsim or umad, a MAD the SM receives is dropped.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_probability)]
    pub fault_loss: f64,
    /// The probability (0-1) that a response is truncated or has bytes of its header flipped
    /// (on an emulated fabric by the fabric, elsewhere on receipt).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_probability)]
    pub fault_corrupt: f64,
    /// Emulated fabrics only: each response comes back up to N microseconds later than the
    /// fabric's latency model says, uniformly, so responses overtake each other.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_jitter_us: u64,
    /// Emulated fabrics only: a TOML file of scheduled faults, counted from when the fabric
    /// opens: `[[flap]] node = "S1" port = 3 down_ms = 5 up_ms = 50` (the link goes down, then
    /// trains to Init again; without up_ms it stays down), `[[dead]] node = "H3"` (its SMA
    /// answers nothing), `[[vlarb]] node = "S1" port = 3 at_ms = 20 low = [{ vl = 0, weight =
    /// 32 }]` (the port holds that VLArb table, or `high`, as if another agent Set it) and
    /// `[[without_cc]] node = "S2"` (no congestion control agent: status 0x0008 to every CC
    /// MAD).
    #[arg(long, value_name = "FILE")]
    pub fault_schedule: Option<PathBuf>,
    /// The seed of the fault injection: the same seed loses, damages and delays the same MADs.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_seed: u64,
}

/// How long an emulated fabric takes to answer an SMP: the links it crosses both ways, and the
/// SMA that answers. The defaults are assumptions of the right order, not measurements: a
/// switch's management processor is a small embedded CPU, far slower than its wire. All zero
/// answers at once, as ibsim does.
#[derive(Debug, Args)]
#[command(next_help_heading = "Emulated fabric latency")]
pub struct LatencyArgs {
    /// One link crossed one way, in ns.
    #[arg(long, value_name = "NS", default_value_t = Latency::default().wire_ns)]
    pub wire_ns: u64,
    /// A switch's SMA answering one SMP, in ns.
    #[arg(long, value_name = "NS", default_value_t = Latency::default().switch_sma_ns)]
    pub switch_sma_ns: u64,
    /// A CA's SMA answering one SMP, in ns.
    #[arg(long, value_name = "NS", default_value_t = Latency::default().ca_sma_ns)]
    pub ca_sma_ns: u64,
}

impl LatencyArgs {
    pub fn latency(&self) -> Latency {
        Latency {
            wire_ns: self.wire_ns,
            switch_sma_ns: self.switch_sma_ns,
            ca_sma_ns: self.ca_sma_ns,
        }
    }
}

/// Traffic the packet simulator runs inside an emulated fabric, so that its PMA counters carry
/// it (`ibqos fabric serve`, `ibqos sm --fabric sim:...`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Traffic inside the emulated fabric")]
pub struct TrafficArgs {
    /// A traffic file, as `ibqos sim` takes it (ibqos-traffic(5)): its flows run over the
    /// tables the fabric's SMAs hold when the traffic starts, as the SM programmed them, and
    /// every port's PortXmitData, PortRcvData, per-SL data, PortVLXmitWait and
    /// PortRcvSwitchRelayErrors count what the simulator's packets do. It starts at
    /// --traffic-start-ms or later, once every flow has LIDs at its ends and a route between
    /// them (checked every millisecond). A Set that changes a table while it runs rebuilds the
    /// simulation from the new tables there, and the counters go on. An XmitWait tick is the
    /// time one 64-byte block takes on the port's link. The counters are sampled every 10 us of
    /// simulated time; in real time a simulation slower than the clock lags it, and the log
    /// says by how much when it ends.
    #[arg(long, value_name = "FILE")]
    pub traffic: Option<PathBuf>,
    /// The traffic starts no earlier than this, in ms after the fabric opens.
    #[arg(long, value_name = "MS", default_value_t = 0, requires = "traffic")]
    pub traffic_start_ms: u64,
    /// Seeds the phases of the traffic's rate-limited flows, as `ibqos sim --seed`.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "traffic")]
    pub traffic_seed: u64,
    /// When the traffic ends, write its outcome to FILE as JSON: `report` (the simulator's
    /// report, as `ibqos sim --json` prints it) and `ports` (what each port's counters were
    /// given: words and packets sent and received per SL and VL, XmitWait ticks per VL, relay
    /// errors), with the emulated times it started, ended and was all counted, in ns. `ibqos
    /// sm` writes it when it stops, if the traffic ended by then.
    #[arg(long, value_name = "FILE", requires = "traffic")]
    pub traffic_report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FabricServeArgs {
    /// An ibsim / ibnetdiscover net file, or the name of a built-in fabric (two-switch).
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
    /// The socket base name clients give as IBSIM_SOCKNAME (ibsim's default is `sim`).
    #[arg(long, default_value = "sim", value_name = "NAME")]
    pub sockname: String,
    /// The node (id or NodeDescription) a client attaches at when it names none (SIM_HOST
    /// unset); default: the first CA. A client naming a node attaches there, as under ibsim.
    #[arg(long, value_name = "NODE")]
    pub attach: Option<String>,
    /// On SIGTERM or SIGINT, write every port's state as JSON here (the `fabric dump` format).
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// A TOML file of PMA counters to set when the fabric starts, to test a performance
    /// manager near a counter's limit: `[[counter]] node = "S1" port = 3 attribute =
    /// "PortCounters" counter = "PortXmitData" value = 3221225472`. The attribute is named as
    /// IBA names it (PortCountersExtended, PortXmitDataSL, PortVLXmitWaitCounters, ...), the
    /// counter as perfquery prints it (XmtDataSL3, PortVLXmitWait7, ...). A value wider than its
    /// counter is an error.
    #[arg(long, value_name = "FILE")]
    pub preset_counters: Option<PathBuf>,
    #[command(flatten)]
    pub faults: FaultArgs,
    #[command(flatten)]
    pub latency: LatencyArgs,
    #[command(flatten)]
    pub traffic: TrafficArgs,
}

#[derive(Debug, Args)]
pub struct FabricGenArgs {
    #[command(subcommand)]
    pub shape: GenShape,
    /// The net file to write; standard output without it.
    #[arg(short, long, value_name = "FILE", global = true)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum GenShape {
    /// A two-level fat tree: leaves with hosts, each leaf linked once to every spine.
    ///
    /// Leaves L0, L1, ... have hosts H{leaf}_{h} on ports 1.. and their uplinks after them;
    /// spines S0, S1, ... link to leaf l on port l+1. Hosts plus spines must fit a leaf's
    /// ports, and leaves a spine's.
    #[command(
        name = "fat-tree",
        after_help = "Examples:\n  \
            ibqos fabric gen fat-tree --leaves 4 --spines 2 --hosts 4 -o ft.net\n  \
            ibqos fabric gen fat-tree --leaves 18 --spines 9 --hosts 18 --radix 36 -o ft-324.net"
    )]
    FatTree {
        /// Leaf switches, each with its hosts.
        #[arg(long, value_name = "N")]
        leaves: usize,
        /// Spine switches, each linked once to every leaf.
        #[arg(long, value_name = "N")]
        spines: usize,
        /// Hosts (single-port CAs) per leaf.
        #[arg(long, value_name = "N")]
        hosts: usize,
        /// Ports per switch.
        #[arg(long, value_name = "K", default_value_t = 36)]
        radix: usize,
    },
    /// A three-level (k-ary) fat tree: pods of edge and aggregation switches under core switches.
    ///
    /// Every switch has K = --radix ports, half down and half up. Each pod has K/2 edge switches
    /// (E{pod}_{e}, hosts H{pod}_{e}_{h} on ports 1.., uplinks on ports K/2+1..) and K/2
    /// aggregation switches (A{pod}_{a}, edges on ports 1..K/2, cores on ports K/2+1..K), every
    /// edge linked to every aggregation switch of its pod. The (K/2)² core switches C{c} form K/2
    /// groups of K/2; aggregation switch a of every pod links to each core of group a, pod p on
    /// the core's port p+1. Between hosts in different pods a route is 6 links: edge,
    /// aggregation, core, aggregation, edge.
    ///
    /// The full tree (the defaults) has 5K²/4 switches and K³/4 hosts: --radix 4 gives 20
    /// switches and 16 hosts, --radix 8 80 and 128, --radix 36 1620 and 11664. Fewer pods or
    /// hosts size it down, leaving those ports unlinked; the (K/2)² cores stay.
    #[command(
        name = "fat-tree3",
        after_help = "Examples:\n  \
            ibqos fabric gen fat-tree3 --radix 4 -o ft3-k4.net\n  \
            ibqos fabric gen fat-tree3 --radix 8 --pods 2 --hosts 1 -o ft3-small.net"
    )]
    FatTree3 {
        /// Ports per switch, K: even.
        #[arg(long, value_name = "K")]
        radix: usize,
        /// Pods, 1 to K; default K.
        #[arg(long, value_name = "P")]
        pods: Option<usize>,
        /// Hosts (single-port CAs) per edge switch, 1 to K/2; default K/2.
        #[arg(long, value_name = "H")]
        hosts: Option<usize>,
    },
    /// A ring of switches, each with its own hosts.
    #[command(after_help = "Examples:\n  \
        ibqos fabric gen ring --switches 5 --hosts 2 -o ring.net")]
    Ring {
        /// Switches in the ring, each linked to the next and the last to the first.
        #[arg(long, value_name = "N")]
        switches: usize,
        /// Hosts (single-port CAs) per switch.
        #[arg(long, value_name = "N", default_value_t = 1)]
        hosts: usize,
    },
    /// A 2-D torus of switches, each with its own hosts.
    #[command(after_help = "Examples:\n  \
        ibqos fabric gen torus --x 4 --y 4 --hosts 1 -o torus.net")]
    Torus {
        /// Switches along the first dimension, the last linked back to the first.
        #[arg(long, value_name = "N")]
        x: usize,
        /// Switches along the second dimension, the last linked back to the first.
        #[arg(long, value_name = "N")]
        y: usize,
        /// Hosts (single-port CAs) per switch.
        #[arg(long, value_name = "N", default_value_t = 1)]
        hosts: usize,
    },
    /// A 2-D mesh: the torus without its wrap-around links.
    ///
    /// Switch S{i}_{j} has port 1 to +x, 2 to -x, 3 to +y, 4 to -y (unlinked on an edge), and
    /// its hosts H{i}_{j}_{h} on ports 5...
    #[command(after_help = "Examples:\n  \
        ibqos fabric gen mesh --x 3 --y 3 --hosts 1 -o mesh.net")]
    Mesh {
        /// Switches along the first dimension.
        #[arg(long, value_name = "N")]
        x: usize,
        /// Switches along the second dimension.
        #[arg(long, value_name = "N")]
        y: usize,
        /// Hosts (single-port CAs) per switch.
        #[arg(long, value_name = "N", default_value_t = 1)]
        hosts: usize,
    },
    /// A dragonfly-like fabric: groups of switches linked all-to-all, one link between each pair
    /// of groups.
    ///
    /// Switch S{g}_{s} has the other switches of its group on ports 1..A-1 (A = --switches, in
    /// index order), then G = ceil((groups-1)/A) global ports, then its hosts H{g}_{s}_{h}. Group
    /// g's k-th global link goes to the k-th other group, from switch k/G, port A+k%G. With
    /// groups = A*G+1 every global port is linked: --groups 4 --switches 3 is 12 switches.
    #[command(after_help = "Examples:\n  \
        ibqos fabric gen dragonfly --groups 4 --switches 3 --hosts 1 -o dragonfly.net")]
    Dragonfly {
        /// Groups, at least 2.
        #[arg(long, value_name = "N")]
        groups: usize,
        /// Switches per group.
        #[arg(long, value_name = "A")]
        switches: usize,
        /// Hosts (single-port CAs) per switch.
        #[arg(long, value_name = "N", default_value_t = 1)]
        hosts: usize,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("sm_config").args(["opensm_conf", "toml"])))]
pub struct SmArgs {
    /// The fabric. `sim:TOPOLOGY[@NODE]` is a fabric emulated in this process, from a net file or a
    /// built-in topology. The default is the built-in two-switch fabric, so the SM runs with
    /// nothing else installed. `ibsim:SOCKNAME@NODE` is a native client of a running ibsim,
    /// attached at NODE. `umad[:DEVICE[:PORT]]` and `umad:GUID` are the kernel: by default the
    /// first InfiniBand port, or a port GUID as `ibqos ports --guids` prints it. On umad the SM
    /// waits, rather than exit, while the port is absent or its link is down.
    #[arg(long, value_name = "SPEC", default_value_t = FabricSpec::builtin())]
    pub fabric: FabricSpec,
    /// An opensm.conf to read, as `opensm -F` reads it. Without one, OpenSM's defaults.
    #[arg(short = 'F', long = "opensm-conf", value_name = "OPENSM_CONF")]
    pub opensm_conf: Option<PathBuf>,
    /// An ibqos.toml to read.
    #[arg(short = 'c', long = "config", value_name = "IBQOS_TOML")]
    pub toml: Option<PathBuf>,
    /// Configure the subnet once and exit (0 if it came up), like `opensm --once`. On umad it
    /// waits at most 10 s for its port and link, then fails saying what it waited for.
    #[arg(short = 'o', long)]
    pub once: bool,
    /// Print each sweep's summary as one JSON object on standard output.
    #[arg(long)]
    pub json: bool,
    /// Where the guid2lid LID cache and the guid2mkey and neighbors M_Key caches live; default $OSM_CACHE_DIR,
    /// else /var/cache/ibqos on umad. An emulated or ibsim fabric has none unless given: the
    /// caches are then kept for the run only.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Append the log to FILE instead of standard error, without colour (OpenSM's -f). SIGUSR1
    /// opens it again at its path, so logrotate can move it away and signal the daemon.
    #[arg(short = 'f', long = "log-file", value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// OpenSM's log flags (its -D), which win over opensm.conf's log_flags: 0x01 errors and
    /// warnings, 0x02 info (the milestones: discovering, SUBNET UP), 0x04 verbose (debug),
    /// 0x08 debug (trace), 0x20 every MAD sent and received; OpenSM's default is 0x03. RUST_LOG,
    /// when set, wins over both (e.g. RUST_LOG=ibqos_sm::sa=debug).
    #[arg(short = 'D', long = "log-flags", value_name = "FLAGS", value_parser = crate::logging::parse_log_flags)]
    pub log_flags: Option<u8>,
    /// Listen for `ibqos ctl` on a Unix socket at PATH (mode 0600). Under systemd the socket is
    /// in the unit's runtime directory without this flag; elsewhere there is none without it.
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    #[command(flatten)]
    pub faults: FaultArgs,
    #[command(flatten)]
    pub latency: LatencyArgs,
    /// On a `sim:` fabric: when the SM stops, write every port's state (LID, PortState,
    /// OperVLs, NeighborMTU, VLHighLimit, HOQLife, VLStallCount, SL2VL, VLArb) and every
    /// switch's LFT to FILE as JSON, sorted by node GUID and port, the same state always the
    /// same bytes.
    #[arg(long, value_name = "FILE")]
    pub dump_fabric: Option<PathBuf>,
    #[command(flatten)]
    pub traffic: TrafficArgs,
    /// Discover and plan, read what the fabric holds, and print every Set that would be sent
    /// with what it would change, sending no Set at all. Implies --once.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// Prometheus metrics of the SM: its state, sweeps, SMPs, traps, the fabric's nodes and ports,
/// and the QoS tables it keeps (Sets, drift found and repaired, ports configured and pending).
/// The list is in README.md, "Operating ibqos".
#[derive(Debug, Args)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsArgs {
    /// Write the metrics to FILE after each sweep and each change of the SM's state, replacing
    /// it atomically (a temporary file renamed over it), for node_exporter's textfile collector. Name it *.prom in the
    /// directory node_exporter reads, for example `--metrics-textfile
    /// /var/lib/prometheus/node-exporter/ibqos.prom` with node_exporter started as
    /// `node_exporter --collector.textfile.directory=/var/lib/prometheus/node-exporter`. No
    /// network needed.
    #[arg(long, value_name = "FILE")]
    pub metrics_textfile: Option<PathBuf>,
    /// Serve the metrics over HTTP at http://ADDR:PORT/metrics for Prometheus to scrape, from
    /// a thread of the SM. A port alone (`9464` or `:9464`) listens on 127.0.0.1 only; give an
    /// address (`0.0.0.0:9464`) to let other hosts scrape. The SM refuses to start if the
    /// port is taken. Prometheus: `scrape_configs: [{job_name: ibqos, static_configs:
    /// [{targets: ['localhost:9464']}]}]`.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// The most per-VL and per-SL series exported (ibqos.toml's `[sm] perfmgr_lanes`),
    /// readings and rates together. Each port can make 232, so a large fabric needs a bound.
    /// Past it, the ports last in node GUID order are left out, and
    /// ibqos_perfmgr_lane_series_left_out counts their series.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub metrics_lane_series_max: usize,
}

impl SmArgs {
    /// The configuration file given, if any.
    pub fn config(&self) -> Option<&PathBuf> {
        self.opensm_conf.as_ref().or(self.toml.as_ref())
    }
}

/// Flags shared by every command that reads configuration.
#[derive(Debug, Args)]
pub struct DiagnosticArgs {
    /// Treat warnings as errors.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// opensm.conf or ibqos.toml files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Check this qos-policy.conf instead of the one each opensm.conf names.
    #[arg(long, value_name = "POLICY")]
    pub qos_policy: Option<PathBuf>,
    /// Check this partitions.conf instead of the one each opensm.conf names.
    #[arg(long, value_name = "PARTITIONS")]
    pub partitions: Option<PathBuf>,
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
    /// Print diagnostics as JSON Lines, one object per diagnostic.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("config").required(true).args(["opensm_conf", "toml"])))]
pub struct PlanArgs {
    /// An opensm.conf to read, as `opensm -F` reads it.
    #[arg(short = 'F', long = "opensm-conf", value_name = "OPENSM_CONF")]
    pub opensm_conf: Option<PathBuf>,
    /// An ibqos.toml to read.
    #[arg(short = 'c', long = "config", value_name = "IBQOS_TOML")]
    pub toml: Option<PathBuf>,
    /// The port class: ca (HCA port), sw0 (enhanced switch port 0), swe (switch external port)
    /// or rtr (router port).
    #[arg(long, value_parser = parse_class, required_unless_present = "topology")]
    pub class: Option<PortClass>,
    /// Data VLs the port supports (PortInfo.VLCap) as a count: 1, 2, 4, 8 or 15.
    #[arg(long, value_parser = parse_vl_count, value_name = "N", required_unless_present = "topology")]
    pub vls: Option<VlCount>,
    /// Data VLs the port will run (OperationalVLs), as a count; defaults to --vls.
    #[arg(long, value_parser = parse_vl_count, value_name = "N")]
    pub oper_vls: Option<VlCount>,
    /// VLArbitrationLowCap: entries in the low-priority table, 0-64.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=64), value_name = "N", required_unless_present = "topology")]
    pub low_cap: Option<u8>,
    /// VLArbitrationHighCap: entries in the high-priority table, 0-64.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=64), value_name = "N", required_unless_present = "topology")]
    pub high_cap: Option<u8>,
    /// The port does not support SL-to-VL mapping (CapabilityMask.IsSLMappingSupported clear):
    /// no SL2VL table is programmed.
    #[arg(long)]
    pub no_sl_mapping: bool,
    /// Instead of one port, every port of a fabric (a net file, or the built-in two-switch)
    /// whose tables come from the QoS policy's qos-setup section: its per port group VLArb
    /// tables, VLHighLimit and SL-to-VL entries, which ibqos programs when ibqos.toml sets
    /// `[qos] program_policy_setup = true` (OpenSM never does). Each value is shown as the port
    /// will hold it, with the scope it comes from; two scopes giving one port different tables
    /// are an error at their place.
    #[arg(
        long,
        value_name = "TOPOLOGY",
        conflicts_with_all = ["class", "vls", "oper_vls", "low_cap", "high_cap", "no_sl_mapping"]
    )]
    pub topology: Option<String>,
    /// With --topology: the routing engines, as OpenSM's `routing_engine` lists them, in place
    /// of the configuration's. The first that routes the fabric (as the SM tries them) may
    /// rewrite the tables shown; a note on standard error names each engine passed over, and
    /// none routing is an error. `--json` says which routed (`routing_engine`).
    #[arg(long, value_name = "NAMES", requires = "topology")]
    pub routing_engine: Option<String>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The file to convert: opensm.conf, or ibqos.toml (by its .toml name).
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// Where to write the result; `-` writes to standard output.
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Replace OUTPUT (and POLICY, PARTITIONS) if it exists.
    #[arg(long)]
    pub force: bool,
    /// Where an ibqos.toml's `[qos_policy]` goes as a qos-policy.conf when writing an
    /// opensm.conf; by default `qos-policy.conf` beside OUTPUT.
    #[arg(long, value_name = "POLICY")]
    pub policy_output: Option<PathBuf>,
    /// Where an ibqos.toml's `[partitions]` goes as a partitions.conf when writing an
    /// opensm.conf, which names it in `partition_config_file`; by default `partitions.conf`
    /// beside OUTPUT.
    #[arg(long, value_name = "PARTITIONS")]
    pub partitions_output: Option<PathBuf>,
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The fabric: `ibsim:SOCKNAME@NODE` (a native ibsim client attached at NODE) or
    /// `umad[:DEVICE[:PORT]]` (the kernel; by default the first InfiniBand port).
    #[arg(long, value_name = "SPEC")]
    pub fabric: Option<FabricSpec>,
    /// The attribute to read.
    #[arg(value_enum)]
    pub attribute: QueryAttribute,
    /// A directed route: egress ports from the local node, starting with 0 (the local node
    /// itself), as smpquery -D takes it: `0` is this node, `0,1` the node behind local port 1.
    /// The default when --lid is not given is `0`.
    #[arg(long, value_name = "PATH", value_parser = parse_dr_route, conflicts_with = "lid")]
    pub dr: Option<DrRoute>,
    /// A destination LID (LID-routed SMP).
    #[arg(long, value_name = "LID", value_parser = clap::value_parser!(u16).range(1..=0xfffe))]
    pub lid: Option<u16>,
    /// The port: for portinfo the port to read (0: the port the query arrives on, or a switch's
    /// port 0); for sl2vl and vlarb the output port.
    #[arg(long, value_name = "P")]
    pub port: Option<u8>,
    /// For sl2vl on a switch: the input port.
    #[arg(long, value_name = "P")]
    pub in_port: Option<u8>,
    /// How long to wait for each answer, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub timeout_ms: u64,
    /// How many times to resend an unanswered query.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Print one JSON object instead of `Name: value` lines.
    #[arg(long)]
    pub json: bool,
}

/// What `ibqos query` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryAttribute {
    Nodeinfo,
    Portinfo,
    Nodedesc,
    Switchinfo,
    Sl2vl,
    Vlarb,
}

/// The egress ports of a directed route (the leading 0 of the command-line form removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrRoute(pub Vec<u8>);

fn parse_dr_route(s: &str) -> Result<DrRoute, String> {
    let mut ports = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u8>()
                .map_err(|_| format!("`{p}` is not a port number 0-255"))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    if ports.first() != Some(&0) {
        return Err("a directed route starts with 0 (the local node), e.g. 0,1,3".into());
    }
    ports.remove(0);
    if ports.len() > 63 {
        return Err(format!(
            "{} hops; a directed route has at most 63",
            ports.len()
        ));
    }
    Ok(DrRoute(ports))
}

fn parse_probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("`{s}` is not a probability between 0 and 1")),
    }
}

fn parse_class(s: &str) -> Result<PortClass, String> {
    s.parse()
}

fn parse_vl_count(s: &str) -> Result<VlCount, String> {
    let count: u32 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    VlCount::from_count(count).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("sim_tables").args(["opensm_conf", "toml", "tables"])
))]
pub struct SimArgs {
    /// The fabric: an ibnetdiscover / ibsim net file. Its nodes, links and port capabilities
    /// are what is simulated.
    #[arg(long, value_name = "NET")]
    pub topology: PathBuf,
    /// An opensm.conf to read, as `opensm -F` reads it: the QoS tables come from it.
    #[arg(short = 'F', long = "opensm-conf", value_name = "OPENSM_CONF")]
    pub opensm_conf: Option<PathBuf>,
    /// An ibqos.toml to read.
    #[arg(short = 'c', long = "config", value_name = "IBQOS_TOML")]
    pub toml: Option<PathBuf>,
    /// Instead of a configuration, the tables a fabric held: a dump written by `ibqos dump`
    /// (or `ibqos fabric dump`, `ibqos sm --dump-fabric`). Every linked port runs exactly the
    /// dump's SL2VL tables, VLArb tables, VLHighLimit and OperVLs (a packet mapped to a VL its
    /// link does not run is dropped); nodes are matched by NodeGUID, ports by number. A dump
    /// that does not fit the topology (a node or linked port missing, a VLArb table not of the
    /// port's cap, an OperVLs above its VLCap, a missing SL2VL table) is an error naming the
    /// node and port. A dump that holds LFTs (`ibqos dump` and `ibqos fabric dump` read them)
    /// gives the routes too: every switch forwards by its LFT, and every end port has the
    /// dump's LID. With an older dump, or with --routing-engine, LIDs and routes are the
    /// simulator's own, as with a configuration.
    #[arg(long, value_name = "DUMP_JSON")]
    pub tables: Option<PathBuf>,
    /// The routing engines, as OpenSM's `routing_engine` lists them (`updn`, `ftree,updn`):
    /// each is tried in order, an engine ibqos lacks or that fails passes to the next, then
    /// minhop unless the list says `no_fallback`. In place of the configuration's
    /// `routing_engine` or the LFTs of --tables; without either, minhop routes. A note on
    /// standard error names each engine passed over.
    #[arg(long, value_name = "NAMES")]
    pub routing_engine: Option<String>,
    /// The traffic: duration, link parameters, arbiter options, flows and patterns (TOML).
    #[arg(long, value_name = "TRAFFIC_TOML")]
    pub traffic: PathBuf,
    /// Seeds the random choices (rate-limited flows' phases, permutation patterns): the same
    /// seed gives the same output, byte for byte.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Run on N threads, each taking a part of the fabric's switches (with their hosts): the
    /// same output, byte for byte, as on one. Each thread adds memory (its copy of the flows'
    /// state and its ports' queues); more threads than cores make any run slower. InfiniBand
    /// only (a lossless-Ethernet run takes one thread). Only a run on one thread watches for
    /// credit loops: on more, a deadlocked fabric runs to the end, frozen, and is not named.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        value_parser = clap::value_parser!(u8).range(1..),
        conflicts_with = "sweep_pfc_delay"
    )]
    pub threads: u8,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write SVG charts into DIR: bandwidth share per VL over time on the busiest link, and
    /// the latency CDF per SL.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Lossless Ethernet with a `[[storm]]`: run once per PFC delay (quanta, the SONiC PFC pause
    /// response-time test's `pfc_delay`) in place of `[pfc] pfc_delay`, and print that test
    /// plan's four checks as a table: background traffic fully delivered, no test frame
    /// delivered, test bytes transmitted against the shared buffer size, ingress drops.
    #[arg(long, value_name = "QUANTA,...", value_delimiter = ',')]
    pub sweep_pfc_delay: Vec<u32>,
}

impl SimArgs {
    /// The configuration file given (an InfiniBand run needs one unless --tables is given).
    pub fn config(&self) -> Option<&PathBuf> {
        self.opensm_conf.as_ref().or(self.toml.as_ref())
    }
}

/// `--metrics-listen`: `ADDR:PORT`, or a port alone (`PORT` or `:PORT`) for the loopback
/// address, so that the endpoint is never public unless asked.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    let port = text.strip_prefix(':').unwrap_or(text);
    port.parse::<u16>()
        .map(|port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
        .map_err(|_| {
            format!(
                "{text:?} is no ADDR:PORT (such as 127.0.0.1:9464 or [::1]:9464) and no port \
                 (9464 or :9464, on 127.0.0.1)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn a_port_alone_listens_on_loopback() {
        let loopback = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        assert_eq!(parse_listen("9464"), Ok(loopback(9464)));
        assert_eq!(parse_listen(":9464"), Ok(loopback(9464)));
        assert_eq!(
            parse_listen("0.0.0.0:80"),
            Ok("0.0.0.0:80".parse().unwrap())
        );
        assert_eq!(
            parse_listen("[::1]:9464"),
            Ok("[::1]:9464".parse().unwrap())
        );
        let error = parse_listen("localhost:x").unwrap_err();
        assert!(error.contains("no ADDR:PORT"), "{error}");
        assert!(parse_listen("70000").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--help` and the man pages describe every flag and argument of every command.
    #[test]
    fn every_flag_and_argument_is_described() {
        fn undescribed(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            let path = format!("{path} {}", command.get_name())
                .trim_start()
                .to_string();
            for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
                if arg.get_help().is_none() {
                    found.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                undescribed(sub, &path, found);
            }
        }
        let mut found = Vec::new();
        undescribed(&Cli::command(), "", &mut found);
        assert_eq!(found, Vec::<String>::new(), "without a description");
    }

    #[test]
    fn plan_rejects_a_vl_count_that_is_not_a_power_of_two_or_fifteen() {
        let err = Cli::try_parse_from([
            "ibqos",
            "plan",
            "-F",
            "x",
            "--class",
            "ca",
            "--vls",
            "3",
            "--low-cap",
            "8",
            "--high-cap",
            "8",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("1, 2, 4, 8 or 15"), "{err}");
    }

    #[test]
    fn query_dr_route_needs_the_leading_zero() {
        let cli = Cli::try_parse_from(["ibqos", "query", "nodeinfo", "--dr", "0,1,3"]).unwrap();
        let Command::Query(args) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(args.dr, Some(DrRoute(vec![1, 3])));
        let err = Cli::try_parse_from(["ibqos", "query", "nodeinfo", "--dr", "1,3"]).unwrap_err();
        assert!(err.to_string().contains("starts with 0"), "{err}");
        let err = Cli::try_parse_from(["ibqos", "query", "nodeinfo", "--dr", "0", "--lid", "2"]);
        assert!(err.is_err());
    }

    #[test]
    fn query_rejects_a_bad_fabric_with_its_reason() {
        let err = Cli::try_parse_from(["ibqos", "query", "--fabric", "ibsim:sim", "nodeinfo"])
            .unwrap_err();
        assert!(err.to_string().contains("ibsim:SOCKNAME@NODE"), "{err}");
    }

    #[test]
    fn fabric_gen_takes_the_output_after_the_shape() {
        let cli = Cli::try_parse_from([
            "ibqos",
            "fabric",
            "gen",
            "ring",
            "--switches",
            "3",
            "-o",
            "r.net",
        ])
        .unwrap();
        let Command::Fabric(FabricCommand::Gen(args)) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(args.output, Some(PathBuf::from("r.net")));
        assert!(matches!(
            args.shape,
            GenShape::Ring {
                switches: 3,
                hosts: 1
            }
        ));
    }

    #[test]
    fn plan_needs_exactly_one_config() {
        let base = [
            "ibqos",
            "plan",
            "--class",
            "ca",
            "--vls",
            "8",
            "--low-cap",
            "8",
        ];
        let mut none: Vec<&str> = base.to_vec();
        none.extend(["--high-cap", "8"]);
        assert!(Cli::try_parse_from(&none).is_err());
        let mut both = none.clone();
        both.extend(["-F", "a", "-c", "b.toml"]);
        assert!(Cli::try_parse_from(&both).is_err());
    }
}
