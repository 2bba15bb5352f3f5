//! One heavy sweep, as a state machine: discover the fabric by directed route, assign LIDs,
//! program every port's link settings and arm it, route and program the switches' forwarding
//! tables, then make every port ACTIVE. That is the point OpenSM logs as SUBNET UP.
//!
//! Each phase queues its SMPs with the [`Scheduler`] and the next phase starts when the
//! scheduler has nothing left; discovery alone grows as answers come in. A request that fails
//! (no answer after its retries, or an error status) is logged and counted, and the sweep goes
//! on with the rest of the fabric.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use ibqos_mad::{
    Attribute, AttributeId, DrPath, LinearForwardingTableRepr, NodeDescriptionRepr, NodeInfoRepr,
    NodeType, PhysPortState, PortInfoModifier, PortInfoRepr, PortState, Routing, SmpRepr,
};
use ibqos_qos::{QosConfig, VlCount};
use tracing::{debug, info, warn};

use super::lids::assign_lids;
use super::qos::{QosSet, port_plan, qos_sets};
use super::routing::{Lfts, RoutingEngine, route};
use super::scheduler::{Completion, Request, Scheduler, SchedulerConfig, SchedulerStats, Transmit};
use super::subnet::{Node, Port, PortKey, Subnet};
use ibqos_mad::SlToVlModifier;

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
    pub routing: RoutingEngine,
    /// LIDs to keep from an earlier run (the guid2lid cache), by port GUID.
    pub guid2lid: BTreeMap<u64, u16>,
    /// QoS: nothing is programmed unless `qos.enabled`.
    pub qos: QosConfig,
    /// One SL2VL Set for all a switch's ports where the switch supports it.
    pub use_optimized_slvl: bool,
    /// The timeout of those all-ports Sets (OpenSM's `long_transaction_timeout`).
    pub long_timeout: Duration,
    /// Whether to Set everything, only what differs from the fabric, or nothing.
    pub mode: SweepMode,
    /// PortInfo fields each port was seen not to keep; not compared in Diff mode.
    pub unkept: BTreeMap<PortKey, Vec<&'static str>>,
}

/// How a compared PortInfo field is shown.
type ShowField = fn(&PortInfoRepr) -> String;

/// The PortInfo fields the sweep programs and compares (besides PortState, which counts only
/// when a Set asks for a change), each with how it is shown.
const PORT_INFO_FIELDS: [(&str, ShowField); 11] = [
    ("LID", |p| p.lid.to_string()),
    ("LMC", |p| p.lmc.to_string()),
    ("MasterSMLID", |p| p.master_sm_lid.to_string()),
    ("SubnetPrefix", |p| format!("{:#x}", p.gid_prefix)),
    ("MasterSMSL", |p| p.master_sm_sl.to_string()),
    ("SubnetTimeOut", |p| p.subnet_timeout.to_string()),
    ("OperVLs", |p| p.operational_vls.to_string()),
    ("NeighborMTU", |p| p.neighbor_mtu.to_string()),
    ("HOQLife", |p| p.hoq_life.to_string()),
    ("VLStallCount", |p| p.vl_stall_count.to_string()),
    ("VLHighLimit", |p| p.vl_high_limit.to_string()),
];

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

/// One value the sweep programs that the fabric held differently (Diff and DryRun modes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Which node and port or table, for people.
    pub target: String,
    pub attribute: AttributeId,
    pub modifier: u32,
    /// Each difference, as `field: held -> programmed`.
    pub differences: Vec<String>,
    /// Whether the Set was sent (false in DryRun mode).
    pub sent: bool,
}

/// A Set the sweep wants to make, before it knows whether it is needed.
#[derive(Debug, Clone)]
struct Planned {
    node: u64,
    path: Vec<u8>,
    attribute: Attribute,
    modifier: u32,
    op: Op,
    timeout: Option<Duration>,
    target: String,
}

/// What the fabric holds for a planned Set.
enum Held {
    /// Known already (PortInfo and SwitchInfo from discovery).
    Known(Attribute),
    /// To be read with a Get of each of these modifiers (an SL2VL Set for all pairs is read
    /// pair by pair).
    Read(Vec<u32>),
}

/// A planned Set waiting for the reads of what the fabric holds.
#[derive(Debug)]
struct PendingRead {
    planned: Planned,
    reads_left: usize,
    differences: Vec<String>,
}

/// Where the sweep is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Discovering,
    /// LIDs, link settings and ARMED on every port.
    ConfiguringPorts,
    /// SL2VL and VLArb tables, each Set's echo checked against what was sent.
    ProgrammingQos,
    /// SwitchInfo.LinearFDBTop and the LFT blocks.
    ProgrammingSwitches,
    /// ACTIVE on every linked port.
    Activating,
    SubnetUp,
    /// Every phase ran, but some requests failed or some linked ports are not ACTIVE.
    Incomplete {
        failed_requests: usize,
        ports_not_active: usize,
    },
    /// The sweep could not go on (no LIDs, no routes); the reason is in the message.
    Failed(String),
}

/// What an SMP in flight was for.
#[derive(Debug, Clone)]
enum Op {
    NodeInfo {
        path: Vec<u8>,
    },
    NodeDescription {
        guid: u64,
    },
    SwitchInfo {
        guid: u64,
    },
    PortInfo {
        guid: u64,
        port: u8,
    },
    SetPortInfo {
        port: PortKey,
        /// What was sent, to learn from the echo which fields the port keeps.
        sent: Box<PortInfoRepr>,
    },
    SetSwitchInfo {
        guid: u64,
    },
    SetLft {
        guid: u64,
    },
    /// Entry `index` of the QoS Sets, sent for the `attempt`th time.
    SetQos {
        index: usize,
        attempt: u32,
    },
    /// A read of what the fabric holds for pending planned Set `pending`.
    ReadBack {
        pending: usize,
    },
}

/// Echo mismatches a QoS Set may have before the port is reported failed.
const QOS_ATTEMPTS: u32 = 3;
/// The wait before resending a QoS Set whose echo differed, doubled on each further attempt.
const QOS_BACKOFF: Duration = Duration::from_millis(20);

/// What became of the QoS programming of each port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosCounts {
    /// Ports with at least one SL2VL or VLArb table to program.
    pub configured: usize,
    /// Ports whose every table was echoed back exactly as sent (or, in Diff and DryRun modes,
    /// already held as planned).
    pub verified: usize,
    /// Ports with a Set that failed or kept echoing something else.
    pub failed: usize,
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
    scheduler: Scheduler<Op>,
    subnet: Subnet,
    phase: Phase,
    /// Switch ports whose far end has been (or is being) probed.
    probed: BTreeSet<PortKey>,
    /// The node each route answered from, to attribute a new link to its near end.
    by_path: HashMap<Vec<u8>, u64>,
    /// The route and port GUID by which each CA port was first reached: a CA answers PortInfo
    /// for the port a request arrives on, so each CA port is read through its own route.
    arrivals: BTreeMap<PortKey, (Vec<u8>, u64)>,
    lfts: Lfts,
    /// The QoS Sets of this sweep, and per Set whether its echo matched (None: not settled).
    qos_sets: Vec<QosSet>,
    qos_settled: Vec<Option<bool>>,
    pending_reads: Vec<PendingRead>,
    changes: Vec<Change>,
    failed_requests: usize,
    started: Instant,
    subnet_up_after: Option<Duration>,
}

impl Sweep {
    /// A sweep that starts by asking the SM's own node who it is.
    pub fn start(config: SweepConfig, now: Instant) -> Sweep {
        let mut sweep = Sweep {
            scheduler: Scheduler::new(config.scheduler),
            config,
            subnet: Subnet::default(),
            phase: Phase::Discovering,
            probed: BTreeSet::new(),
            by_path: HashMap::new(),
            arrivals: BTreeMap::new(),
            lfts: Lfts::default(),
            qos_sets: Vec::new(),
            qos_settled: Vec::new(),
            pending_reads: Vec::new(),
            changes: Vec::new(),
            failed_requests: 0,
            started: now,
            subnet_up_after: None,
        };
        info!("discovering the fabric");
        sweep.get_node_info(Vec::new());
        sweep
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    pub fn subnet(&self) -> &Subnet {
        &self.subnet
    }

    pub fn lfts(&self) -> &Lfts {
        &self.lfts
    }

    pub fn stats(&self) -> &SchedulerStats {
        self.scheduler.stats()
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
                let node_is_switch = self.subnet.nodes.get(&key.0).is_some_and(Node::is_switch);
                let management_port = node_is_switch && key.1 == 0;
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
            (Op::NodeInfo { path }, Attribute::NodeInfo(info)) => self.node_found(path, info),
            (Op::NodeDescription { guid }, Attribute::NodeDescription(desc)) => {
                if let Some(node) = self.subnet.nodes.get_mut(&guid) {
                    node.description = description_text(&desc);
                }
            }
            (Op::SwitchInfo { guid }, Attribute::SwitchInfo(info)) => {
                if let Some(node) = self.subnet.nodes.get_mut(&guid) {
                    node.switch = Some(info);
                }
            }
            (Op::PortInfo { guid, port }, Attribute::PortInfo(info)) => {
                self.port_found(guid, port, info)
            }
            (Op::SetPortInfo { port, sent }, Attribute::PortInfo(info)) => {
                self.learn_unkept(port, &sent, &info);
                if let Some(p) = self.subnet.port_mut(port) {
                    p.info = info;
                }
            }
            (Op::SetSwitchInfo { guid }, Attribute::SwitchInfo(info)) => {
                if let Some(node) = self.subnet.nodes.get_mut(&guid) {
                    node.switch = Some(info);
                }
            }
            (Op::SetLft { guid }, Attribute::LinearForwardingTable(_)) => {
                debug!(guid = %format!("{guid:#018x}"), "LFT block set");
            }
            (Op::SetQos { index, attempt }, echo) => self.qos_echo(now, index, attempt, echo),
            (Op::ReadBack { pending }, held) => self.read_back(pending, Some(held)),
            (op, attribute) => {
                warn!(?op, answer = ?attribute.id(), "answer of the wrong attribute; ignored");
                self.failed_requests += 1;
            }
        }
    }

    /// NodeInfo answered at `path`: a new node is read in full; a node seen before only adds
    /// the link (and, for a CA, the port this route arrives at).
    fn node_found(&mut self, path: Vec<u8>, info: NodeInfoRepr) {
        let guid = info.node_guid;
        let arrival = info.local_port_num;
        let here = (guid, arrival);
        let new_node = !self.subnet.nodes.contains_key(&guid);
        if new_node {
            debug!(guid = %format!("{guid:#018x}"), ?path, kind = ?info.node_type, "found a node");
            self.subnet.nodes.insert(
                guid,
                Node {
                    info,
                    description: String::new(),
                    switch: None,
                    path: path.clone(),
                    ports: BTreeMap::new(),
                },
            );
            self.get(
                guid,
                &path,
                AttributeId::NodeDescription,
                0,
                Op::NodeDescription { guid },
            );
            if info.node_type == NodeType::Switch {
                self.get(
                    guid,
                    &path,
                    AttributeId::SwitchInfo,
                    0,
                    Op::SwitchInfo { guid },
                );
                for port in 0..=info.num_ports {
                    self.get_port_info(guid, &path, port);
                }
            }
        }
        if path.is_empty() {
            self.subnet.sm_port = Some(here);
        }
        if info.node_type != NodeType::Switch && !self.arrivals.contains_key(&here) {
            self.arrivals.insert(here, (path.clone(), info.port_guid));
            self.get_port_info(guid, &path, arrival);
        }
        if let Some((&egress, before)) = path.split_last()
            && let Some(&from) = self.by_path.get(before)
        {
            self.subnet.link((from, egress), here);
            self.probed.insert((from, egress));
            self.probed.insert(here);
        }
        self.by_path.insert(path, guid);
    }

    fn port_found(&mut self, guid: u64, number: u8, info: PortInfoRepr) {
        let Some(node) = self.subnet.nodes.get_mut(&guid) else {
            return;
        };
        let is_switch = node.is_switch();
        let (path, port_guid) = match self.arrivals.get(&(guid, number)) {
            Some((path, port_guid)) if !is_switch => (path.clone(), *port_guid),
            _ => (node.path.clone(), node.info.port_guid),
        };
        node.ports.insert(
            number,
            Port {
                info,
                guid: port_guid,
                path: path.clone(),
                lid: 0,
            },
        );
        // Beyond a switch port whose link is up, or the SM's own port, is another node.
        let link_up = info.port_phys_state == PhysPortState::LinkUp;
        let is_sm_port = self.subnet.sm_port == Some((guid, number));
        let leads_on = (is_switch && number != 0) || is_sm_port;
        if link_up && leads_on && self.probed.insert((guid, number)) {
            let mut next = path;
            next.push(number);
            self.get_node_info(next);
        }
    }

    /// When a phase has nothing left on the wire, the next one starts.
    fn advance(&mut self, now: Instant) {
        while self.scheduler.is_idle() && !self.is_done() {
            match self.phase {
                Phase::Discovering => {
                    let counts = self.counts();
                    info!(
                        nodes = counts.nodes,
                        switches = counts.switches,
                        ports = counts.ports,
                        "discovery done"
                    );
                    self.configure_ports(now);
                }
                Phase::ConfiguringPorts => self.program_qos(),
                Phase::ProgrammingQos => self.program_switches(),
                Phase::ProgrammingSwitches => self.activate(),
                Phase::Activating => self.finish(now),
                Phase::SubnetUp | Phase::Incomplete { .. } | Phase::Failed(_) => {}
            }
        }
    }

    /// LIDs for every endport, then one PortInfo Set per port: LID, LMC and SM LID on endports,
    /// OperVLs, NeighborMTU, HOQLife and VLStallCount on links, and ARMED on ports in INIT.
    fn configure_ports(&mut self, _now: Instant) {
        self.phase = Phase::ConfiguringPorts;
        if let Err(error) = assign_lids(&mut self.subnet, self.config.lmc, &self.config.guid2lid) {
            self.fail(error.to_string());
            return;
        }
        let sm_lid = self
            .subnet
            .sm_port
            .and_then(|k| self.subnet.port(k))
            .map_or(0, |p| p.lid);
        info!(lids = self.counts().lids, sm_lid, "LIDs assigned");
        let keys: Vec<PortKey> = self.subnet.ports().map(|(key, _)| key).collect();
        for key in keys {
            if let Some(info) = self.port_settings(key, sm_lid) {
                self.set_port_info(key, info);
            }
        }
    }

    /// The PortInfo to Set on a port, or `None` for a port to leave alone (down and not an
    /// endport).
    fn port_settings(&self, key: PortKey, sm_lid: u16) -> Option<PortInfoRepr> {
        let node = self.subnet.nodes.get(&key.0)?;
        let port = node.ports.get(&key.1)?;
        let is_endport = !node.is_switch() || key.1 == 0;
        let peer = self
            .subnet
            .peer(key)
            .and_then(|k| Some((self.subnet.nodes.get(&k.0)?, self.subnet.port(k)?)));
        if peer.is_none() && !is_endport {
            return None;
        }
        let mut info = port.info;
        // Only what is meant to change: no state change, no forced speed or width.
        info.port_state = PortState::NoChange;
        info.port_phys_state = PhysPortState::NoChange;
        info.link_width_enabled = 0;
        info.link_speed_enabled = 0;
        info.link_speed_ext_enabled = 0;
        if is_endport {
            info.lid = port.lid;
            info.lmc = self.config.lmc;
            info.master_sm_lid = sm_lid;
            info.gid_prefix = self.config.subnet_prefix;
            info.master_sm_sl = self.config.sm_sl;
            info.subnet_timeout = self.config.subnet_timeout;
        }
        if let Some((peer_node, peer_port)) = peer {
            info.operational_vls = self.oper_vls(&port.info, &peer_port.info);
            info.neighbor_mtu = port.info.mtu_cap.min(peer_port.info.mtu_cap);
            let leaf = !peer_node.is_switch();
            if node.is_switch() {
                info.hoq_life = self.hoq(leaf);
                info.vl_stall_count = if leaf {
                    self.config.leaf_vl_stall_count
                } else {
                    self.config.vl_stall_count
                } & 0x7;
            } else if node.info.node_type == NodeType::Router {
                info.hoq_life = self.hoq(true);
            }
            if port.info.port_state == PortState::Init {
                info.port_state = PortState::Armed;
            }
        }
        // VLHighLimit travels in this Set, as in OpenSM's link manager; with qos off it is
        // left as the port has it.
        if self.config.qos.enabled
            && let Some(plan) = port_plan(&self.subnet, &self.config.qos, key, info.operational_vls)
        {
            info.vl_high_limit = plan.vl_high_limit;
        }
        Some(info)
    }

    fn hoq(&self, leaf: bool) -> u8 {
        let value = if leaf {
            self.config.leaf_head_of_queue_lifetime
        } else {
            self.config.head_of_queue_lifetime
        };
        value & 0x1f
    }

    /// OperVLs: the lower VLCap of the two ends, capped by `max_op_vls` (`osm_port.c:239-296`).
    fn oper_vls(&self, local: &PortInfoRepr, peer: &PortInfoRepr) -> u8 {
        local
            .vl_cap
            .min(peer.vl_cap)
            .max(1)
            .min(self.config.max_op_vls.encoding())
    }

    /// Every SL2VL and VLArb Set the configuration calls for, masked with the OperVLs the ports
    /// now run; nothing when qos is off.
    fn program_qos(&mut self) {
        self.phase = Phase::ProgrammingQos;
        if !self.config.qos.enabled {
            return;
        }
        self.qos_sets = qos_sets(
            &self.subnet,
            &self.config.qos,
            self.config.use_optimized_slvl,
        );
        self.qos_settled = vec![None; self.qos_sets.len()];
        for index in 0..self.qos_sets.len() {
            let Some(planned) = self.planned_qos(index, 1) else {
                continue;
            };
            let held = Held::Read(read_modifiers(&self.subnet, &self.qos_sets[index]));
            self.plan_set(planned, held);
        }
        info!(sets = self.qos_sets.len(), "programming QoS tables");
    }

    /// QoS Set `index` as a planned Set, for its `attempt`th sending.
    fn planned_qos(&self, index: usize, attempt: u32) -> Option<Planned> {
        let set = self.qos_sets.get(index)?;
        let path = self.subnet.port(set.via)?.path.clone();
        let ports: Vec<String> = set.ports.iter().map(|(_, p)| p.to_string()).collect();
        Some(Planned {
            node: set.node,
            path,
            attribute: set.attribute,
            modifier: set.modifier,
            op: Op::SetQos { index, attempt },
            timeout: set.long.then_some(self.config.long_timeout),
            target: format!("{:#018x}[{}]", set.node, ports.join(",")),
        })
    }

    /// A QoS Set answered: the echo must be what was sent. A port that echoes something else is
    /// sent the table again after a backoff, and reported once its attempts are spent, never
    /// taken as programmed.
    fn qos_echo(&mut self, now: Instant, index: usize, attempt: u32, echo: Attribute) {
        let Some(set) = self.qos_sets.get(index) else {
            return;
        };
        if set.attribute == echo {
            self.settle_qos(index, true);
        } else if attempt < QOS_ATTEMPTS {
            warn!(ports = ?set.ports, attempt, "QoS table echoed back different; sending it again");
            let backoff = QOS_BACKOFF * 2u32.pow(attempt - 1);
            if let Some(planned) = self.planned_qos(index, attempt + 1) {
                self.send_at(planned, Some(now + backoff));
            }
        } else {
            warn!(ports = ?set.ports, "QoS table still echoed back different; port not verified");
            self.settle_qos(index, false);
        }
    }

    fn settle_qos(&mut self, index: usize, verified: bool) {
        if let Some(slot) = self.qos_settled.get_mut(index) {
            *slot = Some(verified);
        }
    }

    /// Per port: configured, verified, failed.
    pub fn qos_counts(&self) -> QosCounts {
        // Per port: Some(true) while every Set settled verified, Some(false) once one failed,
        // None while one is unsettled (a dry run's changes are never sent, so never settle).
        let mut ports: BTreeMap<PortKey, Option<bool>> = BTreeMap::new();
        for (set, settled) in self.qos_sets.iter().zip(&self.qos_settled) {
            for port in &set.ports {
                let state = ports.entry(*port).or_insert(Some(true));
                *state = match (*state, *settled) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
            }
        }
        let count = |wanted: Option<bool>| ports.values().filter(|s| **s == wanted).count();
        QosCounts {
            configured: ports.len(),
            verified: count(Some(true)),
            failed: count(Some(false)),
        }
    }

    /// SwitchInfo.LinearFDBTop and the LFT blocks up to it, on every switch.
    fn program_switches(&mut self) {
        self.phase = Phase::ProgrammingSwitches;
        let lfts = match route(&self.subnet, &self.config.routing) {
            Ok(lfts) => lfts,
            Err(error) => {
                self.fail(error.to_string());
                return;
            }
        };
        let top = lfts.max_lid();
        for (guid, lft) in &lfts.tables {
            let Some(node) = self.subnet.nodes.get(guid) else {
                continue;
            };
            let path = node.path.clone();
            if let Some(held) = node.switch {
                let mut switch = held;
                switch.linear_fdb_top = top;
                // Writing 1 clears PortStateChange: the SM has seen this topology.
                switch.port_state_change = true;
                let planned = Planned {
                    node: *guid,
                    path: path.clone(),
                    attribute: Attribute::SwitchInfo(switch),
                    modifier: 0,
                    op: Op::SetSwitchInfo { guid: *guid },
                    timeout: None,
                    target: format!("{guid:#018x} SwitchInfo"),
                };
                self.plan_set(planned, Held::Known(Attribute::SwitchInfo(held)));
            }
            for (block, ports) in lft.chunks(64).enumerate() {
                let mut table = LinearForwardingTableRepr {
                    ports: [LinearForwardingTableRepr::NO_ROUTE; 64],
                };
                table.ports[..ports.len()].copy_from_slice(ports);
                let planned = Planned {
                    node: *guid,
                    path: path.clone(),
                    attribute: Attribute::LinearForwardingTable(table),
                    modifier: block as u32,
                    op: Op::SetLft { guid: *guid },
                    timeout: None,
                    target: format!("{guid:#018x} LFT block {block}"),
                };
                self.plan_set(planned, Held::Read(vec![block as u32]));
            }
        }
        info!(
            switches = lfts.tables.len(),
            max_lid = top,
            "switches configured"
        );
        self.lfts = lfts;
    }

    /// ACTIVE on every ARMED port.
    fn activate(&mut self) {
        self.phase = Phase::Activating;
        let armed: Vec<(PortKey, PortInfoRepr)> = self
            .subnet
            .ports()
            .filter(|(_, port)| port.info.port_state == PortState::Armed)
            .map(|(key, port)| (key, port.info))
            .collect();
        for (key, mut info) in armed {
            info.port_state = PortState::Active;
            info.port_phys_state = PhysPortState::NoChange;
            info.link_width_enabled = 0;
            info.link_speed_enabled = 0;
            info.link_speed_ext_enabled = 0;
            self.set_port_info(key, info);
        }
    }

    /// SUBNET UP when every request succeeded and every linked port is ACTIVE; otherwise the
    /// sweep is incomplete and another heavy sweep is due, as OpenSM re-sweeps after an
    /// initialization error.
    fn finish(&mut self, now: Instant) {
        let counts = self.counts();
        let qos = self.qos_counts();
        if counts.failed_requests == 0 && counts.ports_not_active == 0 && qos.failed == 0 {
            self.phase = Phase::SubnetUp;
            self.subnet_up_after = Some(now.saturating_duration_since(self.started));
            info!("SUBNET UP");
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

    fn fail(&mut self, reason: String) {
        warn!(%reason, "sweep failed");
        self.phase = Phase::Failed(reason);
    }

    fn get_node_info(&mut self, path: Vec<u8>) {
        let node = path_key(&path);
        self.get(
            node,
            &path.clone(),
            AttributeId::NodeInfo,
            0,
            Op::NodeInfo { path },
        );
    }

    fn get_port_info(&mut self, guid: u64, path: &[u8], port: u8) {
        let modifier = u32::from(PortInfoModifier {
            port,
            extended_speeds: false,
        });
        self.get(
            guid,
            path,
            AttributeId::PortInfo,
            modifier,
            Op::PortInfo { guid, port },
        );
    }

    fn set_port_info(&mut self, key: PortKey, info: PortInfoRepr) {
        let Some(port) = self.subnet.port(key) else {
            return;
        };
        let held = Held::Known(Attribute::PortInfo(port.info));
        let planned = Planned {
            node: key.0,
            path: port.path.clone(),
            attribute: Attribute::PortInfo(info),
            modifier: u32::from(PortInfoModifier {
                port: key.1,
                extended_speeds: false,
            }),
            op: Op::SetPortInfo {
                port: key,
                sent: Box::new(info),
            },
            timeout: None,
            target: format!("{:#018x}[{}]", key.0, key.1),
        };
        self.plan_set(planned, held);
    }

    /// Sends a planned Set, or in Diff and DryRun modes first compares it with what the fabric
    /// holds: reading that where it is not known, and recording every difference.
    fn plan_set(&mut self, planned: Planned, held: Held) {
        if self.config.mode == SweepMode::Forced {
            self.send(planned);
            return;
        }
        match held {
            Held::Known(attribute) => {
                let ignored: &[&str] = match &planned.op {
                    Op::SetPortInfo { port, .. } => {
                        self.config.unkept.get(port).map_or(&[], Vec::as_slice)
                    }
                    _ => &[],
                };
                let mut differences = differences(&attribute, &planned.attribute, "");
                differences.retain(|d| !ignored.iter().any(|f| d.starts_with(&format!("{f}:"))));
                self.decide(planned, differences);
            }
            Held::Read(modifiers) => {
                let pending = self.pending_reads.len();
                let id = planned.attribute.id();
                let (node, path) = (planned.node, planned.path.clone());
                self.pending_reads.push(PendingRead {
                    planned,
                    reads_left: modifiers.len(),
                    differences: Vec::new(),
                });
                for modifier in modifiers {
                    self.get(node, &path, id, modifier, Op::ReadBack { pending });
                }
            }
        }
    }

    /// One read for a pending planned Set came back (`None`: it could not be read).
    fn read_back(&mut self, pending: usize, held: Option<Attribute>) {
        let Some(entry) = self.pending_reads.get_mut(pending) else {
            return;
        };
        let label =
            if entry.reads_left > 1 || matches!(held, Some(Attribute::SlToVlMappingTable(_))) {
                format!("{:#x} ", entry.planned.modifier)
            } else {
                String::new()
            };
        match held {
            Some(held) => {
                entry
                    .differences
                    .extend(differences(&held, &entry.planned.attribute, &label))
            }
            None => entry.differences.push(format!("{label}could not be read")),
        }
        entry.reads_left = entry.reads_left.saturating_sub(1);
        if entry.reads_left == 0 {
            let planned = entry.planned.clone();
            let differences = std::mem::take(&mut entry.differences);
            self.decide(planned, differences);
        }
    }

    /// A compared planned Set: nothing to do if nothing differs; otherwise recorded, and sent
    /// unless this is a dry run. A dry run updates the model as if the Set had been made, so the
    /// later phases plan from the state the fabric would be in.
    fn decide(&mut self, planned: Planned, differences: Vec<String>) {
        if differences.is_empty() {
            if let Op::SetQos { index, .. } = planned.op {
                self.settle_qos(index, true);
            }
            return;
        }
        let sent = self.config.mode != SweepMode::DryRun;
        self.changes.push(Change {
            target: planned.target.clone(),
            attribute: planned.attribute.id(),
            modifier: planned.modifier,
            differences,
            sent,
        });
        if sent {
            self.send(planned);
        } else if let (Op::SetPortInfo { port, .. }, Attribute::PortInfo(info)) =
            (&planned.op, &planned.attribute)
            && let Some(p) = self.subnet.port_mut(*port)
        {
            p.info = PortInfoRepr {
                port_state: resulting_state(p.info.port_state, info.port_state),
                ..*info
            };
        }
    }

    /// A PortInfo Set's echo: a programmed field the port answers differently was not kept
    /// (ibsim keeps no VLHighLimit, NeighborMTU, VLStallCount or SubnetTimeOut). It is
    /// remembered, so later sweeps do not rewrite it forever.
    fn learn_unkept(&mut self, port: PortKey, sent: &PortInfoRepr, echo: &PortInfoRepr) {
        for line in differences(&Attribute::PortInfo(*echo), &Attribute::PortInfo(*sent), "") {
            let Some((field, _)) = line.split_once(':') else {
                continue;
            };
            // PortState is not among the table's fields: a refused transition is a failure,
            // not a field the port does not keep.
            let field = PORT_INFO_FIELDS
                .iter()
                .map(|(name, _)| *name)
                .find(|name| *name == field);
            if let Some(field) = field {
                let known = self.config.unkept.entry(port).or_default();
                if !known.contains(&field) {
                    debug!(?port, field, "port does not keep this PortInfo field");
                    known.push(field);
                }
            }
        }
    }

    /// Per port, the PortInfo fields found not to be kept (to carry into the next sweep).
    pub fn unkept(&self) -> &BTreeMap<PortKey, Vec<&'static str>> {
        &self.config.unkept
    }

    /// The changes found (Diff and DryRun modes), in the order they were decided.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    fn send(&mut self, planned: Planned) {
        self.send_at(planned, None);
    }

    /// Sends a Set now, or once `not_before` has come.
    fn send_at(&mut self, planned: Planned, not_before: Option<Instant>) {
        let Ok(route) = DrPath::request(&planned.path) else {
            return;
        };
        let smp = SmpRepr::set(
            &planned.attribute,
            planned.modifier,
            0,
            Routing::Directed(route),
        );
        let request = Request {
            smp,
            dlid: None,
            node: planned.node,
            timeout: planned.timeout,
            context: planned.op,
        };
        match not_before {
            Some(at) => self.scheduler.submit_at(at, request),
            None => self.scheduler.submit(request),
        }
    }

    fn get(&mut self, node: u64, path: &[u8], id: AttributeId, modifier: u32, op: Op) {
        let Ok(route) = DrPath::request(path) else {
            warn!(?path, "route longer than 63 hops; not followed");
            return;
        };
        let smp = SmpRepr::get(id, modifier, 0, Routing::Directed(route));
        self.scheduler.submit(Request {
            smp,
            dlid: None,
            node,
            timeout: None,
            context: op,
        });
    }
}

/// The Gets that read what a QoS Set would overwrite: the Set's own modifier, except that an
/// SL2VL Set for several pairs is read pair by pair (a Get cannot use the all-ports bits).
fn read_modifiers(subnet: &Subnet, set: &QosSet) -> Vec<u32> {
    let Attribute::SlToVlMappingTable(_) = set.attribute else {
        return vec![set.modifier];
    };
    let pair = |input, output| u32::from(SlToVlModifier::Pair { input, output });
    let inputs = || 0..=subnet.nodes.get(&set.node).map_or(0, |n| n.info.num_ports);
    match SlToVlModifier::try_from(set.modifier) {
        Ok(SlToVlModifier::All) => set
            .ports
            .iter()
            .flat_map(|&(_, output)| inputs().map(move |input| pair(input, output)))
            .collect(),
        Ok(SlToVlModifier::AllInputs { output }) => {
            inputs().map(|input| pair(input, output)).collect()
        }
        _ => vec![set.modifier],
    }
}

/// The state a port would be in after a PortInfo Set asking for `asked`.
fn resulting_state(held: PortState, asked: PortState) -> PortState {
    if asked == PortState::NoChange {
        held
    } else {
        asked
    }
}

/// What differs between what the fabric holds and what a Set would write, one line each. Only
/// what the SM programs is compared: for PortInfo, the fields the LID and link managers and QoS
/// set; a state change counts only when one is asked for.
fn differences(held: &Attribute, planned: &Attribute, label: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, held: String, planned: String| {
        if held != planned {
            out.push(format!("{label}{name}: {held} -> {planned}"));
        }
    };
    match (held, planned) {
        (Attribute::PortInfo(h), Attribute::PortInfo(p)) => {
            for (name, show) in PORT_INFO_FIELDS {
                field(name, show(h), show(p));
            }
            if p.port_state != PortState::NoChange {
                field(
                    "PortState",
                    format!("{:?}", h.port_state),
                    format!("{:?}", p.port_state),
                );
            }
        }
        (Attribute::SwitchInfo(h), Attribute::SwitchInfo(p)) => {
            field(
                "LinearFDBTop",
                h.linear_fdb_top.to_string(),
                p.linear_fdb_top.to_string(),
            );
            if h.port_state_change {
                out.push(format!("{label}PortStateChange: set -> cleared"));
            }
        }
        (Attribute::LinearForwardingTable(h), Attribute::LinearForwardingTable(p)) => {
            let differing = h.ports.iter().zip(&p.ports).filter(|(a, b)| a != b).count();
            if differing > 0 {
                out.push(format!(
                    "{label}{differing} of 64 LIDs forwarded differently"
                ));
            }
        }
        (Attribute::SlToVlMappingTable(h), Attribute::SlToVlMappingTable(p)) => {
            field("SL2VL", format!("{:?}", h.vls), format!("{:?}", p.vls));
        }
        (Attribute::VlArbitrationTable(h), Attribute::VlArbitrationTable(p)) => {
            let show = |t: &ibqos_mad::VlArbitrationTableRepr| {
                let last = t
                    .entries
                    .iter()
                    .rposition(|e| e.weight != 0 || e.vl != 0)
                    .map_or(0, |i| i + 1);
                t.entries[..last]
                    .iter()
                    .map(|e| format!("{}:{}", e.vl, e.weight))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            field("VLArb", show(h), show(p));
        }
        (held, planned) => out.push(format!(
            "{label}read {:?}, planned {:?}",
            held.id(),
            planned.id()
        )),
    }
    out
}

/// A fairness key for a node not yet known by GUID: its route.
fn path_key(path: &[u8]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn description_text(desc: &NodeDescriptionRepr) -> String {
    desc.to_string_lossy().trim_end_matches('\0').to_string()
}
