//! `ibqos generate-assets DIR` (hidden): the man pages and the bash, zsh and fish completions,
//! rendered from the clap definitions so they never drift from the command line. The Debian
//! package is built from what this writes.
//!
//! A command's page is in section 8 (ibqos is an administrator's daemon in /usr/sbin, as
//! opensm(8) is): clap_mangen's NAME, SYNOPSIS, DESCRIPTION, OPTIONS and SUBCOMMANDS, then
//! EXAMPLES from the command's `after_help`, and the SIGNALS, FILES, ENVIRONMENT, EXIT STATUS
//! and SEE ALSO that apply to it, which clap has no place for. The traffic file's page,
//! ibqos-traffic(5), documents a file rather than a command line, so it is written by hand
//! (dist/man/ibqos-traffic.5) and copied out with the others.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use roff::{Roff, bold, roman};

use crate::cli::{Cli, GenerateAssetsArgs};
use crate::commands::Outcome;

const TRAFFIC_PAGE: &str = include_str!("../../../dist/man/ibqos-traffic.5");

pub fn run(args: &GenerateAssetsArgs) -> Result<Outcome> {
    let man = args.dir.join("man");
    let completions = args.dir.join("completions");
    for dir in [&man, &completions] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    write_man_pages(&command, &man)?;
    let traffic = man.join("ibqos-traffic.5");
    std::fs::write(&traffic, TRAFFIC_PAGE)
        .with_context(|| format!("cannot write {}", traffic.display()))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut command, "ibqos", &completions)
            .with_context(|| format!("cannot write the {shell} completion"))?;
    }
    Ok(Outcome::Success)
}

/// One page per command and subcommand (ibqos.8, ibqos-sm.8, ibqos-fabric-serve.8, ...), hidden
/// ones left out.
fn write_man_pages(command: &clap::Command, dir: &Path) -> Result<()> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_man_pages(sub, dir)?;
    }
    let man = clap_mangen::Man::new(command.clone())
        .section("8")
        .source(format!("ibqos {}", env!("CARGO_PKG_VERSION")));
    let path = dir.join(man.get_filename());
    std::fs::write(&path, man_page(command, &man)?)
        .with_context(|| format!("cannot write the man page of {}", command.get_name()))?;
    Ok(())
}

fn man_page(command: &clap::Command, man: &clap_mangen::Man) -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if command.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    let name = command
        .get_display_name()
        .unwrap_or_else(|| command.get_name());
    let mut roff = Roff::new();
    if let Some(examples) = command.get_after_help() {
        examples_section(&mut roff, &examples.to_string());
    }
    for section in sections_of(name) {
        section.render(&mut roff);
    }
    roff.to_writer(&mut page)?;
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// EXAMPLES from an `after_help` of the form "Examples:\n  COMMAND\n  COMMAND...", each line
/// kept as it is (a command continued with `\` stays indented under it).
fn examples_section(roff: &mut Roff, after_help: &str) {
    roff.control("SH", ["EXAMPLES"]);
    roff.control("RS", []).control("nf", []);
    for line in after_help.lines().skip_while(|l| l.ends_with(':')) {
        roff.text([roman(line.strip_prefix("  ").unwrap_or(line))]);
    }
    roff.control("fi", []).control("RE", []);
}

/// A section of a page: its title, and items (a term and what it means) or paragraphs.
struct Section {
    title: &'static str,
    /// `(term, text)`; an empty term makes a plain paragraph.
    items: Vec<(&'static str, String)>,
}

impl Section {
    fn render(&self, roff: &mut Roff) {
        roff.control("SH", [self.title]);
        for (term, text) in &self.items {
            if term.is_empty() {
                roff.control("PP", []).text([roman(text.as_str())]);
            } else {
                roff.control("TP", [])
                    .text([bold(*term)])
                    .text([roman(text.as_str())]);
            }
        }
    }
}

fn items(title: &'static str, items: &[(&'static str, &str)]) -> Section {
    Section {
        title,
        items: items.iter().map(|&(t, s)| (t, s.to_string())).collect(),
    }
}

/// EXIT STATUS, the same three values for every command: `failure` says what 1 means for it.
fn exit_status(failure: &str) -> Section {
    exit_statuses(
        "Success.",
        &format!("{failure} The reason is on standard error."),
    )
}

/// EXIT STATUS with the meaning of 0 and 1 as given, 2 a wrong command line.
fn exit_statuses(success: &str, failure: &str) -> Section {
    Section {
        title: "EXIT STATUS",
        items: vec![
            ("0", success.to_string()),
            ("1", failure.to_string()),
            (
                "2",
                "The command line is wrong: an unknown flag, a missing or invalid value."
                    .to_string(),
            ),
        ],
    }
}

/// [`exit_status`] and one more status of the command's own.
fn exit_status_and(failure: &str, (status, meaning): (&'static str, &str)) -> Section {
    let mut section = exit_status(failure);
    section.items.push((status, meaning.to_string()));
    section
}

fn see_also(pages: &str) -> Section {
    items("SEE ALSO", &[("", pages)])
}

/// The sections of a command's page beyond what clap describes, by the page's name.
fn sections_of(page: &str) -> Vec<Section> {
    const RUN_FAILED: &str = "It could not do its work: a file it cannot read or write, a \
                              configuration that does not load, a fabric it cannot open.";
    match page {
        "ibqos" => vec![
            items(
                "ENVIRONMENT",
                &[
                    (
                        "RUST_LOG",
                        "What the commands that log (sm, dump, fabric serve) log, in \
                         tracing-subscriber's syntax (RUST_LOG=ibqos_sm::sa=debug); it wins \
                         over OpenSM's log flags.",
                    ),
                    ("NO_COLOR", "No colour in the log, even on a terminal."),
                ],
            ),
            exit_status(RUN_FAILED),
            see_also(
                "ibqos-sm(8), ibqos-check(8), ibqos-plan(8), ibqos-migrate(8), ibqos-sim(8), \
                 ibqos-lft-balance(8), ibqos-credit-loops(8), \
                 ibqos-traffic(5), ibqos-ctl(8), opensm(8)",
            ),
        ],
        "ibqos-check" => vec![exit_status(
            "A file has an error (with --strict, a warning), or cannot be read.",
        )],
        "ibqos-plan" => vec![exit_status(
            "The configuration has an error (with --strict, a warning), or cannot be read.",
        )],
        "ibqos-migrate" => vec![exit_status(
            "The input has an error, OUTPUT exists without --force, or (with --strict) \
             something would be lost; nothing is written.",
        )],
        "ibqos-sm" => sm_sections(),
        "ibqos-sim" => vec![
            items(
                "ENVIRONMENT",
                &[(
                    "GLIBC_TUNABLES",
                    "glibc.malloc.hugetlb=1 backs the simulator's tables with huge pages \
                     where transparent huge pages are left to madvise; on fabrics of \
                     thousands of hosts runs are a little faster.",
                )],
            ),
            exit_status_and(
                "The topology, configuration, dump or traffic file has an error, or \
                 cannot be read.",
                (
                    "3",
                    "A credit loop stopped the simulated fabric (InfiniBand, one thread): \
                     the report names its channels, and the run stopped there.",
                ),
            ),
            see_also("ibqos-traffic(5), ibqos-dump(8), ibqos(8)"),
        ],
        "ibqos-fabric-serve" => vec![
            items(
                "SIGNALS",
                &[(
                    "SIGTERM, SIGINT, SIGHUP",
                    "Stop serving; with --dump, every port's state is written first.",
                )],
            ),
            exit_status(RUN_FAILED),
        ],
        "ibqos-ctl" => vec![
            items(
                "FILES",
                &[(
                    "/run/ibqos/GUID/ctl.sock",
                    "The control socket of the daemon on port GUID under systemd \
                     (ibqos@GUID.service), mode 0600. Without --socket, the one daemon's \
                     socket under /run/ibqos is used.",
                )],
            ),
            exit_status("The daemon could not be reached, or refused the request."),
        ],
        "ibqos-ports" => vec![
            items(
                "FILES",
                &[(
                    "/sys/class/infiniband",
                    "Where the ports, their GUIDs, states and rates are read.",
                )],
            ),
            exit_status(RUN_FAILED),
        ],
        "ibqos-lft-balance" => vec![
            exit_status(
                "The topology, configuration or dump cannot be read or does not fit, no \
                 routing engine routes the fabric, or a Get of the live fabric was not \
                 answered after its retries. An unbalanced switch is no failure.",
            ),
            see_also("check_lft_balance(8), ibqos-dump(8), ibqos-sim(8)"),
        ],
        "ibqos-credit-loops" => vec![
            exit_statuses(
                "No credit loop exists.",
                "A credit loop exists, and standard output names it. Or the check could not \
                 run, and standard error says why: the topology, configuration or dump cannot \
                 be read or does not fit, no routing engine routes the fabric, or a Get of \
                 the live fabric was not answered after its retries.",
            ),
            see_also("ibqos-dump(8), ibqos-lft-balance(8), ibqos-sim(8)"),
        ],
        "ibqos-dump" | "ibqos-query" => vec![exit_status(
            "The fabric could not be opened, or a Get was not answered after its retries.",
        )],
        page if page.starts_with("ibqos-fabric") || page.starts_with("ibqos-ctl-") => {
            vec![exit_status(RUN_FAILED)]
        }
        _ => Vec::new(),
    }
}

/// The daemon's page: how it is driven and what it touches.
fn sm_sections() -> Vec<Section> {
    vec![
        items(
            "SIGNALS",
            &[
                (
                    "SIGHUP",
                    "Reads the configuration again and sweeps, applying it to the ports it \
                     affects, and logs for each changed option whether it applies from this \
                     sweep, only after a restart, or not at all. A configuration that does not \
                     load is logged and the old one kept. Under systemd: RELOADING=1, then \
                     READY=1.",
                ),
                ("SIGCONT", "The same as SIGHUP, as in OpenSM."),
                (
                    "SIGUSR1",
                    "Opens --log-file again at its path, so that logrotate can move the file \
                     away; nothing without --log-file.",
                ),
                (
                    "SIGTERM, SIGINT",
                    "Stops: STOPPING=1 under systemd, the port's SM claim released, the \
                     control socket removed; with --dump-fabric, the fabric's state written.",
                ),
            ],
        ),
        items(
            "FILES",
            &[
                (
                    "/etc/opensm/opensm.conf",
                    "OpenSM's configuration, as -F names it; ibqos.toml with -c.",
                ),
                (
                    "/etc/opensm/qos-policy.conf, /etc/opensm/partitions.conf",
                    "The QoS policy and the partitions, where the configuration's \
                     qos_policy_file and partition_config_file say.",
                ),
                (
                    "/var/cache/ibqos/guid2lid, guid2mkey, neighbors",
                    "The LID cache and the M_Key caches (guid2mkey mode 0600), in \
                     $OSM_CACHE_DIR or --cache-dir when given. On an emulated or ibsim \
                     fabric there is no cache unless one of those names a directory.",
                ),
                (
                    "/var/log/opensm-subnet.lst, opensm-lfts.dump, opensm-sl2vl.dump, \
                     ibqos-vlarb.dump",
                    "OpenSM's dump files, written in dump_files_dir after every sweep that \
                     brings the subnet up: the LFTs with the ROUTING log flag (0x40), the \
                     SL2VL and VLArb tables with it and qos TRUE. On an emulated or ibsim \
                     fabric, not in OpenSM's default /var/log/.",
                ),
                (
                    "/run/ibqos/GUID/ctl.sock",
                    "The control socket under systemd, for ibqos-ctl(8); --control-socket \
                     elsewhere.",
                ),
                (
                    "/dev/infiniband/umadN, issmN",
                    "The kernel's user MAD interface, on --fabric umad.",
                ),
                (
                    "/etc/default/ibqos",
                    "PORTS= and IBQOS_OPTS= for the units ibqos.service and \
                     ibqos@GUID.service.",
                ),
            ],
        ),
        items(
            "ENVIRONMENT",
            &[
                (
                    "OSM_CACHE_DIR",
                    "The cache directory, as OpenSM reads it, when --cache-dir is not given.",
                ),
                ("RUST_LOG", "What is logged; wins over -D and log_flags."),
                (
                    "NOTIFY_SOCKET, WATCHDOG_USEC",
                    "Set by systemd (Type=notify): the daemon reports READY=1, its status \
                     after each sweep, and the watchdog.",
                ),
                (
                    "JOURNAL_STREAM",
                    "Set by systemd: when standard error is the journal, each log record is \
                     one line with its priority and no timestamp.",
                ),
                (
                    "RUNTIME_DIRECTORY",
                    "Set by systemd: where the control socket is made without \
                     --control-socket.",
                ),
            ],
        ),
        exit_status(
            "With --once, the subnet did not come up; or the SM could not start: a \
             configuration that does not load, a fabric it cannot open, a metrics port in use.",
        ),
        see_also(
            "ibqos-ctl(8), ibqos-check(8), ibqos-dump(8), ibqos(8), opensm(8), systemd.service(5)",
        ),
    ]
}
