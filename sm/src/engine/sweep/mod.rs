//! One heavy sweep, as a state machine: discover the fabric by directed route, assign LIDs,
//! program every port's link settings and arm it, route and program the switches' forwarding
//! tables, then make every port ACTIVE. That is the point OpenSM logs as SUBNET UP.
//!
//! Each phase queues its SMPs with the [`Scheduler`] and the next phase starts when the
//! scheduler has nothing left; discovery (a [`Discovery`], which other engines share) alone
//! grows as answers come in. A request that fails (no answer after its retries, or an error
//! status) is logged and counted, and the sweep goes on with the rest of the fabric.

mod diff;
mod feed;
mod links;
mod multicast;
mod partitions;
mod qos;
mod reconcile;
mod switches;
mod writes;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibqos_exchange::Transmit;
use ibqos_exchange::scheduler::{Completion, Scheduler, SchedulerConfig, SchedulerStats};
use ibqos_fabric::credit_loops::SlSet;
use ibqos_fabric::routing::{Engine, EngineList, Layering, MinHop, Unlayered};
use ibqos_mad::{
    Attribute, AttributeId, CapabilityMask, Guid, PhysPortState, PortInfoRepr, PortState,
    SmInfoRepr, SmpRepr,
};
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{QosConfig, VlCount};
use tracing::{debug, info, warn};

use super::discovery::{Discovery, Probe, WrongAnswer};
use super::lids::LidError;
use super::qos::SetupConfig;
use super::routing::{Lfts, RouteError};
use super::subnet::{DiscoveredNode, PortKey, Subnet};
use crate::election::{OwnPort, RemoteSm};
use crate::mkey::{KeyHidden, MKeyConfig};
use feed::Feed;
use partitions::PkeyState;
use reconcile::PendingRead;
use switches::RoutingJob;
use writes::{HighLimits, TableKind, Writes};

pub use diff::{Difference, Field, Found, PortInfoField};
pub use multicast::MulticastMembers;
pub use partitions::PartitionConfig;
pub use reconcile::{Change, Learned, SetTarget};
pub use writes::{SetResult, Table, TableCounts, TableTally};

/// What the sweep needs from the configuration.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub scheduler: SchedulerConfig,
    pub lmc: u8,
    pub subnet_prefix: u64,
    pub sm_sl: u8,
    /// `max_op_vls` as a cap on OperationalVLs.
    pub max_op_vls: VlCount,
    pub head_of_queue_lifetime: u8,
    pub leaf_head_of_queue_lifetime: u8,
    pub vl_stall_count: u8,
    pub leaf_vl_stall_count: u8,
    /// PortInfo.SubnetTimeOut given to endports (OpenSM's `subnet_timeout`, default 18).
    pub subnet_timeout: u8,
    /// `routing_engine`: the engines to route with, in order.
    pub routing: EngineList,
    /// LIDs to keep from an earlier run (the guid2lid cache), by port GUID.
    pub guid2lid: BTreeMap<u64, u16>,
    /// QoS: nothing is programmed unless `qos.enabled`.
    pub qos: QosConfig,
    /// The qos-setup section to program (ibqos.toml's `[qos] program_policy_setup`).
    pub qos_setup: Option<SetupConfig>,
    /// The partitions and how the partition manager programs them.
    pub partitions: PartitionConfig,
    /// The members of every multicast LID, as the SA holds them when the sweep starts.
    pub multicast: MulticastMembers,
    /// `use_mfttop`: program SwitchInfo.MulticastFDBTop where a switch supports it.
    pub use_mfttop: bool,
    /// One SL2VL Set for all a switch's ports where the switch supports it.
    pub use_optimized_slvl: bool,
    /// The timeout of those all-ports Sets (OpenSM's `long_transaction_timeout`).
    pub long_timeout: Duration,
    /// `no_clients_rereg` FALSE: endports are asked for a client reregistration when due.
    pub clients_rereg: bool,
    /// `ignore_other_sm`: discovery reads no other SM's SMInfo, so the election finds none and
    /// this SM is master whatever else runs.
    pub ignore_other_sm: bool,
    /// Whether to Set everything, only what differs from the fabric, or nothing.
    pub mode: SweepMode,
    /// The M_Key, protect bits and lease every end port is given.
    pub m_key: MKeyConfig,
    /// The SLs the QoS policy's levels choose (none with qos off or without a policy).
    pub policy_sls: SlSet,
}

impl SweepConfig {
    /// The SLs PathRecords start from (SL 0, and the QoS policy's), which the routing's
    /// `path_sl` turns into the SLs paths take: what the credit-loop check follows.
    pub fn path_sls(&self) -> SlSet {
        SlSet::SL0 | self.policy_sls
    }
}

/// How a sweep treats what the fabric already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SweepMode {
    /// Set every value, whatever the fabric holds (the first sweep: OpenSM's forced update).
    #[default]
    Forced,
    /// Read what the fabric holds and Set only what differs: later sweeps, which repair what
    /// changed behind the SM's back and apply an edited configuration.
    Diff,
    /// Read and compare like `Diff`, and Set nothing: `ibqos sm --dry-run`.
    DryRun,
}

/// Where the sweep is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Discovering,
    /// The SMInfo of every other port with IsSM (`osm_port_info_rcv.c`: OpenSM reads it as
    /// discovery finds each such port).
    ReadingSmInfo,
    /// Discovery done and the other SMs read: waiting for [`Sweep::proceed`] (a sweep started
    /// with [`Sweep::start_electing`] only), so that no Set goes out before the election
    /// decided this SM is master.
    Discovered,
    /// Every P_Key table read, then the blocks that differ from the partitions' Set.
    ProgrammingPartitions,
    /// LIDs, link settings and ARMED on every port.
    ConfiguringPorts,
    /// SL2VL and VLArb tables, each Set's echo checked against what was sent.
    ProgrammingQos,
    /// SwitchInfo.LinearFDBTop and the LFT blocks.
    ProgrammingSwitches,
    /// The multicast forwarding tables.
    ProgrammingMulticast,
    /// ACTIVE on every linked port.
    Activating,
    SubnetUp,
    /// Every phase ran, but some requests failed or some linked ports are not ACTIVE.
    Incomplete {
        failed_requests: usize,
        ports_not_active: usize,
    },
    /// The sweep could not go on.
    Failed(SweepFailure),
}

/// Why a sweep could not go on; shown as the error it wraps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepFailure {
    /// The end ports could not all be given LIDs.
    #[error(transparent)]
    Lids(#[from] LidError),
    /// The subnet could not be routed.
    #[error(transparent)]
    Routes(#[from] RouteError),
}

/// What an SMP in flight was for.
#[derive(Debug, Clone)]
enum Op {
    Discover(Probe),
    SetPortInfo {
        port: PortKey,
        /// What was sent, to learn from the echo which fields the port keeps.
        sent: KeyHidden,
    },
    SetSwitchInfo {
        guid: u64,
    },
    SetLft {
        guid: u64,
    },
    /// Entry `index` of the QoS or P_Key Sets, sent for the `attempt`th time.
    SetTable {
        kind: TableKind,
        index: usize,
        attempt: u32,
    },
    /// A P_Key block read by the partition manager.
    ReadPKeys {
        port: PortKey,
        block: u16,
    },
    /// A read of what the fabric holds for pending planned Set `pending`.
    ReadBack {
        pending: usize,
    },
    /// The SMInfo of another SM's port.
    ReadSmInfo {
        guid: u64,
        lid: u16,
        path: Vec<u8>,
    },
}

impl From<Probe> for Op {
    fn from(probe: Probe) -> Op {
        Op::Discover(probe)
    }
}

/// The counts an administrator reads after a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepCounts {
    pub nodes: usize,
    pub switches: usize,
    pub ports: usize,
    pub lids: usize,
    /// Requests that failed after their retries, or with an error status.
    pub failed_requests: usize,
    /// Ports left not ACTIVE although linked.
    pub ports_not_active: usize,
}

/// One heavy sweep.
#[derive(Debug)]
pub struct Sweep {
    config: SweepConfig,
    /// What earlier sweeps learned, added to as this one learns more.
    learned: Learned,
    scheduler: Scheduler<Op>,
    /// Shared with the SA snapshots made of this sweep: a change after one clones it first.
    subnet: Arc<Subnet>,
    phase: Phase,
    discovery: Discovery,
    /// What the qos-setup scopes program on this subnet (empty without them).
    setup: SetupTables,
    /// The QoS Sets of this sweep, and where each stands.
    qos_writes: Writes,
    /// The P_Key Sets of this sweep, and where each stands.
    pkey_writes: Writes,
    /// The MFT Sets of this sweep, and where each stands.
    mft_writes: Writes,
    /// The VLHighLimits the link manager's PortInfo Sets carry, and where each stands.
    high_limits: HighLimits,
    /// The P_Key tables read and the partitions placed in them.
    pkeys: PkeyState,
    /// The forwarding tables the sweep routed, by switch GUID.
    lfts: Lfts,
    /// The engine that routed them, which the multicast manager and the SA ask next.
    routed_by: &'static dyn Engine,
    /// What the routing decided beside the LFTs: path SLs, the engine's SL2VL and VLArb.
    layering: Arc<dyn Layering>,
    /// The routing done once the LIDs are known, until the switches are programmed with it.
    routing: Option<RoutingJob>,
    pending_reads: Vec<PendingRead>,
    /// The table Sets of the phase not yet planned.
    feed: Feed,
    changes: Vec<Change>,
    failed_requests: usize,
    started: Instant,
    subnet_up_after: Option<Duration>,
    /// Only the multicast forwarding tables, on the subnet an earlier sweep found.
    multicast_only: bool,
    /// Wait at [`Phase::Discovered`] for the election.
    pause_after_discovery: bool,
    /// The other SMs that answered their SMInfo.
    remote_sms: Vec<RemoteSm>,
    /// PortInfo Sets to switch ports that wait until their switch has its new M_Key.
    after_new_keys: Vec<(PortKey, PortInfoRepr)>,
    /// The first sweep since this SM became master (OpenSM's `first_time_master_sweep`): the
    /// endports' clients are asked to reregister with the new SA.
    first_master_sweep: bool,
}

impl Sweep {
    /// A sweep that starts by asking the SM's own node who it is, knowing what earlier sweeps
    /// learned.
    pub fn start(config: SweepConfig, learned: Learned, now: Instant) -> Sweep {
        info!("discovering the fabric");
        let mut sweep = Sweep::new(config, learned, now);
        sweep.discovery = Discovery::start(&mut sweep.scheduler);
        sweep
    }

    /// A sweep like [`Sweep::start`]'s that stops at [`Phase::Discovered`] until
    /// [`proceed`](Sweep::proceed): the manager's, whose election decides first whether this
    /// SM configures the subnet at all.
    pub fn start_electing(config: SweepConfig, learned: Learned, now: Instant) -> Sweep {
        let mut sweep = Sweep::start(config, learned, now);
        sweep.pause_after_discovery = true;
        sweep
    }

    /// Past [`Phase::Discovered`]: the election made this SM master, so the sweep configures
    /// the subnet; `first_master_sweep` when it is the first since this SM became master.
    pub fn proceed(&mut self, now: Instant, first_master_sweep: bool) {
        self.first_master_sweep = first_master_sweep;
        if self.phase == Phase::Discovered {
            self.read_pkeys();
            self.advance(now);
        }
    }

    /// The other SMs that answered their SMInfo during discovery.
    pub fn remote_sms(&self) -> &[RemoteSm] {
        &self.remote_sms
    }

    /// The SM's own port as discovery read it.
    pub fn own_port(&self) -> OwnPort {
        let key = self.subnet.sm_port;
        let node = key.and_then(|key| self.subnet.nodes.get(&key.node));
        let port = key.and_then(|key| self.subnet.port(key));
        OwnPort {
            lid: port.map_or(0, |p| p.info.lid),
            capability_mask: port.map_or(0, |p| p.info.capability_mask.0),
            node_type: node.map_or(OwnPort::default().node_type, |n| n.info.node_type),
        }
    }

    /// A sweep that only reprograms the multicast forwarding tables of the subnet `last` found
    /// and routed, for the members in `config` (OpenSM's idle-time `osm_mcast_mgr_process`
    /// after joins and leaves): no discovery, no other table, every Set's echo checked.
    pub fn update_multicast(
        config: SweepConfig,
        learned: Learned,
        last: &Sweep,
        now: Instant,
    ) -> Sweep {
        let mut sweep = Sweep::new(config, learned, now);
        sweep.subnet = last.subnet.clone();
        sweep.lfts = last.lfts.clone();
        sweep.routed_by = last.routed_by;
        sweep.layering = Arc::clone(&last.layering);
        sweep.multicast_only = true;
        sweep.program_multicast();
        sweep.advance(now);
        sweep
    }

    fn new(config: SweepConfig, learned: Learned, now: Instant) -> Sweep {
        Sweep {
            scheduler: Scheduler::new(config.scheduler),
            config,
            learned,
            subnet: Arc::default(),
            phase: Phase::Discovering,
            discovery: Discovery::default(),
            setup: SetupTables::default(),
            qos_writes: Writes::default(),
            pkey_writes: Writes::default(),
            mft_writes: Writes::default(),
            high_limits: HighLimits::default(),
            pkeys: PkeyState::default(),
            lfts: Lfts::default(),
            routed_by: &MinHop,
            layering: Arc::new(Unlayered),
            routing: None,
            pending_reads: Vec::new(),
            feed: Feed::default(),
            changes: Vec::new(),
            failed_requests: 0,
            started: now,
            subnet_up_after: None,
            multicast_only: false,
            pause_after_discovery: false,
            remote_sms: Vec::new(),
            after_new_keys: Vec::new(),
            first_master_sweep: false,
        }
    }

    /// What the sweep was configured with.
    pub fn config(&self) -> &SweepConfig {
        &self.config
    }

    /// `doing` as the log says it, or `planning` in a dry run, which Sets nothing.
    fn logged(&self, doing: &'static str, planning: &'static str) -> &'static str {
        if self.config.mode == SweepMode::DryRun {
            planning
        } else {
            doing
        }
    }

    /// When the sweep started.
    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The subnet, shared: an SA snapshot holds it without a copy.
    pub fn shared_subnet(&self) -> Arc<Subnet> {
        Arc::clone(&self.subnet)
    }

    /// The subnet to change: cloned first if a snapshot still shares it.
    fn subnet_mut(&mut self) -> &mut Subnet {
        Arc::make_mut(&mut self.subnet)
    }

    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }

    /// What the qos-setup scopes program on this subnet (empty without them, or before the
    /// ports are configured).
    pub fn qos_setup(&self) -> &SetupTables {
        &self.setup
    }

    /// The forwarding tables this sweep computed (empty before it routed, or if it could not).
    pub fn lfts(&self) -> &Lfts {
        &self.lfts
    }

    /// The engine that routed this sweep's forwarding tables.
    pub fn routed_by(&self) -> &'static dyn Engine {
        self.routed_by
    }

    /// What that routing decided beside the LFTs.
    pub fn layering(&self) -> &Arc<dyn Layering> {
        &self.layering
    }

    pub fn stats(&self) -> &SchedulerStats {
        self.scheduler.stats()
    }

    /// SMPs on the wire, waiting for their answers.
    pub fn outstanding(&self) -> usize {
        self.scheduler.outstanding()
    }

    /// How long the sweep took to reach SUBNET UP, once it has.
    pub fn subnet_up_after(&self) -> Option<Duration> {
        self.subnet_up_after
    }

    pub fn is_done(&self) -> bool {
        matches!(
            self.phase,
            Phase::SubnetUp | Phase::Incomplete { .. } | Phase::Failed(_)
        )
    }

    pub fn counts(&self) -> SweepCounts {
        // A port counts as linked once its peer is known or its physical link is up: a link
        // whose far end never answered is still a link left out of service.
        let linked_not_active = self
            .subnet
            .ports()
            .filter(|(key, p)| {
                let node_is_switch = self
                    .subnet
                    .nodes
                    .get(&key.node)
                    .is_some_and(DiscoveredNode::is_switch);
                let management_port = node_is_switch && key.port == 0;
                let linked = self.subnet.peer(*key).is_some()
                    || p.info.port_phys_state == PhysPortState::LinkUp;
                linked && !management_port && p.info.port_state != PortState::Active
            })
            .count();
        SweepCounts {
            nodes: self.subnet.nodes.len(),
            switches: self.subnet.switches().count(),
            ports: self.subnet.port_count(),
            lids: self
                .subnet
                .endports()
                .filter(|(_, _, p)| p.lid != 0)
                .count(),
            failed_requests: self.failed_requests,
            ports_not_active: linked_not_active,
        }
    }

    /// The next SMP to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        // With nothing on the wire, `advance` feeds: jobs that need no SMP could otherwise
        // empty the feed here, and no answer would come to start the next phase.
        if !self.scheduler.is_idle() {
            self.feed_jobs();
        }
        self.scheduler.poll_transmit(now)
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.scheduler.next_deadline()
    }

    /// A response (or any MAD) from the fabric.
    pub fn on_response(&mut self, now: Instant, response: SmpRepr) {
        if let Some(done) = self.scheduler.on_response(response) {
            self.complete(now, done);
        }
        self.advance(now);
    }

    /// The fabric handed a request back undelivered.
    pub fn on_dropped(&mut self, now: Instant, request: SmpRepr) {
        if let Some(done) = self.scheduler.on_dropped(request) {
            self.complete(now, done);
        }
        self.advance(now);
    }

    /// Time has passed: requests past their deadline are retried or given up.
    pub fn on_time(&mut self, now: Instant) {
        for done in self.scheduler.poll_timeouts(now) {
            self.complete(now, done);
        }
        self.advance(now);
    }

    fn complete(&mut self, now: Instant, done: Completion<Op>) {
        match done {
            Completion::Answered { context, response } => {
                match Attribute::parse(response.attribute_id, &response.data) {
                    Ok(attribute) => self.answered(now, context, attribute),
                    Err(error) => {
                        warn!(?context, %error, "malformed answer; treating the request as failed");
                        self.failed_requests += 1;
                    }
                }
            }
            Completion::Failed {
                context: Op::ReadSmInfo { guid, .. },
                failure,
                ..
            } => {
                // A port whose SM does not answer is no SM to elect (OpenSM records none).
                debug!(guid = %Guid(guid), ?failure, "no SMInfo from a port with IsSM");
            }
            Completion::Failed {
                context, failure, ..
            } => {
                self.failed_requests += 1;
                warn!(
                    ?context,
                    ?failure,
                    "request failed after its retries; going on without it"
                );
            }
        }
    }

    fn answered(&mut self, now: Instant, op: Op, attribute: Attribute) {
        match (op, attribute) {
            (Op::Discover(probe), answer) => {
                let (subnet, scheduler) = (Arc::make_mut(&mut self.subnet), &mut self.scheduler);
                if let Err(WrongAnswer { probe, answer }) =
                    self.discovery.answered(subnet, scheduler, probe, answer)
                {
                    warn!(?probe, ?answer, "answer of the wrong attribute; ignored");
                    self.failed_requests += 1;
                }
            }
            (Op::SetPortInfo { port, sent }, Attribute::PortInfo(info)) => {
                self.high_limits.echoed(port, info.vl_high_limit);
                self.learn_unkept(port, &sent.0, &info);
                if let Some(p) = self.subnet_mut().port_mut(port) {
                    p.info = info;
                }
            }
            (Op::SetSwitchInfo { guid }, Attribute::SwitchInfo(info)) => {
                if let Some(node) = self.subnet_mut().nodes.get_mut(&guid) {
                    node.switch = Some(info);
                }
            }
            (Op::ReadPKeys { port, block }, Attribute::PKeyTable(table)) => {
                self.pkeys_read(port, block, table);
            }
            (Op::SetLft { guid }, Attribute::LinearForwardingTable(_)) => {
                debug!(guid = %Guid(guid), "LFT block set");
            }
            (
                Op::SetTable {
                    kind,
                    index,
                    attempt,
                },
                echo,
            ) => self.write_echo(now, kind, index, attempt, echo),
            (Op::ReadBack { pending }, held) => self.read_back(pending, Some(held)),
            (Op::ReadSmInfo { guid, lid, path }, Attribute::SmInfo(info)) => {
                self.sm_info_read(guid, lid, path, info)
            }
            (op, attribute) => {
                warn!(?op, answer = ?attribute.id(), "answer of the wrong attribute; ignored");
                self.failed_requests += 1;
            }
        }
    }

    /// When a phase has nothing left on the wire, the next one starts.
    fn advance(&mut self, now: Instant) {
        loop {
            self.feed_jobs();
            if !self.scheduler.is_idle() || !self.feed.is_empty() || self.is_done() {
                return;
            }
            match self.phase {
                Phase::Discovering => {
                    let counts = self.counts();
                    info!(
                        nodes = counts.nodes,
                        switches = counts.switches,
                        ports = counts.ports,
                        "discovery done"
                    );
                    self.read_sm_infos();
                }
                Phase::ReadingSmInfo if self.pause_after_discovery => {
                    self.phase = Phase::Discovered
                }
                Phase::ReadingSmInfo => self.read_pkeys(),
                Phase::Discovered => break,
                Phase::ProgrammingPartitions if !self.pkeys_planned() => self.program_pkeys(),
                Phase::ProgrammingPartitions => self.configure_ports(),
                Phase::ConfiguringPorts if !self.after_new_keys.is_empty() => {
                    self.configure_ports_after_new_keys()
                }
                Phase::ConfiguringPorts => self.program_qos(),
                Phase::ProgrammingQos => self.program_switches(),
                Phase::ProgrammingSwitches => self.program_multicast(),
                Phase::ProgrammingMulticast if self.multicast_only => self.finish(now),
                Phase::ProgrammingMulticast => self.activate(),
                Phase::Activating => self.finish(now),
                Phase::SubnetUp | Phase::Incomplete { .. } | Phase::Failed(_) => {}
            }
        }
    }

    /// SUBNET UP when every request succeeded and every linked port is ACTIVE; otherwise the
    /// sweep is incomplete and another heavy sweep is due, as OpenSM re-sweeps after an
    /// initialization error.
    fn finish(&mut self, now: Instant) {
        let counts = self.counts();
        let tables_failed =
            self.qos_counts().failed + self.pkey_counts().failed + self.mft_counts().failed;
        if counts.failed_requests == 0 && counts.ports_not_active == 0 && tables_failed == 0 {
            self.phase = Phase::SubnetUp;
            self.subnet_up_after = Some(now.saturating_duration_since(self.started));
            if self.multicast_only {
                info!("multicast forwarding tables updated");
            } else {
                info!(
                    "{}",
                    self.logged("SUBNET UP", "dry run done: the subnet would come up")
                );
            }
        } else {
            warn!(
                failed_requests = counts.failed_requests,
                ports_not_active = counts.ports_not_active,
                "sweep incomplete"
            );
            self.phase = Phase::Incomplete {
                failed_requests: counts.failed_requests,
                ports_not_active: counts.ports_not_active,
            };
        }
    }

    /// Reads the SMInfo of every other end port whose CapabilityMask has IsSM, unless
    /// `ignore_other_sm` (`osm_pi_rcv_process_endport`: "Ignoring SM on port").
    fn read_sm_infos(&mut self) {
        self.phase = Phase::ReadingSmInfo;
        let own = self.subnet.sm_port;
        let sms: Vec<(u64, u64, u16, Vec<u8>)> = self
            .subnet
            .endports()
            .filter(|(node, number, _)| own != Some(PortKey::new(*node, *number)))
            .filter(|(_, _, p)| p.info.capability_mask.contains(CapabilityMask::IS_SM))
            .map(|(node, _, p)| (node, p.guid, p.info.lid, p.path.clone()))
            .collect();
        for (node, guid, lid, path) in sms {
            if self.config.ignore_other_sm {
                debug!(guid = %Guid(guid), "ignoring SM on port");
                continue;
            }
            let op = Op::ReadSmInfo {
                guid,
                lid,
                path: path.clone(),
            };
            self.scheduler
                .get_directed(node, &path, AttributeId::SmInfo, 0, op);
        }
    }

    /// Another SM's SMInfo: kept unless it names another port than the one asked
    /// (`osm_sminfo_rcv_process`, ERR 2F19).
    fn sm_info_read(&mut self, guid: u64, lid: u16, path: Vec<u8>, info: SmInfoRepr) {
        if info.guid != guid {
            warn!(
                expected = %Guid(guid),
                received = %Guid(info.guid),
                "unexpected SM port GUID in an SMInfo answer; ignored"
            );
            return;
        }
        info!(
            guid = %Guid(guid),
            priority = info.priority,
            state = crate::election::state_name(info.sm_state),
            "found another SM"
        );
        self.remote_sms.push(RemoteSm { info, lid, path });
    }

    fn fail(&mut self, failure: impl Into<SweepFailure>) {
        let failure = failure.into();
        warn!(reason = %failure, "sweep failed");
        self.phase = Phase::Failed(failure);
    }
}

#[cfg(test)]
mod tests;
