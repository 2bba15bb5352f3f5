//! The command line: what an administrator types, validated into typed values.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use ibqos_qos::{PortClass, VlCount};

/// ibqos: an InfiniBand subnet manager centred on QoS.
///
/// It reads OpenSM's own opensm.conf (exactly as OpenSM 3.3.23 reads it, and says where OpenSM
/// would silently change what you wrote) and its own ibqos.toml.
#[derive(Debug, Parser)]
#[command(name = "ibqos", version, propagate_version = true)]
#[command(after_help = "Examples:\n  \
    ibqos check /etc/opensm/opensm.conf\n  \
    ibqos plan -F opensm.conf --class ca --vls 8 --oper-vls 8 --low-cap 8 --high-cap 8\n  \
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
    Check(CheckArgs),
    /// Print the QoS tables programmed on one kind of port.
    ///
    /// Shows the SL-to-VL table, the VL arbitration blocks (low and high priority) and the
    /// VLHighLimit that OpenSM 3.3.23 would program on a port of the given class and
    /// capabilities, with two documented fixes: a VLArb cap above 32 programs entries 33-64,
    /// and VLs are masked with the OperVLs being programmed.
    Plan(PlanArgs),
    /// Convert opensm.conf to ibqos.toml or back.
    ///
    /// The direction follows the input's name: a .toml input is written as opensm.conf, anything
    /// else as ibqos.toml. Whatever the target format cannot express is reported, never dropped
    /// silently; with --strict such a loss is an error and nothing is written.
    Migrate(MigrateArgs),
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
    #[arg(long, value_parser = parse_class)]
    pub class: PortClass,
    /// Data VLs the port supports (PortInfo.VLCap) as a count: 1, 2, 4, 8 or 15.
    #[arg(long, value_parser = parse_vl_count, value_name = "N")]
    pub vls: VlCount,
    /// Data VLs the port will run (OperationalVLs), as a count; defaults to --vls.
    #[arg(long, value_parser = parse_vl_count, value_name = "N")]
    pub oper_vls: Option<VlCount>,
    /// VLArbitrationLowCap: entries in the low-priority table, 0-64.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=64), value_name = "N")]
    pub low_cap: u8,
    /// VLArbitrationHighCap: entries in the high-priority table, 0-64.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=64), value_name = "N")]
    pub high_cap: u8,
    /// The port does not support SL-to-VL mapping (CapabilityMask.IsSLMappingSupported clear):
    /// no SL2VL table is programmed.
    #[arg(long)]
    pub no_sl_mapping: bool,
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
    /// Replace OUTPUT if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
}

fn parse_class(s: &str) -> Result<PortClass, String> {
    s.parse()
}

fn parse_vl_count(s: &str) -> Result<VlCount, String> {
    let count: u32 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    VlCount::from_count(count).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
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
