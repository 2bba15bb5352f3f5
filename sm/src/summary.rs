//! What a sweep did, as an administrator reads it: one JSON object per sweep (`ibqos sm --json`)
//! or a few lines of text.

use std::fmt;
use std::time::{Duration, Instant};

use ibqos_mad::{AttributeId, SmState};
use serde::{Serialize, Serializer};

use crate::election::{MasterSm, StateReason, state_name, state_str};
use crate::engine::sweep::{Change, Phase, Sweep, SweepMode};
use crate::responder::Unsolicited;

/// The end-of-sweep summary.
///
/// The fields are in alphabetical order because that is the order of the JSON object scripts
/// already read (it was built as a `serde_json` map, which sorts its keys).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSummary {
    /// Traps 256 (an SMP failed a port's M_Key check) since the previous sweep ended.
    pub bad_m_key_traps: u64,
    /// Values the fabric held differently from what the sweep programs (Diff and DryRun).
    pub changes: Vec<ChangeSummary>,
    /// How long the sweep took, from its start to its end. Not printed: the printed summary is
    /// what scripts already read (its time to SUBNET UP says as much for a sweep that got there);
    /// monitoring takes it from here.
    #[serde(skip)]
    pub duration: Duration,
    pub error_statuses: u64,
    /// Requests that failed after their retries, or with an error status.
    pub failed_requests: usize,
    pub lids: usize,
    /// Traps 128 (a link changed state) since the previous sweep ended.
    pub link_change_traps: u64,
    /// Datagrams that were no MAD, or no MAD the SM takes, since the previous sweep ended.
    pub malformed_mads: u64,
    /// The master, when it is another SM.
    pub master: Option<MasterSm>,
    /// Answers whose attribute or modifier differed from the request's.
    pub mismatched_answers: u64,
    #[serde(serialize_with = "mode_name")]
    pub mode: SweepMode,
    pub nodes: usize,
    /// Ports whose P_Key table the partition manager programs (end ports and the switch ports
    /// facing them), those holding it as planned, and those left otherwise.
    pub pkey_ports_configured: usize,
    pub pkey_ports_failed: usize,
    pub pkey_ports_verified: usize,
    pub ports: usize,
    /// Ports left not ACTIVE although linked.
    pub ports_not_active: usize,
    pub qos_ports_configured: usize,
    pub qos_ports_failed: usize,
    pub qos_ports_verified: usize,
    /// How the sweep ended: "subnet up", "incomplete: ...", "failed: ...".
    pub result: String,
    pub retries: u64,
    /// SMInfo requests from other SMs since the previous sweep ended.
    pub sm_info_requests: u64,
    /// The SM's state when the sweep ended (IBA 14.4: MASTER, STANDBY, ...), and why.
    #[serde(serialize_with = "state_str")]
    pub sm_state: SmState,
    pub sm_state_reason: StateReason,
    /// SMPs sent, by attribute and method, in the scheduler's order.
    pub smps: Vec<SmpCount>,
    pub smps_sent: u64,
    pub subnet_up: bool,
    /// The sweep's number in this run, from 1.
    pub sweep: u32,
    pub switches: usize,
    pub time_to_subnet_up_ms: Option<f64>,
    pub timeouts: u64,
    /// Traps of any kind since the previous sweep ended.
    pub traps: u64,
    /// Received MADs that matched no outstanding request.
    pub unmatched_answers: u64,
    /// Requests the SM does not handle (SA queries, other attributes) since the previous sweep
    /// ended.
    pub unsupported_requests: u64,
}

/// The SM's state, as a summary reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmSummary {
    pub state: SmState,
    pub reason: StateReason,
    pub master: Option<MasterSm>,
}

/// One value a Diff or DryRun sweep found the fabric holding differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeSummary {
    #[serde(serialize_with = "attribute_id_name")]
    pub attribute: AttributeId,
    /// Each difference, as `field: held -> programmed`.
    pub differences: Vec<String>,
    #[serde(serialize_with = "hex")]
    pub modifier: u32,
    /// Whether the Set was sent (false in a dry run).
    pub sent: bool,
    /// Which node and port or table.
    pub target: String,
}

/// How many SMPs of one attribute and method the sweep sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmpCount {
    pub attribute: String,
    pub count: u64,
    pub method: String,
}

impl SweepSummary {
    /// The summary of a sweep that finished at `now`, numbered `number`, with what reached the
    /// SM since the previous sweep ended, and the SM's state as the sweep ended.
    pub fn new(
        sweep: &Sweep,
        mode: SweepMode,
        number: u32,
        unsolicited: &Unsolicited,
        state: SmSummary,
        now: Instant,
    ) -> Self {
        let counts = sweep.counts();
        let qos = sweep.qos_counts();
        let pkeys = sweep.pkey_counts();
        let stats = sweep.stats();
        SweepSummary {
            bad_m_key_traps: unsolicited.bad_m_keys,
            changes: sweep.changes().iter().map(ChangeSummary::from).collect(),
            duration: now.saturating_duration_since(sweep.started()),
            error_statuses: stats.total_error_statuses(),
            failed_requests: counts.failed_requests,
            lids: counts.lids,
            link_change_traps: unsolicited.link_changes,
            malformed_mads: unsolicited.malformed,
            master: state.master,
            mismatched_answers: stats.mismatched,
            mode,
            nodes: counts.nodes,
            pkey_ports_configured: pkeys.configured,
            pkey_ports_failed: pkeys.failed,
            pkey_ports_verified: pkeys.verified,
            ports: counts.ports,
            ports_not_active: counts.ports_not_active,
            qos_ports_configured: qos.configured,
            qos_ports_failed: qos.failed,
            qos_ports_verified: qos.verified,
            result: result(sweep.phase(), mode),
            retries: stats.retries,
            sm_info_requests: unsolicited.sm_info,
            sm_state: state.state,
            sm_state_reason: state.reason,
            smps: stats
                .sent
                .iter()
                .map(|(&(attribute, method), &count)| SmpCount {
                    attribute: attribute.to_string(),
                    count,
                    method: method.to_string(),
                })
                .collect(),
            smps_sent: stats.total_sent(),
            subnet_up: *sweep.phase() == Phase::SubnetUp,
            sweep: number,
            switches: counts.switches,
            time_to_subnet_up_ms: sweep.subnet_up_after().map(|d| d.as_secs_f64() * 1000.0),
            timeouts: stats.total_timeouts(),
            traps: unsolicited.traps,
            unmatched_answers: stats.unmatched,
            unsupported_requests: unsolicited.unsupported,
        }
    }
}

impl SweepSummary {
    /// Whether this sweep tells an administrator something `previous` did not: it is the first,
    /// it changed (or would change) values on the fabric, M_Key checks failed, or its outcome,
    /// the fabric's size or the SM's state differ. A diff sweep of a steady fabric is no news.
    pub fn is_news_after(&self, previous: Option<&SweepSummary>) -> bool {
        previous.is_none_or(|previous| {
            !self.changes.is_empty()
                || self.bad_m_key_traps > 0
                || self.standing() != previous.standing()
        })
    }

    /// What a sweep of an unchanged fabric finds the same as the one before it.
    fn standing(&self) -> impl PartialEq {
        (
            (
                &self.result,
                self.nodes,
                self.switches,
                self.ports,
                self.lids,
            ),
            (self.pkey_ports_configured, self.pkey_ports_failed),
            (self.qos_ports_configured, self.qos_ports_failed),
            (self.sm_state, self.sm_state_reason, self.master),
        )
    }
}

impl From<&Change> for ChangeSummary {
    fn from(change: &Change) -> Self {
        ChangeSummary {
            attribute: change.attribute,
            differences: change.differences.iter().map(ToString::to_string).collect(),
            modifier: change.modifier,
            sent: change.sent,
            target: change.target.to_string(),
        }
    }
}

fn result(phase: &Phase, mode: SweepMode) -> String {
    match phase {
        // A dry run Set nothing: the subnet is as it was.
        Phase::SubnetUp if mode == SweepMode::DryRun => "dry run: the subnet would come up".into(),
        Phase::SubnetUp => "subnet up".to_string(),
        Phase::Discovered => "discovered; another SM is master, nothing programmed".to_string(),
        Phase::Failed(reason) => format!("failed: {reason}"),
        Phase::Incomplete {
            failed_requests,
            ports_not_active,
        } => format!(
            "incomplete: {failed_requests} requests failed, {ports_not_active} linked ports not \
             ACTIVE"
        ),
        other => format!("{other:?}"),
    }
}

/// The summary as a person reads it: counts, SMPs by kind, QoS, and what a Diff or DryRun sweep
/// found differing.
impl fmt::Display for SweepSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} nodes ({} switches), {} ports, {} LIDs",
            self.result, self.nodes, self.switches, self.ports, self.lids
        )?;
        writeln!(
            f,
            "SMPs sent: {} ({} retries, {} timeouts, {} error statuses, {} requests failed)",
            self.smps_sent, self.retries, self.timeouts, self.error_statuses, self.failed_requests
        )?;
        for smp in &self.smps {
            writeln!(f, "  {:<24} {:<8} {}", smp.attribute, smp.method, smp.count)?;
        }
        if self.bad_m_key_traps > 0 {
            writeln!(
                f,
                "traps 256 (bad M_Key): {}: SMPs without a port's key were refused",
                self.bad_m_key_traps
            )?;
        }
        let tables = [
            (
                "P_Keys",
                self.pkey_ports_configured,
                self.pkey_ports_verified,
                self.pkey_ports_failed,
            ),
            (
                "QoS",
                self.qos_ports_configured,
                self.qos_ports_verified,
                self.qos_ports_failed,
            ),
        ];
        for (what, configured, verified, failed) in tables {
            match configured {
                0 => {}
                // Nothing was Set: "configured" and "verified" would claim it was.
                _ if self.mode == SweepMode::DryRun => {
                    writeln!(f, "{what}: {configured} ports planned")?
                }
                _ => writeln!(
                    f,
                    "{what}: {configured} ports configured, {verified} verified, {failed} failed"
                )?,
            }
        }
        let verb = match self.mode {
            SweepMode::Forced => None,
            SweepMode::Diff => Some("changed"),
            SweepMode::DryRun => Some("would change"),
        };
        if let Some(verb) = verb {
            writeln!(f, "{} values {verb}:", self.changes.len())?;
            for change in &self.changes {
                writeln!(
                    f,
                    "  {} {:?} {:#x}: {}",
                    change.target,
                    change.attribute,
                    change.modifier,
                    change.differences.join("; ")
                )?;
            }
        }
        write!(
            f,
            "SM state: {} ({})",
            state_name(self.sm_state),
            self.sm_state_reason
        )?;
        if let Some(master) = self.master {
            write!(f, "; master {master}")?;
        }
        writeln!(f)?;
        match self.time_to_subnet_up_ms {
            Some(ms) if self.mode == SweepMode::DryRun => writeln!(f, "dry run: {ms:.1} ms")?,
            Some(ms) => writeln!(f, "time to SUBNET UP: {ms:.1} ms")?,
            None => {}
        }
        Ok(())
    }
}

/// The mode as scripts match it; spelled out so that renaming a variant cannot change it.
fn mode_name<S: Serializer>(mode: &SweepMode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(match mode {
        SweepMode::Forced => "forced",
        SweepMode::Diff => "diff",
        SweepMode::DryRun => "dryrun",
    })
}

fn attribute_id_name<S: Serializer>(id: &AttributeId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{id:?}"))
}

fn hex<S: Serializer>(value: &u32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{value:#x}"))
}
