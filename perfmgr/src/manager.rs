//! The performance manager itself (OpenSM's `osm_perfmgr.c`): the monitored nodes, the sweep
//! that queries their PMAs, and what each answer does to the database.
//!
//! A sweep goes over the monitored nodes in host-order GUID order. A port whose PMA's
//! ClassPortInfo is not known yet gets a ClassPortInfo Get and nothing else that sweep (a
//! switch gets one for all its ports). A known port gets PortCounters and, when its PMA keeps
//! PortCountersExtended, that too. Every query goes to QP1 at SL 0, as OpenSM sends them, unless
//! the port's PMA redirected the PerfMgr (a LID, a QP and a P_Key; GID redirection is not
//! followed, as in OpenSM). With `perfmgr_lanes`, beyond OpenSM, each port's per-VL and per-SL
//! attributes follow its PortCounters, except those its PMA showed it lacks ([`crate::lanes`]).
//!
//! Sans-IO: the caller hands in the subnet after each SM sweep, the MADs that arrive and the
//! time, and takes out the MADs to send and the notices to log.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use ibqos_exchange::class::GSI_QKEY;
use ibqos_exchange::scheduler::{Completion, Failure, Request, Scheduler, SchedulerConfig};
use ibqos_exchange::{Address, Engine, Gmp, Message, OutgoingMad, Peer};
use ibqos_mad::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, Mad, Method, MgmtClass, NodeType,
    PerfAttributeId, PerfCapabilityMask, PerfMgtMad, PortCounters, PortCountersExtended,
    PortCountersExtendedRepr, PortCountersRepr, Status,
};

use crate::config::PerfMgrConfig;
use crate::counters::{
    DataReading, ErrorCounter, ErrorReading, UnixTime, extended_near_full, port_counters_near_full,
};
use crate::db::Database;
use crate::lanes::{Lane, LaneDatabase, LaneSet};
use crate::notice::{About, Notice, RemotePort};

mod console;

/// The PerfMgt class version every PMA implements (IBA 16.1.1).
const CLASS_VERSION: u8 = 1;

/// The default partition's full-member P_Key.
const DEFAULT_PKEY: u16 = 0xffff;

/// A P_Key without its membership bit.
const PKEY_BASE: u16 = 0x7fff;

/// One node of the subnet as the SM last swept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetNode {
    pub guid: u64,
    /// Its NodeDescription, OpenSM's name for it.
    pub description: String,
    pub node_type: NodeType,
    /// A switch whose port 0 is a port of its own, with counters.
    pub enhanced_port0: bool,
    /// NodeInfo NumPorts, port 0 not counted.
    pub num_ports: u8,
    /// The ports the SM found, each with the LID its PMA is addressed at (a switch's port 0
    /// LID for every port of a switch).
    pub ports: Vec<SubnetPort>,
}

/// One port of a [`SubnetNode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetPort {
    pub port: u8,
    pub lid: u16,
    /// The port at the other end of its link, if any.
    pub remote: Option<RemotePort>,
}

/// OpenSM's sweep states, numbered as OpenSM logs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepState {
    /// No sweep under way.
    Sleep = 0,
    /// A sweep is sending its queries.
    Active = 1,
    /// A sweep waits for room on the wire.
    Suspended = 2,
    /// Between sweeps, clears are still being sent.
    PostProcessing = 3,
}

impl SweepState {
    /// The console's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SweepState::Sleep => "Sleeping",
            SweepState::Active => "Active",
            SweepState::Suspended => "Suspended",
            SweepState::PostProcessing => "PostProcessing",
        }
    }
}

/// A port the PerfMgr monitors, with what its PMA said of itself.
#[derive(Debug, Clone)]
struct MonitoredPort {
    /// The port existed when the node was first seen; only such ports are queried.
    valid: bool,
    /// `cap_mask` holds the PMA's ClassPortInfo CapabilityMask.
    cpi_valid: bool,
    cap_mask: PerfCapabilityMask,
    remote: Option<RemotePort>,
    /// Where its PMA redirected the PerfMgr.
    redirect: Option<Redirect>,
    /// The per-VL and per-SL attributes its PMA does not keep.
    lacking: LaneSet,
}

impl MonitoredPort {
    fn has(&self, capability: PerfCapabilityMask) -> bool {
        self.cpi_valid && self.cap_mask.0 & capability.0 != 0
    }

    /// PortCountersExtended in either form.
    fn extended(&self) -> bool {
        self.has(PerfCapabilityMask::EXTENDED_WIDTH | PerfCapabilityMask::EXTENDED_WIDTH_NO_IETF)
    }

    /// PortCountersExtended with the unicast and multicast counters.
    fn ietf(&self) -> bool {
        self.has(PerfCapabilityMask::EXTENDED_WIDTH)
    }

    fn xmit_wait(&self) -> bool {
        self.has(PerfCapabilityMask::PORT_XMIT_WAIT)
    }
}

/// A LID redirection a PMA asked for, and followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Redirect {
    peer: Peer,
    /// The P_Key it named, as it named it.
    p_key: u16,
}

/// A node the PerfMgr monitors (OpenSM's `monitored_node_t`).
#[derive(Debug, Clone)]
struct MonitoredNode {
    name: String,
    is_switch: bool,
    enhanced_port0: bool,
    /// Ports 0 to NumPorts.
    ports: Vec<MonitoredPort>,
}

impl MonitoredNode {
    fn new(node: &SubnetNode) -> MonitoredNode {
        let mut ports = vec![
            MonitoredPort {
                valid: false,
                cpi_valid: false,
                cap_mask: PerfCapabilityMask(0),
                remote: None,
                redirect: None,
                lacking: LaneSet::default(),
            };
            usize::from(node.num_ports) + 1
        ];
        for found in &node.ports {
            if let Some(port) = ports.get_mut(usize::from(found.port)) {
                port.valid = true;
                port.remote.clone_from(&found.remote);
            }
        }
        if !node.enhanced_port0 {
            ports[0].valid = false;
        }
        MonitoredNode {
            name: node.description.clone(),
            is_switch: node.node_type == NodeType::Switch,
            enhanced_port0: node.enhanced_port0,
            ports,
        }
    }

    fn first_port(&self) -> u8 {
        u8::from(!self.enhanced_port0)
    }

    /// The ports one PMA answers for, with `port`: every port of a switch, else `port` alone.
    fn pma_ports_mut(&mut self, port: u8) -> &mut [MonitoredPort] {
        if self.is_switch {
            let first = usize::from(self.first_port());
            &mut self.ports[first..]
        } else {
            let port = usize::from(port);
            self.ports.get_mut(port..=port).unwrap_or_default()
        }
    }
}

/// What a query asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    ClassPortInfo,
    /// PortCounters: a Get to read, a Set to clear the selected counters.
    PortCounters {
        method: Method,
        select: u16,
        select2: u8,
    },
    /// PortCountersExtended, CounterSelect 0x00FF.
    Extended {
        method: Method,
    },
    /// A per-VL or per-SL attribute: a Get to read, a Set to clear all its counters.
    Lane {
        lane: Lane,
        method: Method,
    },
}

/// One PerfMgt query and what its answer is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Query {
    node: u64,
    port: u8,
    lid: u16,
    ask: Ask,
}

impl Query {
    fn attribute(&self) -> PerfAttributeId {
        match self.ask {
            Ask::ClassPortInfo => PerfAttributeId::ClassPortInfo,
            Ask::PortCounters { .. } => PerfAttributeId::PortCounters,
            Ask::Extended { .. } => PerfAttributeId::PortCountersExtended,
            Ask::Lane { lane, .. } => lane.attribute(),
        }
    }

    /// The MAD, as `perfmgr_build_mad` and the `perfmgr_send_*_mad` functions fill it.
    fn mad(&self) -> Gmp {
        let mut bytes = [0u8; Gmp::LEN];
        let mut mad = PerfMgtMad::new_unchecked(&mut bytes[..]);
        let data = mad.data_mut();
        let method = match self.ask {
            Ask::ClassPortInfo => Method::Get,
            Ask::PortCounters {
                method,
                select,
                select2,
            } => {
                let mut counters =
                    PortCounters::new_unchecked(&mut data[..PortCounters::<&[u8]>::LEN]);
                counters.set_port_select(self.port);
                counters.set_counter_select(select);
                counters.set_counter_select2(select2);
                method
            }
            Ask::Extended { method } => {
                let len = PortCountersExtended::<&[u8]>::LEN;
                let mut counters = PortCountersExtended::new_unchecked(&mut data[..len]);
                counters.set_port_select(self.port);
                counters.set_counter_select(0x00ff);
                method
            }
            Ask::Lane { lane, method } => {
                let select = if method == Method::Set {
                    lane.clear_all()
                } else {
                    0
                };
                Lane::write_request(data, self.port, select);
                method
            }
        };
        let mut header = mad.header_mut();
        header.set_base_version(1);
        header.set_mgmt_class(MgmtClass::PerfMgt);
        header.set_class_version(CLASS_VERSION);
        header.set_method(method);
        header.set_attribute_id(AttributeId::from(u16::from(self.attribute())));
        Gmp::from_bytes(&bytes).expect("a PerfMgt MAD with BaseVersion 1 is a GMP")
    }
}

/// The performance manager.
#[derive(Debug)]
pub struct PerfMgr {
    config: PerfMgrConfig,
    /// The subnet as the SM last handed it in, by GUID.
    subnet: BTreeMap<u64, SubnetNode>,
    /// The monitored nodes, by host-order GUID.
    monitored: BTreeMap<u64, MonitoredNode>,
    db: Database,
    /// The per-VL and per-SL counters, with `perfmgr_lanes`.
    lanes: LaneDatabase,
    scheduler: Scheduler<Query, Gmp>,
    /// The sweep's queries not yet handed to the scheduler, in order.
    planned: VecDeque<Query>,
    /// Clears from answers, sent before the rest of the sweep.
    clears: VecDeque<Query>,
    /// When the timer starts the next sweep; `None` when the PerfMgr is disabled.
    next_sweep: Option<Instant>,
    /// An Instant and the Unix time it was, from which every reading is dated.
    epoch: (Instant, UnixTime),
    /// The P_Key table of the PerfMgr's own port, by index, for a redirection's P_Key.
    local_pkeys: Vec<u16>,
    /// The redirected PMAs by LID, where the queries to that LID go instead of QP1.
    redirected: BTreeMap<u16, Peer>,
    notices: Vec<Notice>,
}

impl PerfMgr {
    /// A PerfMgr with `config`, created at `now`, which was `unix_now` on the wall clock. With
    /// `perfmgr` on, its first sweep is one sweep time away, as OpenSM's timer.
    pub fn new(config: PerfMgrConfig, now: Instant, unix_now: UnixTime) -> PerfMgr {
        let config = config.verified();
        let scheduler = Scheduler::new(scheduler_config(&config));
        PerfMgr {
            next_sweep: config.enabled.then(|| now + config.sweep_period()),
            config,
            subnet: BTreeMap::new(),
            monitored: BTreeMap::new(),
            db: Database::default(),
            lanes: LaneDatabase::default(),
            scheduler,
            planned: VecDeque::new(),
            clears: VecDeque::new(),
            epoch: (now, unix_now),
            notices: Vec::new(),
            local_pkeys: vec![DEFAULT_PKEY],
            redirected: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &PerfMgrConfig {
        &self.config
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The per-VL and per-SL counters read with `perfmgr_lanes`.
    pub fn lanes(&self) -> &LaneDatabase {
        &self.lanes
    }

    /// The subnet the next sweeps monitor: the SM's last sweep.
    pub fn set_subnet(&mut self, nodes: impl IntoIterator<Item = SubnetNode>) {
        self.subnet = nodes.into_iter().map(|node| (node.guid, node)).collect();
    }

    /// The P_Key table of the PerfMgr's port, which a redirection's P_Key must be in (OpenSM's
    /// `validate_redir_pkey`). Until it is given, the default P_Key at index 0, where the
    /// partition manager puts it.
    pub fn set_local_pkeys(&mut self, pkeys: Vec<u16>) {
        self.local_pkeys = pkeys;
    }

    /// What happened since the last call, oldest first.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    pub fn sweep_state(&self) -> SweepState {
        if !self.planned.is_empty() {
            if self.scheduler.outstanding() >= scheduler_config(&self.config).max_outstanding {
                SweepState::Suspended
            } else {
                SweepState::Active
            }
        } else if !self.clears.is_empty() {
            SweepState::PostProcessing
        } else {
            SweepState::Sleep
        }
    }

    /// PerfMgt MADs on the wire.
    pub fn outstanding(&self) -> usize {
        self.scheduler.outstanding()
    }

    /// The Unix time at `now`.
    fn unix(&self, now: Instant) -> UnixTime {
        let (at, unix) = self.epoch;
        let since = now.saturating_duration_since(at).as_secs();
        unix.saturating_add(i64::try_from(since).unwrap_or(i64::MAX))
    }

    /// `osm_perfmgr_process`: a sweep now, unless the last one still has queries to send.
    pub fn sweep(&mut self, now: Instant) {
        let state = self.sweep_state();
        if state != SweepState::Sleep {
            self.notices
                .push(Notice::SweepSkipped { state: state as u8 });
            return;
        }
        self.collect_nodes();
        let time = self.unix(now);
        let mut gone = Vec::new();
        for (&guid, node) in &self.monitored {
            let Some(current) = self.subnet.get(&guid) else {
                self.notices.push(Notice::NodeGone {
                    name: node.name.clone(),
                    guid,
                });
                gone.push(guid);
                continue;
            };
            self.db.create_entry(
                guid,
                node.enhanced_port0,
                usize::from(current.num_ports) + 1,
                &current.description,
                time,
            );
            self.db.mark_active(guid, true);
            plan_node(&self.config, guid, node, current, &mut self.planned);
        }
        for guid in gone {
            self.monitored.remove(&guid);
            self.lanes.delete(guid);
            if self.config.remove_nodes {
                self.db.delete(guid);
            } else {
                self.db.mark_active(guid, false);
            }
        }
    }

    /// `collect_guids`: every node of the subnet not monitored yet is, CAs only without
    /// `perfmgr_ignore_cas`.
    fn collect_nodes(&mut self) {
        for (&guid, node) in &self.subnet {
            if self.monitored.contains_key(&guid)
                || (self.config.ignore_cas && node.node_type == NodeType::Ca)
            {
                continue;
            }
            self.monitored.insert(guid, MonitoredNode::new(node));
        }
    }

    /// Whether the sweep timer went off by `now`; if so it is set again, one sweep time on, as
    /// OpenSM's timer restarts when it signals. [`on_time`](Engine::on_time) then sweeps at
    /// once; an SM that is not master takes the timer first, to discover the subnet before it
    /// calls [`sweep`](PerfMgr::sweep) (`osm_perfmgr_process`).
    pub fn take_due_sweep(&mut self, now: Instant) -> bool {
        match self.next_sweep {
            Some(due) if due <= now => {
                self.next_sweep = Some(now + self.config.sweep_period());
                true
            }
            _ => false,
        }
    }

    /// The console's `clear_counters`: the database's totals to 0, the fabric untouched.
    pub fn clear_counters(&mut self, now: Instant) {
        let time = self.unix(now);
        self.db.clear_counters(time);
    }

    /// The console's `clear_inactive`: how many nodes left the database.
    pub fn delete_inactive(&mut self) -> usize {
        self.db.delete_inactive()
    }

    /// The console's `perfmgr enable` and `disable`: the sweep timer starts, one sweep time
    /// from `now`, or stops.
    pub fn set_enabled(&mut self, now: Instant, enabled: bool) {
        self.next_sweep = enabled.then(|| now + self.config.sweep_period());
    }

    /// The console's `perfmgr sweep_time`: the time between sweeps from the next one on. A time
    /// below 1 is refused, as the console refuses it. OpenSM then signals a sweep at once, which
    /// the caller starts: on an SM that is not master it discovers the subnet first.
    pub fn set_sweep_time(&mut self, seconds: u16) -> bool {
        if seconds < 1 {
            return false;
        }
        self.config.sweep_time_s = seconds;
        true
    }

    /// The console's `perfmgr` with no argument.
    pub fn status(&self) -> String {
        let truth = |b: bool| if b { "TRUE" } else { "FALSE" };
        format!(
            "Performance Manager status:\n\
             state                        : {}\n\
             sweep state                  : {}\n\
             sweep time                   : {}s\n\
             outstanding queries/max      : {}/{}\n\
             remove missing nodes from DB : {}\n\
             query ClassPortInfo          : {}\n",
            if self.next_sweep.is_some() {
                "Enabled"
            } else {
                "Disabled"
            },
            self.sweep_state().name(),
            self.config.sweep_time_s,
            self.scheduler.outstanding(),
            self.config.max_outstanding_queries,
            truth(self.config.remove_nodes),
            truth(self.config.query_cpi),
        )
    }

    /// Hands the scheduler the next query while it has room: clears first, then the sweep.
    fn feed(&mut self) {
        while self.scheduler.wants_work() {
            let Some(query) = self.clears.pop_front().or_else(|| self.planned.pop_front()) else {
                return;
            };
            self.scheduler.submit(Request {
                mad: query.mad(),
                dlid: Some(query.lid),
                node: query.node,
                timeout: None,
                context: query,
            });
        }
    }

    fn about(&self, query: &Query) -> About {
        About {
            name: self
                .monitored
                .get(&query.node)
                .map_or_else(String::new, |node| node.name.clone()),
            guid: query.node,
            port: query.port,
        }
    }

    fn settle(&mut self, now: Instant, completion: Completion<Query, Gmp>) {
        match completion {
            Completion::Answered { context, response } => {
                self.on_answer(now, context, &response, false)
            }
            Completion::Failed {
                context, failure, ..
            } if matches!(context.ask, Ask::Lane { .. }) && lacks_attribute(failure) => {
                self.mark_lacking(&context, failure)
            }
            Completion::Failed {
                context,
                request,
                failure,
            } => {
                self.notices.push(Notice::QueryFailed {
                    about: self.about(&context),
                    lid: context.lid,
                    tid: request.transaction_id(),
                    failure,
                });
                if self.config.redirect && matches!(failure, Failure::TimedOut { .. }) {
                    self.forget_redirect(&context);
                }
            }
        }
    }

    /// A PMA that does not keep a per-VL or per-SL attribute: none of its ports is asked for it
    /// again while the node stays monitored.
    fn mark_lacking(&mut self, query: &Query, failure: Failure) {
        let Ask::Lane { lane, .. } = query.ask else {
            return;
        };
        let about = self.about(query);
        let Some(node) = self.monitored.get_mut(&query.node) else {
            return;
        };
        for port in node.pma_ports_mut(query.port) {
            port.lacking.insert(lane);
        }
        self.notices.push(Notice::LaneLacking {
            about,
            attribute: lane.attribute(),
            failure,
        });
    }

    /// After a timeout, the port is asked at its own LID again (`perfmgr_mad_send_err_callback`).
    fn forget_redirect(&mut self, query: &Query) {
        let Some(port) = self.monitored_port_mut(query) else {
            return;
        };
        if let Some(gone) = port.redirect.take() {
            self.unlink_redirect(gone);
        }
    }

    /// A redirection no port keeps any more: the queries to its LID go to QP1 again.
    fn unlink_redirect(&mut self, gone: Redirect) {
        let still_used = self.monitored.values().flat_map(|node| &node.ports);
        if !still_used
            .filter_map(|port| port.redirect)
            .any(|kept| kept.peer.lid == gone.peer.lid)
        {
            self.redirected.remove(&gone.peer.lid);
        }
    }

    fn monitored_port_mut(&mut self, query: &Query) -> Option<&mut MonitoredPort> {
        self.monitored
            .get_mut(&query.node)?
            .ports
            .get_mut(usize::from(query.port))
    }

    /// `handle_redirect`: a ClassPortInfo answered with the redirect status. A valid LID
    /// redirection is followed: ClassPortInfo asked again there (or, without
    /// `perfmgr_query_cpi`, the query itself). Whether the redirection is valid; a GID
    /// redirection counts as valid without being followed, as in OpenSM.
    fn on_redirect(&mut self, query: &Query, info: &ClassPortInfoRepr) -> bool {
        let about = self.about(query);
        let refuse = |notices: &mut Vec<Notice>, why| {
            notices.push(Notice::RedirectRefused {
                about: about.clone(),
                why,
            })
        };
        let mut valid = true;
        if !self.config.redirect {
            refuse(&mut self.notices, "Redirection requested but disabled");
            valid = false;
        }
        let gid_set = info.redirect_gid_prefix != 0 || info.redirect_gid_interface_id != 0;
        if info.redirect_lid == 0 && !gid_set {
            refuse(
                &mut self.notices,
                "Invalid redirection (both redirect LID and GID are zero)",
            );
            valid = false;
        }
        if info.redirect_qp == 0 {
            refuse(&mut self.notices, "Invalid RedirectQP");
            valid = false;
        }
        if info.redirect_p_key == 0 {
            refuse(&mut self.notices, "Invalid RedirectP_Key");
            valid = false;
        }
        if info.redirect_q_key != GSI_QKEY {
            refuse(&mut self.notices, "Invalid RedirectQ_Key");
            valid = false;
        }
        let base = info.redirect_p_key & PKEY_BASE;
        let pkey_index = self
            .local_pkeys
            .iter()
            .position(|&pkey| pkey & PKEY_BASE == base && base != 0);
        if pkey_index.is_none() {
            refuse(&mut self.notices, "Index for Pkey not found");
            valid = false;
        }
        if info.redirect_lid == 0 {
            refuse(&mut self.notices, "GID redirection not currently supported");
            return valid;
        }
        let (true, Some(pkey_index)) = (valid, pkey_index) else {
            return false;
        };
        let peer = Peer {
            lid: info.redirect_lid,
            qp: info.redirect_qp,
            pkey_index: u16::try_from(pkey_index).unwrap_or(u16::MAX),
        };
        self.notices.push(Notice::Redirected {
            about,
            lid: peer.lid,
            qp: peer.qp,
        });
        self.redirected.insert(peer.lid, peer);
        let query_cpi = self.config.query_cpi;
        if let Some(port) = self.monitored_port_mut(query) {
            port.redirect = Some(Redirect {
                peer,
                p_key: info.redirect_p_key,
            });
            if query_cpi {
                port.cpi_valid = false;
            }
        }
        let again = if query_cpi {
            Ask::ClassPortInfo
        } else {
            query.ask
        };
        self.clears.push_back(Query {
            lid: peer.lid,
            ask: again,
            ..*query
        });
        true
    }

    /// `pc_recv_process`. `redirect`: the answer came with the redirect status.
    fn on_answer(&mut self, now: Instant, query: Query, response: &Gmp, redirect: bool) {
        if !self.monitored.contains_key(&query.node) {
            return;
        }
        let bytes = response.to_bytes();
        let Ok(mad) = PerfMgtMad::new_checked(&bytes[..]) else {
            return;
        };
        let data = mad.data();
        let time = self.unix(now);
        let read = match query.ask {
            Ask::ClassPortInfo => ClassPortInfo::new_checked(data)
                .ok()
                .and_then(|view| ClassPortInfoRepr::parse(&view).ok())
                .map(|info| {
                    // OpenSM then keeps the redirecting answer's CapabilityMask as well.
                    if !redirect || self.on_redirect(&query, &info) {
                        self.on_class_port_info(&query, info.capability_mask);
                    }
                }),
            Ask::PortCounters { method, .. } => PortCounters::new_checked(data)
                .ok()
                .and_then(|view| PortCountersRepr::parse(&view).ok())
                .map(|wire| self.on_port_counters(&query, method, &wire, time)),
            Ask::Extended { method } => PortCountersExtended::new_checked(data)
                .ok()
                .and_then(|view| PortCountersExtendedRepr::parse(&view).ok())
                .map(|wire| self.on_extended(&query, method, &wire, time)),
            Ask::Lane { lane, method } => lane
                .read(data)
                .map(|counters| self.on_lanes(&query, lane, method, counters, now)),
        };
        if read.is_none() {
            self.notices.push(Notice::Unreadable {
                about: self.about(&query),
                attribute: query.attribute(),
            });
        }
    }

    /// A ClassPortInfo answer: its CapabilityMask holds for the port, or for every port of a
    /// switch.
    fn on_class_port_info(&mut self, query: &Query, cap_mask: PerfCapabilityMask) {
        if !self.config.query_cpi {
            return;
        }
        let Some(node) = self.monitored.get_mut(&query.node) else {
            return;
        };
        for port in node.pma_ports_mut(query.port) {
            port.cap_mask = cap_mask;
            port.cpi_valid = true;
        }
    }

    fn monitored_port(&self, query: &Query) -> Option<&MonitoredPort> {
        self.monitored
            .get(&query.node)?
            .ports
            .get(usize::from(query.port))
    }

    /// A PortCounters answer: the error counters, and the data counters unless
    /// PortCountersExtended gives them.
    fn on_port_counters(
        &mut self,
        query: &Query,
        method: Method,
        wire: &PortCountersRepr,
        time: UnixTime,
    ) {
        let Some(port) = self.monitored_port(query).cloned() else {
            return;
        };
        let (guid, number) = (query.node, query.port);
        let extended = port.extended();
        let errors = ErrorReading::from_port_counters(wire, port.xmit_wait(), time);
        let data = DataReading::from_port_counters(wire, time);
        if method == Method::Get {
            if self
                .db
                .previous_errors(guid, number)
                .is_some_and(|previous| errors.fell_below(previous))
            {
                self.notices
                    .push(Notice::ErrorsClearedOutOfBand(self.about(query)));
                self.db.clear_previous_errors(guid, number, time);
            }
            if !extended {
                self.check_data_cleared(query, &data, time);
            }
            if self.config.log_errors {
                self.log_errors(query, &port, &errors);
            }
            self.db.add_errors(guid, number, &errors);
            if !extended {
                self.db.add_data(guid, number, &data, false);
            }
        } else {
            self.db.clear_previous_errors(guid, number, time);
            if !extended {
                self.db.clear_previous_data(guid, number, time);
            }
        }
        if port.valid && port_counters_near_full(wire, port.xmit_wait(), extended) {
            self.notices.push(Notice::NearFull {
                extended: false,
                about: self.about(query),
            });
            // Some PMAs clear the extended counters with the 32-bit ones: with
            // PortCountersExtended the data counters are left alone.
            let select = if extended { 0x0fff } else { 0xffff };
            self.clears.push_back(Query {
                ask: Ask::PortCounters {
                    method: Method::Set,
                    select,
                    select2: u8::from(port.xmit_wait()),
                },
                ..*query
            });
            self.db.clear_previous_errors(guid, number, time);
            if !extended {
                self.db.clear_previous_data(guid, number, time);
            }
        }
    }

    /// A PortCountersExtended answer: the data counters.
    fn on_extended(
        &mut self,
        query: &Query,
        method: Method,
        wire: &PortCountersExtendedRepr,
        time: UnixTime,
    ) {
        let Some(port) = self.monitored_port(query).cloned() else {
            return;
        };
        let (guid, number) = (query.node, query.port);
        let data = DataReading::from_extended(wire, port.ietf(), time);
        if method == Method::Get {
            self.check_data_cleared(query, &data, time);
            self.db.add_data(guid, number, &data, port.ietf());
        } else {
            self.db.clear_previous_data(guid, number, time);
        }
        if port.valid && extended_near_full(wire, port.ietf()) {
            self.notices.push(Notice::NearFull {
                extended: true,
                about: self.about(query),
            });
            self.clears.push_back(Query {
                ask: Ask::Extended {
                    method: Method::Set,
                },
                ..*query
            });
            self.db.clear_previous_data(guid, number, time);
        }
    }

    /// A per-VL or per-SL answer: a Get's counters and rate are kept, and counters near full
    /// cleared; a Set's answer says nothing new.
    fn on_lanes(
        &mut self,
        query: &Query,
        lane: Lane,
        method: Method,
        counters: Vec<u64>,
        now: Instant,
    ) {
        if method != Method::Get {
            return;
        }
        let (guid, port) = (query.node, query.port);
        let near_full = lane.near_full(&counters);
        let taken = self.lanes.take(guid, port, lane, counters, now);
        let attribute = lane.attribute();
        if taken.cleared_out_of_band {
            self.notices.push(Notice::LaneClearedOutOfBand {
                about: self.about(query),
                attribute,
            });
        }
        if near_full {
            self.notices.push(Notice::LaneNearFull {
                about: self.about(query),
                attribute,
            });
            self.clears.push_back(Query {
                ask: Ask::Lane {
                    lane,
                    method: Method::Set,
                },
                ..*query
            });
            self.lanes.cleared(guid, port, lane);
        }
    }

    /// `perfmgr_check_data_cnt_oob_clear`.
    fn check_data_cleared(&mut self, query: &Query, data: &DataReading, time: UnixTime) {
        let (guid, port) = (query.node, query.port);
        if self
            .db
            .previous_data(guid, port)
            .is_some_and(|previous| data.fell_below(previous))
        {
            self.notices
                .push(Notice::DataClearedOutOfBand(self.about(query)));
            self.db.clear_previous_data(guid, port, time);
        }
    }

    /// `perfmgr_log_errors`: each error counter that grew since the previous reading, and
    /// PortXmitWait when it grew by the threshold and `perfmgr_xmit_wait_log` asks.
    fn log_errors(&mut self, query: &Query, port: &MonitoredPort, errors: &ErrorReading) {
        let Some(previous) = self.db.previous_errors(query.node, query.port).copied() else {
            return;
        };
        for counter in ErrorCounter::ALL {
            let (now, before) = (errors.get(counter), previous.get(counter));
            if now <= before {
                continue;
            }
            let growth = now - before;
            let remote = if counter == ErrorCounter::XmitWait {
                let threshold = u64::from(self.config.xmit_wait_threshold);
                if !self.config.xmit_wait_log || growth < threshold {
                    continue;
                }
                None
            } else {
                port.remote.clone()
            };
            self.notices.push(Notice::ErrorsGrew {
                counter,
                growth,
                about: self.about(query),
                remote,
            });
        }
    }
}

/// The scheduler of the PerfMgr's queries: OpenSM binds its agent with the SM's timeout and
/// retries, and caps what is on the wire at `perfmgr_max_outstanding_queries`.
fn scheduler_config(config: &PerfMgrConfig) -> SchedulerConfig {
    SchedulerConfig {
        max_outstanding: usize::try_from(config.max_outstanding_queries).unwrap_or(usize::MAX),
        timeout: config.timeout,
        retries: config.retries,
    }
}

/// `perfmgr_query_counters` for one node: its queries, in port order.
fn plan_node(
    config: &PerfMgrConfig,
    guid: u64,
    node: &MonitoredNode,
    current: &SubnetNode,
    planned: &mut VecDeque<Query>,
) {
    for number in node.first_port()..=current.num_ports {
        let Some(port) = node.ports.get(usize::from(number)).filter(|p| p.valid) else {
            continue;
        };
        let Some(lid) = port
            .redirect
            .map(|redirect| redirect.peer.lid)
            .or(port_lid(current, number))
            .filter(|&lid| lid != 0)
        else {
            continue;
        };
        let query = |ask| Query {
            node: guid,
            port: number,
            lid,
            ask,
        };
        if config.query_cpi && !port.cpi_valid {
            planned.push_back(query(Ask::ClassPortInfo));
            if node.is_switch {
                // One ClassPortInfo speaks for every port of a switch.
                return;
            }
            continue;
        }
        planned.push_back(query(Ask::PortCounters {
            method: Method::Get,
            select: 0xffff,
            select2: 1,
        }));
        if port.extended() {
            planned.push_back(query(Ask::Extended {
                method: Method::Get,
            }));
        }
        if config.lanes {
            let kept = Lane::ALL
                .into_iter()
                .filter(|&lane| !port.lacking.contains(lane));
            planned.extend(kept.map(|lane| {
                query(Ask::Lane {
                    lane,
                    method: Method::Get,
                })
            }));
        }
    }
}

/// The LID the subnet gives `node`'s PMA for `port`, if the SM found the port.
fn port_lid(node: &SubnetNode, port: u8) -> Option<u16> {
    node.ports.iter().find(|p| p.port == port).map(|p| p.lid)
}

/// Whether a per-VL or per-SL query's failure says the PMA does not keep the attribute: status
/// 0x000C (method and attribute unsupported), no answer, or the query handed back undelivered,
/// as ibsim hands back a MAD it has no handler for.
fn lacks_attribute(failure: Failure) -> bool {
    match failure {
        Failure::Status(status) => status == Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        Failure::TimedOut { .. } | Failure::Dropped { .. } => true,
        Failure::Mismatched => false,
    }
}

impl Engine for PerfMgr {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.feed();
        let transmit = self.scheduler.poll_transmit(now)?;
        let mut out = OutgoingMad::from(&transmit);
        if let Some(peer) = transmit.dlid.and_then(|lid| self.redirected.get(&lid)) {
            out.address = Address::Peer(*peer);
        }
        Some(out)
    }

    fn next_deadline(&self) -> Option<Instant> {
        [self.scheduler.next_deadline(), self.next_sweep]
            .into_iter()
            .flatten()
            .min()
    }

    fn on_mad(&mut self, now: Instant, mad: &[u8], _from: Peer) {
        let Some(mut response) = Gmp::from_bytes(mad).filter(|gmp| gmp.class == MgmtClass::PerfMgt)
        else {
            return;
        };
        // A redirection is the PMA's answer, not a failure to retry: matched as one.
        let redirect = response.status.is_redirect();
        if redirect {
            response.status = Status::OK;
        }
        match self.scheduler.on_response(response) {
            Some(Completion::Answered { context, response }) if redirect => {
                self.on_answer(now, context, &response, true)
            }
            Some(completion) => self.settle(now, completion),
            None => {}
        }
    }

    fn on_dropped(&mut self, now: Instant, mad: &[u8]) {
        let completion = match Gmp::from_bytes(mad) {
            Some(request) => self.scheduler.on_dropped(request),
            None => match Mad::new_checked(mad) {
                Ok(header) => self.scheduler.on_dropped_header(&header),
                Err(_) => None,
            },
        };
        if let Some(completion) = completion {
            self.settle(now, completion);
        }
    }

    fn on_time(&mut self, now: Instant) {
        for completion in self.scheduler.poll_timeouts(now) {
            self.settle(now, completion);
        }
        if self.take_due_sweep(now) {
            self.sweep(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use ibqos_exchange::Address;
    use ibqos_mad::CounterHeader;

    use super::*;
    use crate::counters::DataCounter;

    const S1: u64 = 0x20_0000;
    const H1: u64 = 0x10_0002;
    const UNIX_START: UnixTime = 1_795_894_015;
    const SWITCH_CAPS: PerfCapabilityMask = PerfCapabilityMask(0x1300);

    fn switch() -> SubnetNode {
        let remote = RemotePort {
            name: "H1/U1".into(),
            guid: H1,
            port: 1,
        };
        SubnetNode {
            guid: S1,
            description: "S1".into(),
            node_type: NodeType::Switch,
            enhanced_port0: false,
            num_ports: 2,
            ports: vec![
                SubnetPort {
                    port: 1,
                    lid: 1,
                    remote: Some(remote),
                },
                SubnetPort {
                    port: 2,
                    lid: 1,
                    remote: None,
                },
            ],
        }
    }

    fn ca() -> SubnetNode {
        SubnetNode {
            guid: H1,
            description: "H1/U1".into(),
            node_type: NodeType::Ca,
            enhanced_port0: false,
            num_ports: 1,
            ports: vec![SubnetPort {
                port: 1,
                lid: 2,
                remote: None,
            }],
        }
    }

    fn quiet() -> PortCountersRepr {
        PortCountersRepr::parse(&PortCounters::new_checked(&[0u8; 44][..]).unwrap()).unwrap()
    }

    fn quiet_extended() -> PortCountersExtendedRepr {
        let zeros = [0u8; 72];
        PortCountersExtendedRepr::parse(&PortCountersExtended::new_checked(&zeros[..]).unwrap())
            .unwrap()
    }

    /// PMAs that answer from counters the test sets, by (LID, port).
    #[derive(Default)]
    struct FakePmas {
        caps: HashMap<u16, PerfCapabilityMask>,
        counters: HashMap<(u16, u8), PortCountersRepr>,
        extended: HashMap<(u16, u8), PortCountersExtendedRepr>,
        /// Every request, with its LID.
        asked: Vec<(u16, Gmp)>,
        /// Every request's QP.
        qps: Vec<u32>,
        /// The LID whose ClassPortInfo redirects, and where to.
        redirect: Option<(u16, ClassPortInfoRepr)>,
        /// Per-VL and per-SL counters by (LID, port, attribute); 0 where unset.
        lanes: HashMap<(u16, u8, Lane), Vec<u64>>,
        /// The per-VL and per-SL attributes a LID answers with status 0x000C.
        unsupported: Vec<(u16, Lane)>,
        /// The per-VL and per-SL attributes a LID never answers.
        silent: Vec<(u16, Lane)>,
        /// The per-VL and per-SL attributes whose queries to a LID come back undelivered, as
        /// ibsim hands back the per-SL ones.
        handed_back: Vec<(u16, Lane)>,
    }

    /// What comes back for a query.
    enum Reply {
        Answer(Vec<u8>),
        HandedBack(Vec<u8>),
    }

    impl FakePmas {
        /// The answer to `out`, or `None` when the PMA keeps silent.
        fn answer(&mut self, out: &OutgoingMad) -> Option<Reply> {
            let (lid, qp) = match out.address {
                Address::Lid(lid) => (lid, 1),
                Address::Peer(peer) => (peer.lid, peer.qp),
                Address::Directed => panic!("a PerfMgt query goes by LID: {out:?}"),
            };
            self.asked.push((lid, Gmp::from_bytes(&out.mad).unwrap()));
            self.qps.push(qp);
            let mut bytes = out.mad.clone();
            let mut mad = PerfMgtMad::new_unchecked(&mut bytes[..]);
            let method = mad.header().method();
            let attribute = PerfAttributeId::from(u16::from(mad.header().attribute_id()));
            mad.header_mut().set_method(Method::GetResp);
            let data = mad.data_mut();
            let header = CounterHeader::new_checked(&data[..4]).unwrap();
            let key = (lid, header.port_select());
            let select = header.counter_select();
            match attribute {
                PerfAttributeId::ClassPortInfo => {
                    let mut info = ClassPortInfoRepr::parse(
                        &ClassPortInfo::new_checked(&[0u8; 72][..]).unwrap(),
                    )
                    .unwrap();
                    info.base_version = 1;
                    info.class_version = 1;
                    info.capability_mask = self.caps[&lid];
                    if let Some((_, redirect)) = self.redirect.filter(|(from, _)| *from == lid) {
                        info = redirect;
                        mad.header_mut().set_status(Status(0x0002));
                    }
                    info.emit(&mut ClassPortInfo::new_unchecked(&mut mad.data_mut()[..72]));
                }
                PerfAttributeId::PortCounters => {
                    let counters = self.counters.entry(key).or_insert_with(quiet);
                    if method == Method::Set {
                        let wire = PortCounters::new_checked(&data[..44]).unwrap();
                        assert_eq!(wire.counter_select2() & 1, 1, "XmitWait cleared too");
                        *counters = PortCountersRepr {
                            port_xmit_data: if select & 0x1000 == 0 {
                                counters.port_xmit_data
                            } else {
                                0
                            },
                            port_select: key.1,
                            ..quiet()
                        };
                    }
                    counters.emit(&mut PortCounters::new_unchecked(&mut data[..44]));
                }
                PerfAttributeId::PortCountersExtended => {
                    let counters = self.extended.entry(key).or_insert_with(quiet_extended);
                    if method == Method::Set {
                        assert_eq!(select, 0x00ff);
                        *counters = quiet_extended();
                    }
                    counters.emit(&mut PortCountersExtended::new_unchecked(&mut data[..72]));
                }
                other => {
                    let lane = Lane::ALL
                        .into_iter()
                        .find(|lane| lane.attribute() == other)
                        .unwrap_or_else(|| panic!("the PerfMgr asked for {other}"));
                    if self.silent.contains(&(lid, lane)) {
                        return None;
                    }
                    if self.handed_back.contains(&(lid, lane)) {
                        return Some(Reply::HandedBack(out.mad.clone()));
                    }
                    if self.unsupported.contains(&(lid, lane)) {
                        mad.header_mut()
                            .set_status(Status::METHOD_ATTRIBUTE_UNSUPPORTED);
                        return Some(Reply::Answer(bytes));
                    }
                    let counters = self
                        .lanes
                        .entry((lid, header.port_select(), lane))
                        .or_insert_with(|| vec![0; lane.counters()]);
                    if method == Method::Set {
                        assert_eq!(select, lane.clear_all(), "every counter cleared");
                        counters.iter_mut().for_each(|count| *count = 0);
                    }
                    // Placed by hand, as IBA lays them out: 16 or 32 bits each from byte 4.
                    let wide = matches!(
                        lane,
                        Lane::XmitDataSl
                            | Lane::RcvDataSl
                            | Lane::SlRcvFecn
                            | Lane::SlRcvBecn
                            | Lane::VlOpData
                    );
                    for (i, &count) in counters.iter().enumerate() {
                        if wide {
                            let at = 4 + 4 * i;
                            data[at..at + 4].copy_from_slice(&(count as u32).to_be_bytes());
                        } else {
                            let at = 4 + 2 * i;
                            data[at..at + 2].copy_from_slice(&(count as u16).to_be_bytes());
                        }
                    }
                }
            }
            Some(Reply::Answer(bytes))
        }
    }

    struct Bench {
        pm: PerfMgr,
        pmas: FakePmas,
        now: Instant,
        /// The most MADs on the wire at once.
        most_outstanding: usize,
    }

    impl Bench {
        fn new(config: PerfMgrConfig) -> Bench {
            let now = Instant::now();
            let mut pm = PerfMgr::new(config, now, UNIX_START);
            pm.set_subnet([switch(), ca()]);
            let mut pmas = FakePmas::default();
            pmas.caps.insert(1, SWITCH_CAPS);
            pmas.caps.insert(2, PerfCapabilityMask(0x1200));
            Bench {
                pm,
                pmas,
                now,
                most_outstanding: 0,
            }
        }

        /// A sweep ten seconds on, run until every answer is in.
        fn sweep(&mut self) -> Vec<Notice> {
            self.now += Duration::from_secs(10);
            self.pm.sweep(self.now);
            self.settle()
        }

        /// Everything sent is answered, in order, until nothing more is sent; what stays
        /// unanswered waits, a second at a time, until it times out.
        fn settle(&mut self) -> Vec<Notice> {
            loop {
                let mut answers = Vec::new();
                while let Some(out) = self.pm.poll_transmit(self.now) {
                    answers.extend(self.pmas.answer(&out));
                }
                self.most_outstanding = self.most_outstanding.max(self.pm.outstanding());
                if answers.is_empty() {
                    if self.pm.outstanding() == 0 {
                        return self.pm.take_notices();
                    }
                    self.now += Duration::from_secs(1);
                    self.pm.on_time(self.now);
                }
                for answer in answers {
                    match answer {
                        Reply::Answer(mad) => self.pm.on_mad(self.now, &mad, Peer::lid(1)),
                        Reply::HandedBack(mad) => self.pm.on_dropped(self.now, &mad),
                    }
                }
            }
        }

        /// The requests since the `from`th, as (LID, attribute, method, PortSelect).
        fn asked_since(&self, from: usize) -> Vec<(u16, PerfAttributeId, Method, u8)> {
            self.pmas.asked[from..]
                .iter()
                .map(|(lid, gmp)| {
                    let bytes = gmp.to_bytes();
                    let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
                    let port = CounterHeader::new_checked(&mad.data()[..4])
                        .unwrap()
                        .port_select();
                    let attribute = PerfAttributeId::from(u16::from(gmp.attribute_id));
                    (*lid, attribute, gmp.method, port)
                })
                .collect()
        }

        fn total(&self, guid: u64, port: usize) -> (ErrorReading, DataReading) {
            let port = &self.pm.db().node(guid).unwrap().ports[port];
            (port.error_total, port.data_total)
        }
    }

    use PerfAttributeId::{ClassPortInfo as Cpi, PortCounters as Pc, PortCountersExtended as Pce};

    #[test]
    fn class_port_info_first_then_counters_in_guid_order() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        assert!(bench.sweep().is_empty());
        // The CA's GUID is lower: it goes first. The switch gets one ClassPortInfo.
        assert_eq!(
            bench.asked_since(0),
            [(2, Cpi, Method::Get, 0), (1, Cpi, Method::Get, 0)]
        );
        bench.sweep();
        assert_eq!(
            bench.asked_since(2),
            [
                (2, Pc, Method::Get, 1),
                (2, Pce, Method::Get, 1),
                (1, Pc, Method::Get, 1),
                (1, Pce, Method::Get, 1),
                (1, Pc, Method::Get, 2),
                (1, Pce, Method::Get, 2),
            ]
        );
        let (_, request) = &bench.pmas.asked[2];
        let bytes = request.to_bytes();
        let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
        let counters = PortCounters::new_checked(&mad.data()[..44]).unwrap();
        assert_eq!(
            (counters.counter_select(), counters.counter_select2()),
            (0xffff, 1)
        );
        let (_, extended) = &bench.pmas.asked[3];
        let bytes = extended.to_bytes();
        let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            CounterHeader::new_checked(&mad.data()[..4])
                .unwrap()
                .counter_select(),
            0xff
        );
    }

    #[test]
    fn without_query_cpi_only_port_counters_are_read_from_the_first_sweep() {
        let config = PerfMgrConfig {
            query_cpi: false,
            ..PerfMgrConfig::default()
        };
        let mut bench = Bench::new(config);
        bench.pmas.counters.insert(
            (2, 1),
            PortCountersRepr {
                port_xmit_data: 40,
                port_xmit_wait: 9,
                ..quiet()
            },
        );
        bench.sweep();
        // No CapabilityMask known: no PortCountersExtended, no PortXmitWait, 32-bit data.
        assert_eq!(
            bench.asked_since(0),
            [
                (2, Pc, Method::Get, 1),
                (1, Pc, Method::Get, 1),
                (1, Pc, Method::Get, 2),
            ]
        );
        let (errors, data) = bench.total(H1, 1);
        assert_eq!(errors.get(ErrorCounter::XmitWait), 0);
        assert_eq!(data.get(DataCounter::XmitData), 40);
    }

    #[test]
    fn totals_come_from_the_extended_counters_and_grow_by_differences() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench.sweep();
        let ext = |data| PortCountersExtendedRepr {
            port_xmit_data: data,
            port_unicast_xmit_pkts: 9,
            ..quiet_extended()
        };
        bench.pmas.extended.insert((1, 1), ext(1000));
        bench.pmas.counters.insert(
            (1, 1),
            PortCountersRepr {
                port_xmit_data: 77,
                ..quiet()
            },
        );
        bench.sweep();
        bench.pmas.extended.insert((1, 1), ext(1500));
        bench.sweep();
        let (_, data) = bench.total(S1, 1);
        assert_eq!(
            data.get(DataCounter::XmitData),
            1500,
            "from PortCountersExtended"
        );
        assert_eq!(
            data.get(DataCounter::UnicastXmitPkts),
            9,
            "IETF: unicast counted"
        );
        assert_eq!(data.time, UNIX_START + 30);
        assert!(!bench.pm.db().node(S1).unwrap().ports[0].valid);
    }

    #[test]
    fn an_out_of_band_clear_is_noticed_and_counted_from_zero() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench.sweep();
        let errors = |symbol| PortCountersRepr {
            symbol_error_counter: symbol,
            ..quiet()
        };
        bench.pmas.counters.insert((2, 1), errors(50));
        bench.sweep();
        bench.pmas.counters.insert((2, 1), errors(20));
        bench.pmas.extended.insert(
            (2, 1),
            PortCountersExtendedRepr {
                port_rcv_data: 5,
                ..quiet_extended()
            },
        );
        bench.sweep();
        bench.pmas.extended.insert((2, 1), quiet_extended());
        let notices = bench.sweep();
        let about = About {
            name: "H1/U1".into(),
            guid: H1,
            port: 1,
        };
        assert_eq!(notices, [Notice::DataClearedOutOfBand(about.clone())]);
        let (totals, _) = bench.total(H1, 1);
        assert_eq!(
            totals.get(ErrorCounter::SymbolErrors),
            70,
            "50, then 20 from 0"
        );
        // As in OpenSM, growth is logged after the clear, from 0.
        bench.pmas.counters.insert((2, 1), errors(1));
        let grew = Notice::ErrorsGrew {
            counter: ErrorCounter::SymbolErrors,
            growth: 1,
            about: about.clone(),
            remote: None,
        };
        assert_eq!(bench.sweep(), [Notice::ErrorsClearedOutOfBand(about), grew]);
    }

    #[test]
    fn error_growth_is_logged_with_the_far_end_and_xmit_wait_over_the_threshold() {
        let config = PerfMgrConfig {
            xmit_wait_log: true,
            xmit_wait_threshold: 100,
            ..PerfMgrConfig::default()
        };
        let mut bench = Bench::new(config);
        bench.sweep();
        bench.sweep();
        bench.pmas.counters.insert(
            (1, 1),
            PortCountersRepr {
                link_downed_counter: 2,
                port_xmit_wait: 99,
                ..quiet()
            },
        );
        bench.pmas.counters.insert(
            (1, 2),
            PortCountersRepr {
                port_xmit_wait: 100,
                ..quiet()
            },
        );
        let texts: Vec<String> = bench.sweep().iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "ERR 5433: LinkDownedCounter : 2 : node \"S1\" (NodeGUID: 0x200000) : port 1 \
                 connected to \"H1/U1\" (NodeGUID: 0x200100000000000) : port 1",
                "ERR 543D: XmitWait : 100 : node \"S1\" (NodeGUID: 0x200000) : port 2",
            ]
        );
        let quiet_log = PerfMgrConfig {
            log_errors: false,
            ..PerfMgrConfig::default()
        };
        let mut bench = Bench::new(quiet_log);
        bench.sweep();
        bench.pmas.counters.insert(
            (1, 1),
            PortCountersRepr {
                link_downed_counter: 2,
                ..quiet()
            },
        );
        assert!(bench.sweep().is_empty());
    }

    #[test]
    fn a_counter_near_full_is_cleared_with_opensms_selects() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench.sweep();
        bench.pmas.counters.insert(
            (1, 2),
            PortCountersRepr {
                symbol_error_counter: 49_152,
                port_xmit_data: 12,
                ..quiet()
            },
        );
        bench.pmas.extended.insert(
            (1, 1),
            PortCountersExtendedRepr {
                port_rcv_pkts: u64::MAX - u64::MAX / 4,
                ..quiet_extended()
            },
        );
        let asked = bench.pmas.asked.len();
        let notices = bench.sweep();
        let texts: Vec<String> = notices.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "PerfMgr: PortCountersExtended overflow: S1 (0x200000) port 1; clearing counters",
                "ERR 5431: SymbolErrorCounter : 49152 : node \"S1\" (NodeGUID: 0x200000) : port 2",
                "PerfMgr: Counter overflow: S1 (0x200000) port 2; clearing counters",
            ]
        );
        let sets: Vec<_> = bench.pmas.asked[asked..]
            .iter()
            .filter(|(_, gmp)| gmp.method == Method::Set)
            .map(|(lid, gmp)| {
                let bytes = gmp.to_bytes();
                let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
                let header = CounterHeader::new_checked(&mad.data()[..4]).unwrap();
                let attribute = PerfAttributeId::from(u16::from(gmp.attribute_id));
                (
                    *lid,
                    attribute,
                    header.port_select(),
                    header.counter_select(),
                )
            })
            .collect();
        // The 32-bit data counters stay: PortCountersExtended keeps them.
        assert_eq!(sets, [(1, Pce, 1, 0x00ff), (1, Pc, 2, 0x0fff)]);
        assert_eq!(bench.pmas.counters[&(1, 2)].port_xmit_data, 12);
        // The previous readings were zeroed: the next counts from 0, with no out-of-band clear.
        bench.pmas.counters.insert(
            (1, 2),
            PortCountersRepr {
                symbol_error_counter: 3,
                ..quiet()
            },
        );
        let notices = bench.sweep();
        assert!(
            matches!(notices[..], [Notice::ErrorsGrew { growth: 3, .. }]),
            "{notices:?}"
        );
        let (errors, _) = bench.total(S1, 2);
        assert_eq!(errors.get(ErrorCounter::SymbolErrors), 49_155);
    }

    #[test]
    fn without_the_extended_attribute_the_32_bit_data_counters_count_and_clear() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench
            .pmas
            .caps
            .insert(2, PerfCapabilityMask::PORT_XMIT_WAIT);
        bench.sweep();
        bench.pmas.counters.insert(
            (2, 1),
            PortCountersRepr {
                port_rcv_data: 3_221_225_472,
                ..quiet()
            },
        );
        let asked = bench.pmas.asked.len();
        bench.sweep();
        let to_ca: Vec<_> = bench
            .asked_since(asked)
            .into_iter()
            .filter(|(lid, ..)| *lid == 2)
            .collect();
        assert_eq!(to_ca, [(2, Pc, Method::Get, 1), (2, Pc, Method::Set, 1)]);
        let (_, data) = bench.total(H1, 1);
        assert_eq!(data.get(DataCounter::RcvData), 3_221_225_472);
    }

    #[test]
    fn no_more_than_the_cap_on_the_wire_and_a_sweep_waits_for_the_last() {
        let config = PerfMgrConfig {
            max_outstanding_queries: 1,
            ..PerfMgrConfig::default()
        };
        let mut bench = Bench::new(config);
        bench.sweep();
        bench.now += Duration::from_secs(10);
        bench.pm.sweep(bench.now);
        assert!(bench.pm.poll_transmit(bench.now).is_some());
        assert!(bench.pm.poll_transmit(bench.now).is_none());
        assert_eq!(bench.pm.sweep_state(), SweepState::Suspended);
        bench.pm.sweep(bench.now);
        assert_eq!(bench.pm.take_notices(), [Notice::SweepSkipped { state: 2 }]);
        bench.pmas.asked.clear();
        bench.settle();
        assert_eq!(bench.most_outstanding, 1);
    }

    #[test]
    fn cas_ignored_and_gone_nodes_deleted_or_kept_inactive() {
        let config = PerfMgrConfig {
            ignore_cas: true,
            ..PerfMgrConfig::default()
        };
        let mut bench = Bench::new(config);
        bench.sweep();
        bench.sweep();
        assert!(bench.pmas.asked.iter().all(|(lid, _)| *lid == 1));
        assert!(bench.pm.db().node(H1).is_none());

        for remove_nodes in [true, false] {
            let config = PerfMgrConfig {
                remove_nodes,
                ..PerfMgrConfig::default()
            };
            let mut bench = Bench::new(config);
            bench.sweep();
            bench.sweep();
            bench.pm.set_subnet([switch()]);
            let notices = bench.sweep();
            assert_eq!(
                notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
                [
                    "ERR 5407: Node \"H1/U1\" (guid 0x100002) no longer exists so removing from \
                  PerfMgr monitoring"
                ]
            );
            let kept = bench.pm.db().node(H1).map(|node| node.active);
            assert_eq!(kept, (!remove_nodes).then_some(false));
            assert_eq!(bench.pm.delete_inactive(), usize::from(!remove_nodes));
        }
    }

    fn with_lanes(config: PerfMgrConfig) -> Bench {
        Bench::new(PerfMgrConfig {
            lanes: true,
            ..config
        })
    }

    /// The attributes asked since the `from`th request, as (LID, attribute, PortSelect).
    fn lanes_asked(bench: &Bench, from: usize) -> Vec<(u16, PerfAttributeId, u8)> {
        let lane_ids: Vec<_> = Lane::ALL.iter().map(|lane| lane.attribute()).collect();
        bench
            .asked_since(from)
            .into_iter()
            .filter(|(_, attribute, ..)| lane_ids.contains(attribute))
            .map(|(lid, attribute, _, port)| (lid, attribute, port))
            .collect()
    }

    #[test]
    fn with_lanes_off_no_per_vl_or_per_sl_attribute_is_asked() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench
            .pmas
            .lanes
            .insert((2, 1, Lane::VlXmitWait), vec![5; 16]);
        bench.sweep();
        bench.sweep();
        let attributes: Vec<_> = bench.asked_since(0).into_iter().map(|a| a.1).collect();
        assert!(attributes.iter().all(|a| [Cpi, Pc, Pce].contains(a)));
        assert!(bench.pm.lanes().iter().next().is_none());
    }

    #[test]
    fn lanes_are_read_after_the_port_counters_and_kept_with_rates() {
        let mut bench = with_lanes(PerfMgrConfig::default());
        bench.sweep();
        assert!(lanes_asked(&bench, 0).is_empty(), "ClassPortInfo first");
        let asked = bench.pmas.asked.len();
        let wait = |vl3| {
            let mut row = vec![0; 16];
            row[3] = vl3;
            row
        };
        bench.pmas.lanes.insert((2, 1, Lane::VlXmitWait), wait(100));
        bench
            .pmas
            .lanes
            .insert((2, 1, Lane::XmitDataSl), wait(4_000));
        bench.sweep();
        let to_ca: Vec<_> = bench
            .asked_since(asked)
            .into_iter()
            .filter(|(lid, ..)| *lid == 2)
            .map(|(_, attribute, method, _)| (attribute, method))
            .collect();
        let mut expected = vec![(Pc, Method::Get), (Pce, Method::Get)];
        expected.extend(Lane::ALL.map(|lane| (lane.attribute(), Method::Get)));
        assert_eq!(to_ca, expected);
        // The switch is asked for each of its ports.
        assert_eq!(lanes_asked(&bench, asked).len(), 3 * Lane::ALL.len());
        let kept = bench.pm.lanes().get(H1, 1, Lane::VlXmitWait).unwrap();
        assert_eq!((kept.last[3], kept.rate.clone()), (100, None));

        bench.pmas.lanes.insert((2, 1, Lane::VlXmitWait), wait(600));
        bench
            .pmas
            .lanes
            .insert((2, 1, Lane::XmitDataSl), wait(4_000 + 20_000));
        assert!(bench.sweep().is_empty());
        let rate = |lane| bench.pm.lanes().get(H1, 1, lane).unwrap().rate.clone();
        // Ten seconds between sweeps.
        assert_eq!(
            rate(Lane::VlXmitWait),
            Some(wait(50).iter().map(|&n| n as f64).collect())
        );
        assert_eq!(rate(Lane::XmitDataSl).unwrap()[3], 2_000.0);
    }

    #[test]
    fn a_pma_that_answers_0x000c_or_nothing_is_not_asked_again() {
        let mut bench = with_lanes(PerfMgrConfig::default());
        bench.pmas.unsupported.push((2, Lane::XmitDataSl));
        // ibsim hands a per-SL query back undelivered; another PMA might keep silent.
        bench.pmas.handed_back.push((2, Lane::SlRcvBecn));
        bench.pmas.silent.push((1, Lane::RcvDataSl));
        bench.sweep();
        let notices = bench.sweep();
        let texts: Vec<String> = notices.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "PerfMgr: H1/U1 (0x100002) port 1 does not keep PortXmitDataSl (MAD status \
                 0x000c (method/attribute combination not supported)); not asked again until \
                 it is rediscovered",
                "PerfMgr: H1/U1 (0x100002) port 1 does not keep PortSlRcvBecn (handed back \
                 undelivered on all 4 attempts (no route, or a path into a port that is not \
                 LinkUp)); not asked again until it is rediscovered",
                "PerfMgr: S1 (0x200000) port 1 does not keep PortRcvDataSl (no answer after 4 \
                 attempts); not asked again until it is rediscovered",
                // Asked before the first timed out: both ports' queries were on the wire.
                "PerfMgr: S1 (0x200000) port 2 does not keep PortRcvDataSl (no answer after 4 \
                 attempts); not asked again until it is rediscovered",
            ]
        );
        let asked = bench.pmas.asked.len();
        assert!(bench.sweep().is_empty());
        let lanes = lanes_asked(&bench, asked);
        assert!(!lanes.contains(&(2, PerfAttributeId::PortXmitDataSl, 1)));
        assert!(!lanes.contains(&(2, PerfAttributeId::PortSlRcvBecn, 1)));
        // One PMA for the switch: neither of its ports is asked again.
        assert!(!lanes.contains(&(1, PerfAttributeId::PortRcvDataSl, 1)));
        assert!(!lanes.contains(&(1, PerfAttributeId::PortRcvDataSl, 2)));
        assert!(lanes.contains(&(2, PerfAttributeId::PortRcvDataSl, 1)));
        assert!(lanes.contains(&(1, PerfAttributeId::PortXmitDataSl, 2)));

        // Rediscovered: gone from the subnet, then back, it is asked again.
        bench.pm.set_subnet([switch()]);
        bench.sweep();
        bench.pm.set_subnet([switch(), ca()]);
        bench.pmas.unsupported.clear();
        bench.sweep();
        let asked = bench.pmas.asked.len();
        bench.sweep();
        assert!(lanes_asked(&bench, asked).contains(&(2, PerfAttributeId::PortXmitDataSl, 1)));
    }

    #[test]
    fn lane_counters_near_full_are_cleared_and_a_fall_counts_from_zero() {
        let mut bench = with_lanes(PerfMgrConfig::default());
        bench.pm.set_subnet([ca()]);
        bench.sweep();
        let row = |vl0| {
            let mut row = vec![0; 16];
            row[0] = vl0;
            row
        };
        bench
            .pmas
            .lanes
            .insert((2, 1, Lane::VlXmitWait), row(40_000));
        bench.sweep();
        bench
            .pmas
            .lanes
            .insert((2, 1, Lane::VlXmitWait), row(49_152));
        let asked = bench.pmas.asked.len();
        let notices = bench.sweep();
        assert_eq!(
            notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "PerfMgr: PortVlXmitWaitCounters overflow: H1/U1 (0x100002) port 1; clearing \
              counters"
            ]
        );
        let sets: Vec<_> = bench
            .asked_since(asked)
            .into_iter()
            .filter(|(.., method, _)| *method == Method::Set)
            .collect();
        assert_eq!(
            sets,
            [(2, PerfAttributeId::PortVlXmitWaitCounters, Method::Set, 1)]
        );
        assert_eq!(bench.pmas.lanes[&(2, 1, Lane::VlXmitWait)][0], 0);
        // After the PerfMgr's own clear, the next reading grows from 0 with no notice.
        bench.pmas.lanes.insert((2, 1, Lane::VlXmitWait), row(30));
        assert!(bench.sweep().is_empty());
        let kept = bench.pm.lanes().get(H1, 1, Lane::VlXmitWait).unwrap();
        assert_eq!(kept.rate.as_ref().unwrap()[0], 3.0);
        // Cleared behind its back: noticed, and counted from 0.
        bench.pmas.lanes.insert((2, 1, Lane::VlXmitWait), row(10));
        let notices = bench.sweep();
        assert_eq!(
            notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "PerfMgr: PortVlXmitWaitCounters of H1/U1 (0x100002) port 1 fell: cleared out of \
              band; counted from 0"
            ]
        );
        let kept = bench.pm.lanes().get(H1, 1, Lane::VlXmitWait).unwrap();
        assert_eq!(kept.rate.as_ref().unwrap()[0], 1.0);
    }

    #[test]
    fn lane_queries_keep_to_the_cap_on_the_wire() {
        let config = PerfMgrConfig {
            max_outstanding_queries: 2,
            ..PerfMgrConfig::default()
        };
        let mut bench = with_lanes(config);
        bench.sweep();
        let asked = bench.pmas.asked.len();
        bench.most_outstanding = 0;
        bench.sweep();
        assert_eq!(bench.most_outstanding, 2);
        assert_eq!(lanes_asked(&bench, asked).len(), 3 * Lane::ALL.len());
    }

    proptest::proptest! {
        /// Answers are wire input: whatever the PMAs answer, with any counters, and whatever
        /// other bytes arrive, the PerfMgr takes them without a panic, and its database still
        /// prints.
        #[test]
        fn any_answer_is_taken_without_a_panic(
            answers in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                1..16,
            ),
        ) {
            // One CA port, so that its counters are read again and again, the per-VL and
            // per-SL ones too.
            let mut bench = with_lanes(PerfMgrConfig::default());
            bench.pm.set_subnet([ca()]);
            bench.sweep();
            for answer in answers {
                bench.now += Duration::from_secs(1);
                bench.pm.sweep(bench.now);
                let Some(out) = bench.pm.poll_transmit(bench.now) else {
                    continue;
                };
                // The request's header as an answer, so that it matches, and any data.
                let mut bytes = out.mad.clone();
                bytes[3] = u8::from(Method::GetResp);
                let data = &mut bytes[64..];
                let n = answer.len().min(data.len());
                data[..n].copy_from_slice(&answer[..n]);
                bench.pm.on_mad(bench.now, &bytes, Peer::lid(1));
                bench.pm.on_mad(bench.now, &answer, Peer::lid(1));
                bench.pm.on_dropped(bench.now, &answer);
                bench.pm.on_time(bench.now + Duration::from_secs(5));
            }
            let mut text = String::new();
            let both = [crate::dump::DumpFormat::Human, crate::dump::DumpFormat::Machine];
            for format in both {
                crate::dump::dump(bench.pm.db(), format, &crate::dump::ctime_utc, &mut text)
                    .unwrap();
            }
            bench.pm.take_notices().iter().for_each(|notice| text.push_str(&notice.to_string()));
        }
    }

    /// H1's PMA (LID 2) redirects to LID 9, QP 5, the default P_Key.
    fn redirecting(config: PerfMgrConfig) -> Bench {
        let mut bench = Bench::new(config);
        bench.pm.set_subnet([ca()]);
        let mut to =
            ClassPortInfoRepr::parse(&ClassPortInfo::new_checked(&[0u8; 72][..]).unwrap()).unwrap();
        to.base_version = 1;
        to.class_version = 1;
        to.redirect_lid = 9;
        to.redirect_qp = 5;
        to.redirect_p_key = 0xffff;
        to.redirect_q_key = GSI_QKEY;
        bench.pmas.redirect = Some((2, to));
        bench.pmas.caps.insert(9, PerfCapabilityMask(0x1200));
        bench
    }

    #[test]
    fn a_lid_redirection_is_followed_and_forgotten_after_a_timeout() {
        let mut bench = redirecting(PerfMgrConfig::default());
        let notices = bench.sweep();
        assert_eq!(
            notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["Redirection to LID 9 QP 0x5 received from H1/U1 (0x100002) port 1"]
        );
        // ClassPortInfo again, at the redirected PMA, then the counters there.
        bench.sweep();
        assert_eq!(
            bench.asked_since(0),
            [
                (2, Cpi, Method::Get, 0),
                (9, Cpi, Method::Get, 0),
                (9, Pc, Method::Get, 1),
                (9, Pce, Method::Get, 1),
            ]
        );
        assert_eq!(bench.pmas.qps, [1, 5, 5, 5]);
        assert!(bench.pm.db().node(H1).unwrap().ports[1].valid);

        // The redirected PMA stops answering: once the query times out, H1 is asked at LID 2.
        bench.now += Duration::from_secs(10);
        bench.pm.sweep(bench.now);
        assert!(bench.pm.poll_transmit(bench.now).is_some());
        for _ in 0..=bench.pm.config().retries {
            bench.now += Duration::from_secs(1);
            bench.pm.on_time(bench.now);
            while bench.pm.poll_transmit(bench.now).is_some() {}
        }
        let failed = bench.pm.take_notices();
        assert!(
            matches!(failed[..], [Notice::QueryFailed { lid: 9, .. }]),
            "{failed:?}"
        );
        bench.pmas.redirect = None;
        let asked = bench.pmas.asked.len();
        bench.sweep();
        assert_eq!(bench.asked_since(asked)[0].0, 2);
        assert_eq!(bench.pmas.qps.last(), Some(&1));
    }

    fn redirections(pm: &PerfMgr, selector: Option<&str>) -> String {
        let mut out = String::new();
        pm.dump_redirections(selector, &mut out).unwrap();
        out
    }

    fn cleared(pm: &mut PerfMgr, selector: Option<&str>) -> String {
        let mut out = String::new();
        pm.clear_redirections(selector, &mut out).unwrap();
        out
    }

    #[test]
    fn the_console_dumps_the_redirections_and_clears_them_back_to_the_port_lid() {
        let mut bench = redirecting(PerfMgrConfig::default());
        bench.sweep();
        let title = "\nRedirection Table\n-----------------\n";
        let table = format!(
            "{title}   Node GUID       ESP0   Name
   ---------       ----   ----
   0x100002 0      H1/U1

   Port Valid  LIDs     PKey  QP    PKey Index
   ---- -----  ----     ----  --    ----------
   1    1      2->9  0xffff 0x5   0

"
        );
        assert_eq!(redirections(&bench.pm, None), table);
        assert_eq!(redirections(&bench.pm, Some("H1/U1")), table);
        assert_eq!(redirections(&bench.pm, Some("0x100002")), table);
        assert_eq!(
            redirections(&bench.pm, Some("H9")),
            format!("{title}Node H9 not found...\n")
        );
        assert_eq!(
            cleared(&mut bench.pm, Some("0x7")),
            "Node 0x7 not found...\n"
        );
        assert_eq!(redirections(&bench.pm, None), table);

        assert_eq!(cleared(&mut bench.pm, Some("H1/U1")), "");
        assert_eq!(redirections(&bench.pm, None), title);
        // Asked at its own LID again, from its ClassPortInfo on, as a zeroed port is.
        bench.pmas.redirect = None;
        let asked = bench.pmas.asked.len();
        bench.sweep();
        let h1: Vec<_> = bench
            .asked_since(asked)
            .into_iter()
            .filter(|q| q.0 == 2)
            .collect();
        assert_eq!(h1, [(2, Cpi, Method::Get, 0)]);
        assert_eq!(bench.pmas.qps.last(), Some(&1));
    }

    #[test]
    fn the_console_says_when_redirection_is_off() {
        let config = PerfMgrConfig {
            redirect: false,
            ..PerfMgrConfig::default()
        };
        let mut pm = Bench::new(config).pm;
        assert_eq!(
            redirections(&pm, None),
            "Perfmgr redirection not enabled\n\nRedirection Table\n-----------------\n"
        );
        assert_eq!(cleared(&mut pm, None), "Perfmgr redirection not enabled\n");
    }

    #[test]
    fn the_console_turns_classportinfo_and_node_removal_on_and_off() {
        let mut bench = Bench::new(PerfMgrConfig::default());
        bench.pm.set_query_cpi(false);
        bench.pm.set_remove_nodes(false);
        let status = bench.pm.status();
        assert!(
            status.contains("remove missing nodes from DB : FALSE\n"),
            "{status}"
        );
        assert!(
            status.contains("query ClassPortInfo          : FALSE\n"),
            "{status}"
        );
        bench.sweep();
        assert_eq!(
            bench.asked_since(0),
            [
                (2, Pc, Method::Get, 1),
                (1, Pc, Method::Get, 1),
                (1, Pc, Method::Get, 2),
            ]
        );
        bench.pm.set_subnet([switch()]);
        bench.sweep();
        assert_eq!(bench.pm.db().node(H1).map(|node| node.active), Some(false));

        bench.pm.set_query_cpi(true);
        bench.pm.set_remove_nodes(true);
        bench.pm.set_subnet([switch(), ca()]);
        let asked = bench.pmas.asked.len();
        bench.sweep();
        assert_eq!(bench.asked_since(asked)[0], (2, Cpi, Method::Get, 0));
        bench.pm.set_subnet([switch()]);
        bench.sweep();
        assert!(bench.pm.db().node(H1).is_none());
    }

    #[test]
    fn a_redirection_is_refused_when_disabled_or_its_p_key_is_not_ours() {
        let disabled = PerfMgrConfig {
            redirect: false,
            ..PerfMgrConfig::default()
        };
        let mut bench = redirecting(disabled);
        let notices = bench.sweep();
        assert_eq!(
            notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["Redirection requested but disabled: H1/U1 (0x100002) port 1"]
        );
        bench.sweep();
        // Refused: no CapabilityMask kept, ClassPortInfo asked again at LID 2.
        assert_eq!(
            bench.asked_since(0),
            [(2, Cpi, Method::Get, 0), (2, Cpi, Method::Get, 0)]
        );

        let mut bench = redirecting(PerfMgrConfig::default());
        bench.pm.set_local_pkeys(vec![0x8001]);
        let notices = bench.sweep();
        assert_eq!(
            notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["Index for Pkey not found: H1/U1 (0x100002) port 1"]
        );
        assert_eq!(bench.pmas.qps, [1]);
    }

    #[test]
    fn the_console_starts_and_stops_the_timer_and_sets_its_period() {
        let start = Instant::now();
        let mut pm = PerfMgr::new(PerfMgrConfig::default(), start, UNIX_START);
        pm.set_subnet([ca()]);
        assert_eq!(pm.next_deadline(), None, "perfmgr FALSE: no timer");
        assert!(
            pm.status()
                .contains("state                        : Disabled\n")
        );
        pm.set_enabled(start, true);
        assert_eq!(pm.next_deadline(), Some(start + Duration::from_secs(180)));
        assert!(
            pm.status()
                .contains("state                        : Enabled\n")
        );
        assert!(!pm.set_sweep_time(0));
        assert!(
            pm.status()
                .contains("sweep time                   : 180s\n")
        );
        assert!(pm.set_sweep_time(30));
        assert!(pm.status().contains("sweep time                   : 30s\n"));
        pm.sweep(start);
        assert!(pm.poll_transmit(start).is_some());
        pm.set_enabled(start, false);
        assert!(
            pm.next_deadline().unwrap() < start + Duration::from_secs(1),
            "the query's"
        );
    }

    #[test]
    fn the_timer_sweeps_every_sweep_time_and_failures_are_logged() {
        let config = PerfMgrConfig {
            enabled: true,
            sweep_time_s: 0,
            retries: 0,
            ..PerfMgrConfig::default()
        };
        let start = Instant::now();
        let mut pm = PerfMgr::new(config, start, UNIX_START);
        pm.set_subnet([ca()]);
        let first = start + Duration::from_secs(180);
        assert_eq!(pm.next_deadline(), Some(first));
        pm.on_time(first);
        let sent = pm.poll_transmit(first).unwrap();
        let tid = Gmp::from_bytes(&sent.mad).unwrap().transaction_id;
        let timeout = pm.next_deadline().unwrap();
        assert!(timeout < first + Duration::from_secs(1));
        pm.on_time(timeout);
        assert_eq!(
            pm.take_notices()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [format!(
                "ERR 5402: H1/U1 (0x100002) port 1 LID 2 TID {tid:#x}"
            )]
        );
        assert_eq!(pm.next_deadline(), Some(first + Duration::from_secs(180)));
    }
}
