//! The SA oracle: the same `saquery` and `osmtest` commands against OpenSM and against ibqos,
//! each on a fresh ibsim of the same net file with the SM attached at the same node.
//!
//! A [`Session`] is one SM (either kind) running as a daemon on its own ibsim. Its [`Session::run`]
//! runs one [`Query`] as a short-lived ibsim client at the fabric's query node, and returns a
//! [`Transcript`]. The transcript holds what the client printed (for people) and the text the
//! comparison uses. The two differ only by the normalisations below, each named and justified where
//! it is applied. [`assert_same_answers`] runs a list of queries against both SMs, and fails with a
//! unified diff per command that answered differently.
//!
//! Under ibsim every SA answer is one MAD: neither umad2sim nor ibsim does RMPP, so a GetTable
//! answer keeps the records that fit in the first 200 data bytes (ibsim `umad2sim.c:900-902`).
//! That holds for both SMs, so comparing their outputs cancels it.
//!
//! Two environment variables serve the people developing ibqos's SA:
//! - `IBQOS_SA_SUBJECT=opensm` runs OpenSM in place of ibqos (a fresh OpenSM on a fresh ibsim):
//!   the harness's self-check, which must pass; it shows the normalisations are enough.
//! - `IBQOS_SA_ORACLE_OUT=DIR` writes every command's two transcripts, raw, under `DIR`.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::daemon::Daemon;
use crate::opensm::OpenSmDaemon;
use crate::process::{Ended, command_line, run_limited};
use crate::readback::{PortKey, endports, port_name, port_targets};
use crate::scenario::Fabric;
use crate::sm::{SmFabric, SmInvocation};
use crate::smpquery::SmpQuery;
use crate::{Error, Ibsim, NodeKind, Result, SimTools, TestDir, Tool};

/// saquery against ibsim answers in about 30 ms; its own retries (libibmad: 3 × 1 s) end a query
/// that gets no answer well within this.
const SAQUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// `osmtest -f f` sends 100,000 PortInfoRecord queries after its GetTables: about 15 s against
/// OpenSM on ibsim.
const OSMTEST_STRESS_TIMEOUT: Duration = Duration::from_secs(180);

/// The other osmtest flows take well under a second against OpenSM on ibsim when they end; but
/// `-f a` never ends there: it waits forever for the answer to an SMInfoRecord Set that OpenSM
/// drops (OpenSM `osm_sa_mad_ctrl.c` "Dispatcher post message failed"; osmtest's own 3 × 1 s
/// timeout does not fire under umad2sim). Being killed at this limit is then the outcome both SMs
/// must share, with the same log up to it.
const OSMTEST_TIMEOUT: Duration = Duration::from_secs(12);

/// How long `ibqos sm` may take to report its first sweep.
const IBQOS_UP_TIMEOUT: Duration = Duration::from_secs(60);

/// Environment variable: `opensm` makes OpenSM the subject too (the harness's self-check).
pub const SUBJECT_VAR: &str = "IBQOS_SA_SUBJECT";
/// Environment variable: a directory to write every command's transcripts into.
pub const OUT_VAR: &str = "IBQOS_SA_ORACLE_OUT";

/// The SA clients: saquery (infiniband-diags) and osmtest (OpenSM's SA test suite).
#[derive(Debug, Clone)]
pub struct SaTools {
    pub sim: SimTools,
    pub saquery: Tool,
    pub osmtest: Tool,
}

impl SaTools {
    /// # Panics
    /// If a program is missing, naming its apt package.
    pub fn require() -> SaTools {
        SaTools {
            sim: SimTools::require(),
            saquery: Tool::require("saquery", "infiniband-diags"),
            osmtest: Tool::require("osmtest", "opensm"),
        }
    }
}

/// Which subnet manager runs the SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmKind {
    OpenSm,
    Ibqos,
}

impl SmKind {
    /// The SM the oracle is compared with: ibqos, or OpenSM when [`SUBJECT_VAR`] says so.
    ///
    /// # Panics
    /// On a value of [`SUBJECT_VAR`] other than `opensm` or `ibqos`.
    pub fn subject() -> SmKind {
        match std::env::var(SUBJECT_VAR).as_deref() {
            Err(_) | Ok("ibqos") => SmKind::Ibqos,
            Ok("opensm") => SmKind::OpenSm,
            Ok(other) => panic!("{SUBJECT_VAR}={other:?}: expected `opensm` or `ibqos`"),
        }
    }
}

impl fmt::Display for SmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SmKind::OpenSm => "OpenSM",
            SmKind::Ibqos => "ibqos",
        })
    }
}

/// One osmtest flow (`-f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// `c`: writes the inventory file every other flow but stress reads.
    Inventory,
    /// `f`: SA stress; prints its query rates.
    Stress,
    /// `q`: VLArb and SL2VL record Gets for every port, written to qos.txt.
    QosTables,
    /// `a`: validation against the inventory, the wrong-SM_Key check, services.
    All,
    /// `s`: ServiceRecord registration, queries, leases, deletion.
    Services,
    /// `m`: multicast: MCMemberRecord joins, creates, leaves and queries.
    Multicast,
}

impl Flow {
    fn letter(self) -> &'static str {
        match self {
            Flow::Inventory => "c",
            Flow::Stress => "f",
            Flow::QosTables => "q",
            Flow::All => "a",
            Flow::Services => "s",
            Flow::Multicast => "m",
        }
    }
}

/// A command run as a client of the SM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `saquery ARGS`.
    Saquery(Vec<String>),
    /// `osmtest -f FLOW`, with the inventory file of the session.
    Osmtest(Flow),
}

impl Query {
    /// `saquery` with `args` split at spaces.
    pub fn saquery(args: &str) -> Query {
        Query::Saquery(args.split_whitespace().map(str::to_owned).collect())
    }

    /// The command as a person would type it (without the session's paths).
    pub fn display(&self) -> String {
        match self {
            Query::Saquery(args) => std::iter::once("saquery")
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Query::Osmtest(flow) => format!("osmtest -f {}", flow.letter()),
        }
    }
}

/// What one command printed, and the text compared between the SMs.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// [`Query::display`].
    pub command: String,
    /// Everything it printed and wrote, unnormalised.
    pub raw: String,
    /// What is compared: `raw` reduced to what both SMs must agree on.
    pub compared: String,
}

/// The LID of every endport, as an SM assigned them.
pub type Lids = BTreeMap<PortKey, u16>;

/// What both SMs of a comparison run with: opensm.conf lines and, if any, a qos-policy.conf.
#[derive(Debug, Clone, Copy, Default)]
pub struct SmSetup<'a> {
    /// Lines added to the opensm.conf both SMs read.
    pub options: &'a str,
    /// The qos-policy.conf both SMs read, instead of the default level alone.
    pub policy: Option<&'a str>,
    /// The partitions.conf both SMs read, instead of the harness's Default line alone.
    pub partitions: Option<&'a str>,
}

impl SmSetup<'_> {
    /// The opensm.conf lines that point at `setup`'s policy, written into `dir`, and its
    /// options.
    fn conf_lines(&self, dir: &Path) -> Result<String> {
        let mut lines = String::new();
        if let Some(policy) = self.policy {
            let path = dir.join("test-qos-policy.conf");
            std::fs::write(&path, policy)
                .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
            writeln!(lines, "qos_policy_file {}", path.display()).unwrap();
        }
        if let Some(partitions) = self.partitions {
            let path = dir.join("test-partitions.conf");
            std::fs::write(&path, partitions)
                .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
            writeln!(lines, "partition_config_file {}", path.display()).unwrap();
        }
        lines.push_str(self.options);
        Ok(lines)
    }
}

/// What simulates the fabric a session runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// ibsim itself.
    #[default]
    Ibsim,
    /// `ibqos fabric serve`: ibqos's emulated fabric behind ibsim's protocol.
    Served,
}

/// An SM running as a daemon on a fresh ibsim of a fabric. Both are killed by their PIDs on drop.
#[derive(Debug)]
pub struct Session<'a> {
    pub kind: SmKind,
    tools: &'a SaTools,
    fabric: &'a Fabric,
    /// Dropped before `sim`: the SM goes first, as it is ibsim's client.
    sm: RunningSm,
    sim: Ibsim,
    /// The clients' working directory (umad2sim's fake sysfs, osmtest's files).
    client_dir: PathBuf,
    /// The LIDs the SM assigned, read back by directed route.
    pub lids: Lids,
}

#[derive(Debug)]
enum RunningSm {
    OpenSm(OpenSmDaemon),
    Ibqos(Daemon),
}

impl RunningSm {
    fn output(&self) -> String {
        match self {
            RunningSm::OpenSm(d) => d.output(),
            RunningSm::Ibqos(d) => d.output(),
        }
    }
}

impl<'a> Session<'a> {
    /// Starts ibsim on `fabric` in `dir`, then the SM at `fabric.sm_node`, waits until it
    /// reports the subnet up, and reads back the LIDs it assigned.
    pub fn start(
        kind: SmKind,
        tools: &'a SaTools,
        fabric: &'a Fabric,
        setup: &SmSetup,
        dir: &Path,
    ) -> Result<Session<'a>> {
        Session::start_on(Backend::Ibsim, kind, tools, fabric, setup, dir)
    }

    /// [`Session::start`] on the fabric `backend` simulates.
    pub fn start_on(
        backend: Backend,
        kind: SmKind,
        tools: &'a SaTools,
        fabric: &'a Fabric,
        setup: &SmSetup,
        dir: &Path,
    ) -> Result<Session<'a>> {
        let sim = match backend {
            Backend::Ibsim => Ibsim::start(&tools.sim, &fabric.netfile, dir)?,
            Backend::Served => Ibsim::serve(
                &tools.sim,
                &crate::planner::ibqos_binary()?,
                &fabric.netfile,
                &fabric.sm_node,
                dir,
            )?,
        };
        let conf_lines = setup.conf_lines(dir)?;
        let sm = match kind {
            SmKind::OpenSm => {
                let osm_dir = dir.join("opensm");
                create_dir(&osm_dir)?;
                RunningSm::OpenSm(OpenSmDaemon::start(
                    &tools.sim,
                    &sim,
                    &fabric.sm_node,
                    &conf_lines,
                    &osm_dir,
                )?)
            }
            SmKind::Ibqos => {
                let ibqos = crate::planner::ibqos_binary()?;
                let cache = dir.join("ibqos-cache");
                create_dir(&cache)?;
                let conf = dir.join("ibqos-opensm.conf");
                std::fs::write(&conf, &conf_lines)
                    .map_err(|e| Error::new(format!("cannot write {}: {e}", conf.display())))?;
                let invocation =
                    SmInvocation::new(SmFabric::Native, &fabric.sm_node, &cache).opensm_conf(&conf);
                let mut daemon = Daemon::start(&invocation, &ibqos, &sim)?;
                let first = daemon.next_summary(IBQOS_UP_TIMEOUT)?;
                if first["subnet_up"] != true {
                    return Err(Error::new(format!(
                        "ibqos's first sweep did not bring the subnet up: {first}\n{}",
                        daemon.output()
                    )));
                }
                RunningSm::Ibqos(daemon)
            }
        };
        let client_dir = dir.join("clients");
        create_dir(&client_dir)?;
        let lids = read_lids(&tools.sim, &sim, fabric)
            .map_err(|e| e.context(format!("reading back the LIDs {kind} assigned")))?;
        Ok(Session {
            kind,
            tools,
            fabric,
            sm,
            sim,
            client_dir,
            lids,
        })
    }

    /// The fabric the SM runs on, for clients of the test's own.
    pub fn sim(&self) -> &Ibsim {
        &self.sim
    }

    /// The SM's log so far, for failure messages.
    pub fn sm_output(&self) -> String {
        self.sm.output()
    }

    /// Runs `query` at the fabric's query node. A client that fails or hangs is a transcript,
    /// not an error: that is what the comparison is about. An error means the harness could not
    /// run it at all.
    pub fn run(&self, query: &Query) -> Result<Transcript> {
        match query {
            Query::Saquery(args) => {
                let mut cmd = self.client(&self.tools.saquery.path);
                cmd.args(args);
                let ended = run_limited(&mut cmd, SAQUERY_TIMEOUT)?;
                let raw = transcript_text(&command_line(&cmd), &ended, SAQUERY_TIMEOUT);
                let compared = normalise_saquery(&raw);
                Ok(Transcript {
                    command: query.display(),
                    raw,
                    compared,
                })
            }
            Query::Osmtest(flow) => self.osmtest(*flow, query.display()),
        }
    }

    fn osmtest(&self, flow: Flow, command: String) -> Result<Transcript> {
        let inventory = self.client_dir.join("osmtest.dat");
        let log = self
            .client_dir
            .join(format!("osmtest-{}.log", flow.letter()));
        let mut cmd = self.client(&self.tools.osmtest.path);
        cmd.args(["-f", flow.letter(), "-i"])
            .arg(&inventory)
            .arg("-l")
            .arg(&log);
        let limit = match flow {
            Flow::Stress => OSMTEST_STRESS_TIMEOUT,
            _ => OSMTEST_TIMEOUT,
        };
        let ended = run_limited(&mut cmd, limit)?;
        let mut raw = transcript_text(&command_line(&cmd), &ended, limit);
        let log_text = read_optional(&log);
        if !log_text.is_empty() {
            write!(raw, "--- log ---\n{log_text}").unwrap();
        }
        let mut compared = format!(
            "$ {command}\n{}\n{}\n",
            outcome(&ended, limit),
            verdict(&ended)
        );
        // What each flow must agree on beyond how it ended and its verdict. Stress has nothing
        // more: everything else it prints is timing.
        let agreed = match flow {
            // The inventory: every record it read, one field a line.
            Flow::Inventory => {
                let text = read_optional(&inventory);
                write!(raw, "--- inventory ---\n{text}").unwrap();
                Some((
                    "inventory",
                    drop_inventory_links_past_clean_bytes(&drop_comment_lines(&text)),
                ))
            }
            // The VLArb and SL2VL tables it read.
            Flow::QosTables => {
                let text = read_optional(&self.client_dir.join("qos.txt"));
                write!(raw, "--- qos.txt ---\n{text}").unwrap();
                Some(("qos.txt", text))
            }
            // Where it stopped: its log has a line per failed or expected-to-fail step.
            Flow::All | Flow::Services | Flow::Multicast => {
                Some(("log", normalise_osmtest_log(&log_text)))
            }
            Flow::Stress => None,
        };
        if let Some((name, text)) = agreed {
            write!(compared, "--- {name} ---\n{text}").unwrap();
        }
        Ok(Transcript {
            command,
            raw,
            compared,
        })
    }

    fn client(&self, program: &Path) -> Command {
        let mut cmd = self.sim.client(program, &self.fabric.query_node);
        cmd.current_dir(&self.client_dir);
        cmd
    }
}

/// The LID of every endport, by PortInfo read by directed route from the query node.
fn read_lids(tools: &SimTools, sim: &Ibsim, fabric: &Fabric) -> Result<Lids> {
    let query = SmpQuery::new(tools, sim, &fabric.query_node);
    let wanted = endports(&fabric.topology);
    let mut lids = Lids::new();
    for port in port_targets(&fabric.topology, &fabric.query_node)? {
        let key = (port.node.id.clone(), port.port);
        if wanted.contains(&key) {
            lids.insert(key, port.portinfo(&query)?.lid);
        }
    }
    Ok(lids)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))
}

/// A file a client may or may not have written; empty if it did not.
fn read_optional(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// How a client ended, as one line.
fn outcome(ended: &Ended, limit: Duration) -> String {
    match ended {
        Ended::Exited(done) => format!("--- {}", done.status),
        Ended::Killed { .. } => format!("--- still running after {limit:?}: killed"),
    }
}

/// osmtest's verdict, `OSMTEST: TEST "<flow>" PASS|FAIL`, or a line saying there was none.
fn verdict(ended: &Ended) -> String {
    let stdout = match ended {
        Ended::Exited(done) => done.stdout.as_str(),
        Ended::Killed { stdout, .. } => stdout.as_str(),
    };
    stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("OSMTEST: TEST"))
        .unwrap_or("(no OSMTEST verdict)")
        .to_owned()
}

/// The command line, both streams and how it ended.
fn transcript_text(line: &str, ended: &Ended, limit: Duration) -> String {
    let (stdout, stderr) = match ended {
        Ended::Exited(done) => (&done.stdout, &done.stderr),
        Ended::Killed { stdout, stderr } => (stdout, stderr),
    };
    let mut text = format!("$ {line}\n{stdout}");
    if !stderr.is_empty() {
        write!(text, "--- stderr ---\n{stderr}").unwrap();
    }
    writeln!(text, "{}", outcome(ended, limit)).unwrap();
    text
}

/// What the comparison of a saquery transcript ignores. The command line is replaced by the
/// typed command (the real one names this session's paths); then:
fn normalise_saquery(raw: &str) -> String {
    let mut text = String::new();
    let mut lines = raw.lines();
    if let Some(first) = lines.next() {
        let shown = first.rsplit_once("saquery").map_or(first, |(_, rest)| rest);
        writeln!(text, "$ saquery{shown}").unwrap();
    }
    for line in lines {
        text.push_str(&mask_field(&mask_field(line, "ActCount"), "LocalPort"));
        text.push('\n');
    }
    drop_records_past_clean_bytes(&text)
}

/// Two fields depend on how an SM went about its work, not on what it answers; masked:
/// - SMInfo's ActCount (IBA 14.2.5.13), a counter the master increments as it works;
/// - PortInfo's LocalPortNum in a PortInfoRecord, the port of the node the SM's last PortInfo
///   SMP arrived by. For a switch reached by two parallel links that is the link the SM's
///   route to it took, which OpenSM, receiving on several threads, picks by timing: one CI run
///   of the partitions test had OpenSM answer 4 for two-switch's S2, where it answers 3 run
///   after run here.
fn mask_field(line: &str, field: &str) -> String {
    match line.trim_start().strip_prefix(field) {
        Some(rest) if rest.starts_with(['.', ':']) => {
            // The field's name, then its leader of dots (and colon), then the value.
            let leader = rest.len() - rest.trim_start_matches(['.', ':']).len();
            let kept = line.len() - rest.len() + leader;
            format!("{}<masked>", &line[..kept])
        }
        _ => line.to_owned(),
    }
}

/// The data bytes of one SA MAD (256 bytes less the 56-byte SA header): all a GetTable answer
/// carries on ibsim.
const MAD_DATA_BYTES: usize = 200;

/// The data bytes of a one-MAD answer from OpenSM on ibsim that hold its records. The last 32 bytes
/// of the MAD (224-255) do not. Two OpenSM runs on fresh ibsims of the same net file sent the same
/// zeros and 0x2500 there, and bytes 240-247 differed from run to run. That was seen in LinkRecord
/// and SL2VLTableRecord answers; it is also why `osmtest -f s` finds "Data mismatch in
/// service_data8" against OpenSM.
const CLEAN_DATA_BYTES: usize = 168;

/// Whether record `index` (from 0) of an answer of `count` records of `size` bytes is compared:
/// every record of an answer short of a full MAD, and of a full one those that end within
/// [`CLEAN_DATA_BYTES`].
fn record_is_clean(size: usize, count: usize, index: usize) -> bool {
    count != MAD_DATA_BYTES / size || (index + 1) * size <= CLEAN_DATA_BYTES
}

/// Sizes of the records whose full one-MAD answers reach past [`CLEAN_DATA_BYTES`] with more
/// than one record, by saquery's header for them (OpenSM `ib_types.h` record layouts).
const RECORD_SIZES: [(&str, usize); 6] = [
    ("LinkRecord dump:", 8),
    ("SL2VLTableRecord dump:", 16),
    ("SwitchInfoRecord dump:", 24),
    ("SMInfoRecord dump:", 32),
    ("PathRecord dump:", 64),
    ("InformInfoRecord dump:", 64),
];

/// A saquery answer without the records it printed from MAD bytes past [`CLEAN_DATA_BYTES`],
/// with a line saying how many were dropped. A record is its header line (not indented) and the
/// indented lines after it.
fn drop_records_past_clean_bytes(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(&(header, size)) = RECORD_SIZES
        .iter()
        .find(|(header, _)| lines.contains(header))
    else {
        return text.to_owned();
    };
    let count = lines.iter().filter(|l| **l == header).count();
    let mut out = String::new();
    let mut index = None;
    let mut dropped = 0;
    for line in lines {
        if line == header {
            index = Some(index.map_or(0, |i| i + 1));
        } else if !line.starts_with(char::is_whitespace) {
            if dropped > 0 {
                writeln!(
                    out,
                    "({dropped} records from MAD bytes 224-255 not compared)"
                )
                .unwrap();
                dropped = 0;
            }
            index = None;
        }
        match index {
            Some(i) if !record_is_clean(size, count, i) => {
                dropped += usize::from(line == header);
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if dropped > 0 {
        writeln!(
            out,
            "({dropped} records from MAD bytes 224-255 not compared)"
        )
        .unwrap();
    }
    out
}

/// osmtest's inventory with its LinkRecords, if they fill one MAD, cut to those within
/// [`CLEAN_DATA_BYTES`]: it writes every record of its one LinkRecord GetTable as a
/// `DEFINE_LINK` ... `END` block.
fn drop_inventory_links_past_clean_bytes(text: &str) -> String {
    const LINK_RECORD_SIZE: usize = 8;
    let count = text.lines().filter(|l| *l == "DEFINE_LINK").count();
    let mut out = String::new();
    let mut index = 0;
    let mut inside = false;
    for line in text.lines() {
        if line == "DEFINE_LINK" {
            inside = true;
        }
        if !inside || record_is_clean(LINK_RECORD_SIZE, count, index) {
            out.push_str(line);
            out.push('\n');
        }
        if inside && line == "END" {
            inside = false;
            index += 1;
        }
    }
    out
}

/// osmtest names the services it registers after its own PID and derives their IDs from it
/// (`id = abs(pid - random())`, OpenSM `osmtest/osmt_service.c:1224-1247`): both are masked in
/// its log.
fn mask_service_names(line: &str) -> String {
    if !line.contains("osmt.srvc.") {
        return line.to_owned();
    }
    let mut after_id = false;
    line.split(' ')
        .map(|word| {
            let masked = if after_id {
                "<from pid>".to_owned()
            } else if let Some((name, _pid)) = word
                .strip_prefix("osmt.srvc.")
                .and_then(|rest| rest.rsplit_once('.'))
            {
                format!("osmt.srvc.{name}.<pid>")
            } else {
                word.to_owned()
            };
            after_id = word == "id:";
            masked
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// osmtest's inventory without its comment lines: the issue's own criterion. osmtest writes a
/// header comment per section and, as comments, the fields it does not read back (port_num,
/// vendor_id, node_desc of a NodeRecord); its parser skips them (OpenSM
/// `osmtest/osmtest.c`, `osmtest_parse_node`).
fn drop_comment_lines(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .fold(String::new(), |mut out, l| {
            out.push_str(l);
            out.push('\n');
            out
        })
}

/// osmtest's log lines without their prefix, a timestamp and a thread id
/// (`Nov 23 22:55:34 875571 [A7C1E400] 0x01 -> text`), and with [`mask_service_names`]. The
/// level and the text are kept.
fn normalise_osmtest_log(text: &str) -> String {
    text.lines()
        .map(|l| mask_service_names(l.split_once("] ").map_or(l, |(_, rest)| rest).trim_end()))
        .fold(String::new(), |mut out, l| {
            out.push_str(&l);
            out.push('\n');
            out
        })
}

/// A unified-style diff of two texts by line: `-` lines only in `reference`, `+` lines only in
/// `subject`, `context` unchanged lines around each change. Empty if they are equal.
pub fn unified_diff(reference: &str, subject: &str, context: usize) -> String {
    let a: Vec<&str> = reference.lines().collect();
    let b: Vec<&str> = subject.lines().collect();
    // Longest common subsequence, by suffix lengths.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let shown = |k: usize| changed.iter().any(|&c| c.abs_diff(k) <= context);
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (sign, line)) in ops.iter().enumerate().filter(|&(k, _)| shown(k)) {
        // A gap of unchanged lines between two hunks (or before the first).
        if last_shown.map_or(k > 0, |last| k > last + 1) {
            out.push_str("@@\n");
        }
        writeln!(out, "{sign}{line}").unwrap();
        last_shown = Some(k);
    }
    out
}

/// The diff of every command whose compared text differs, as one message per command.
pub fn compare(
    reference: SmKind,
    ours: &[Transcript],
    subject: SmKind,
    theirs: &[Transcript],
) -> Vec<String> {
    ours.iter()
        .zip(theirs)
        .filter_map(|(a, b)| {
            let diff = unified_diff(&a.compared, &b.compared, 3);
            (!diff.is_empty()).then(|| {
                format!(
                    "`{}` answers differently (- {reference}, + {subject}):\n{diff}",
                    a.command
                )
            })
        })
        .collect()
}

/// The LIDs as a table, one endport a line.
pub fn lid_table(lids: &Lids) -> String {
    lids.iter().fold(String::new(), |mut out, (key, lid)| {
        writeln!(out, "{:<10} {lid}", port_name(key)).unwrap();
        out
    })
}

/// The LIDs of every endport, sorted and without duplicates.
pub fn lid_list(lids: &Lids) -> Vec<u16> {
    let mut list: Vec<u16> = lids.values().copied().collect();
    list.sort_unstable();
    list.dedup();
    list
}

/// The endports of `fabric` with their port numbers as PortInfoRecord knows them: every linked
/// port of a switch (and its port 0) under the switch's LID, a CA port under its own.
pub fn port_info_targets(fabric: &Fabric, lids: &Lids) -> Vec<(u16, u8)> {
    let mut targets = Vec::new();
    for node in fabric.topology.nodes() {
        match node.kind {
            NodeKind::Switch => {
                if let Some(&lid) = lids.get(&(node.id.clone(), 0)) {
                    targets.push((lid, 0));
                    targets.extend(node.links.keys().map(|&p| (lid, p)));
                }
            }
            _ => targets.extend(
                node.links
                    .keys()
                    .filter_map(|&p| lids.get(&(node.id.clone(), p)).map(|&lid| (lid, p))),
            ),
        }
    }
    targets
}

/// On each of `fabrics`: runs the queries `build` makes from the reference's LIDs against OpenSM
/// (the reference) and against [`SmKind::subject`], each on a fresh ibsim, and collects a diff
/// per command that answered differently (and both LID tables if the SMs assigned different
/// LIDs, which makes every query naming a LID moot). Panics at the end with all of them. Writes
/// the transcripts under [`OUT_VAR`] if set, in `<fabric>/<group>/`.
pub fn assert_same_answers(
    fabrics: &[Fabric],
    group: &str,
    build: impl Fn(&Fabric, &Lids) -> Vec<Query>,
) {
    assert_same_answers_with(&SmSetup::default(), fabrics, group, build);
}

/// [`assert_same_answers`] with both SMs configured by `setup`.
pub fn assert_same_answers_with(
    setup: &SmSetup,
    fabrics: &[Fabric],
    group: &str,
    build: impl Fn(&Fabric, &Lids) -> Vec<Query>,
) {
    let tools = SaTools::require();
    let dir = TestDir::new(&format!("sa-{group}"));
    let subject = SmKind::subject();
    let mut reports = Vec::new();
    for fabric in fabrics {
        let build = |lids: &Lids| build(fabric, lids);
        let run = |kind, label: &str, lids| {
            let sm_dir = dir.subdir(&format!("{}-{label}", fabric.name));
            run_all(&tools, fabric, kind, setup, &sm_dir, lids, &build)
        };
        let (reference_lids, ours) = run(SmKind::OpenSm, "reference", None);
        let (subject_lids, theirs) = run(subject, "subject", Some(&reference_lids));
        if let Some(out) = std::env::var_os(OUT_VAR) {
            write_out(
                &Path::new(&out).join(&fabric.name).join(group),
                [
                    (SmKind::OpenSm, &reference_lids, &ours[..]),
                    (subject, &subject_lids, &theirs[..]),
                ],
            )
            .unwrap();
        }
        let diffs = compare(SmKind::OpenSm, &ours, subject, &theirs);
        let lids_differ = reference_lids != subject_lids;
        if lids_differ || !diffs.is_empty() {
            let mut report = format!(
                "{}: {} of {} commands answered differently against {subject} than against \
                 OpenSM\n",
                fabric.name,
                diffs.len(),
                ours.len()
            );
            if lids_differ {
                write!(
                    report,
                    "The SMs assigned different LIDs: every comparison by LID is moot.\n\
                     --- OpenSM ---\n{}--- {subject} ---\n{}",
                    lid_table(&reference_lids),
                    lid_table(&subject_lids)
                )
                .unwrap();
            }
            report.push_str(&diffs.join("\n"));
            reports.push(report);
        }
    }
    assert!(reports.is_empty(), "\n{}", reports.join("\n\n"));
}

/// One SM's session: its LIDs and the transcripts of the queries built from `lids` (the
/// reference's, so both SMs run the same command lines) or, for the reference, its own.
fn run_all(
    tools: &SaTools,
    fabric: &Fabric,
    kind: SmKind,
    setup: &SmSetup,
    dir: &Path,
    lids: Option<&Lids>,
    build: &impl Fn(&Lids) -> Vec<Query>,
) -> (Lids, Vec<Transcript>) {
    let session = Session::start(kind, tools, fabric, setup, dir)
        .unwrap_or_else(|e| panic!("{}: starting {kind}: {e}", fabric.name));
    let queries = build(lids.unwrap_or(&session.lids));
    let transcripts = queries
        .iter()
        .map(|q| {
            session.run(q).unwrap_or_else(|e| {
                panic!(
                    "{}: running `{}` against {kind}: {e}",
                    fabric.name,
                    q.display()
                )
            })
        })
        .collect();
    (session.lids.clone(), transcripts)
}

/// Writes both SMs' transcripts into `dir`: `lids.txt`, then one file per command, numbered in the
/// order run, each with the command line on top and what each SM printed below it.
fn write_out(dir: &Path, runs: [(SmKind, &Lids, &[Transcript]); 2]) -> Result<()> {
    create_dir(dir)?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))
    };
    let [
        (ref_kind, ref_lids, ref_runs),
        (sub_kind, sub_lids, sub_runs),
    ] = runs;
    write(
        "lids.txt",
        &format!(
            "LIDs by endport, read back by directed route after each SM's first sweep.\n\n\
             --- {ref_kind} ---\n{}\n--- {sub_kind} ---\n{}",
            lid_table(ref_lids),
            lid_table(sub_lids)
        ),
    )?;
    for (n, (a, b)) in ref_runs.iter().zip(sub_runs).enumerate() {
        let slug: String = a
            .command
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        write(
            &format!("{:03}-{slug}.txt", n + 1),
            &format!(
                "{}\n\n=== {ref_kind} ===\n{}\n=== {sub_kind} ===\n{}",
                a.command, a.raw, b.raw
            ),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified_diff("a\nb\n", "a\nb\n", 3), "");
    }

    #[test]
    fn a_diff_shows_the_changed_record_with_context() {
        let ours = "r1\nlid 1\nsl 0\nend\nr2\nlid 2\nsl 0\nend\n";
        let theirs = "r1\nlid 1\nsl 0\nend\nr2\nlid 2\nsl 1\nend\n";
        assert_eq!(
            unified_diff(ours, theirs, 1),
            "@@\n lid 2\n-sl 0\n+sl 1\n end\n"
        );
    }

    #[test]
    fn a_missing_answer_is_all_minus() {
        assert_eq!(unified_diff("x\ny\n", "", 3), "-x\n-y\n");
    }

    #[test]
    fn act_count_and_local_port_are_masked_and_nothing_else() {
        let masked = |line| mask_field(&mask_field(line, "ActCount"), "LocalPort");
        assert_eq!(
            masked("\t\tActCount..............146"),
            "\t\tActCount..............<masked>"
        );
        assert_eq!(
            masked("\t\tLocalPort:.......................4"),
            "\t\tLocalPort:.......................<masked>"
        );
        assert_eq!(masked("\t\tPriority.......0"), "\t\tPriority.......0");
        assert_eq!(
            masked("\t\tLocalPortNum is not a field"),
            "\t\tLocalPortNum is not a field"
        );
    }

    #[test]
    fn records_past_mad_byte_224_of_a_full_answer_are_dropped() {
        let record = |lid: u16| format!("SL2VLTableRecord dump:\n\t\tLID....{lid}\n\t\tVL: 0|\n");
        let full = format!(
            "$ saquery SL2VL\n{}--- exit status: 0\n",
            (1..=12).map(record).collect::<String>()
        );
        let kept = drop_records_past_clean_bytes(&full);
        assert!(
            kept.contains("LID....10\n") && !kept.contains("LID....11"),
            "{kept}"
        );
        assert!(
            kept.ends_with("(2 records from MAD bytes 224-255 not compared)\n--- exit status: 0\n"),
            "{kept}"
        );
        let short = format!(
            "$ saquery SL2VL\n{}",
            (1..=11).map(record).collect::<String>()
        );
        assert_eq!(drop_records_past_clean_bytes(&short), short);
    }

    #[test]
    fn inventory_links_past_mad_byte_224_are_dropped() {
        let links: String = (1..=25)
            .map(|n| format!("DEFINE_LINK\nfrom_lid {n}\nEND\n\n"))
            .collect();
        let kept = drop_inventory_links_past_clean_bytes(&format!("DEFINE_NODE\nEND\n\n{links}"));
        assert!(kept.starts_with("DEFINE_NODE\nEND\n\nDEFINE_LINK\nfrom_lid 1\n"));
        assert!(
            kept.contains("from_lid 21\n") && !kept.contains("from_lid 22"),
            "{kept}"
        );
    }

    #[test]
    fn service_names_lose_the_pid() {
        assert_eq!(
            mask_service_names(
                "0x02 -> osmt_register_service: Registering service: \
                 name: osmt.srvc.1804289383.23580 id: 0x6b8ae94b"
            ),
            "0x02 -> osmt_register_service: Registering service: \
             name: osmt.srvc.1804289383.<pid> id: <from pid>"
        );
    }

    #[test]
    fn log_prefixes_and_comment_lines_go() {
        assert_eq!(
            normalise_osmtest_log("Nov 23 22:55:34 875571 [A7C1E400] 0x01 -> f: ERR 1\n"),
            "0x01 -> f: ERR 1\n"
        );
        assert_eq!(
            drop_comment_lines("#\n# Node\nlid 0x1\n# port_num 0x1\nEND\n"),
            "lid 0x1\nEND\n"
        );
    }
}
