//! The SM's state of IBA 14.4 (NOTACTIVE, DISCOVERING, STANDBY, MASTER) and the election
//! between the subnet's SMs, as OpenSM 3.3.23 runs them (osm_sm_state_mgr.c,
//! osm_sminfo_rcv.c, and `do_sweep` in osm_state_mgr.c), sans-IO.
//!
//! - The SM starts DISCOVERING. The sweep reads the SMInfo of every other port whose
//!   CapabilityMask has IsSM; an SM whose SM_Key differs from ours (when ours is not 0) is
//!   ignored. After discovery ([`Election::after_discovery`]): a DISCOVERING SM that saw a
//!   MASTER, or a higher DISCOVERING or STANDBY SM, goes STANDBY and stops its sweep before any
//!   Set; otherwise it becomes MASTER and the sweep goes on. A MASTER that finds a higher SM
//!   (not NOTACTIVE) sends it SMInfo HANDOVER and goes STANDBY; a MASTER that is the highest
//!   but finds another MASTER programs nothing and polls it, waiting for its HANDOVER
//!   (C14-60.2.1), and sweeps again when that SM stops answering.
//! - Beyond OpenSM: a DISCOVERING SM that another SM asked for its SMInfo during its discovery
//!   discovers again before it becomes MASTER ([`Verdict::Rediscover`]), so that two SMs that
//!   each missed the other (one restarting while the other read its port) do not both program
//!   the subnet until a later sweep resolves it.
//! - Higher means a greater priority, or the same priority and a lower port GUID
//!   (`osm_sm_is_greater_than`, IBA 14.4.1.2).
//! - A STANDBY polls its master's SMInfo every `sminfo_polling_timeout`; every poll sent counts,
//!   an answer as MASTER resets the count, and once the count passes `polling_retry_number`
//!   the master is taken as gone: DISCOVERING, and a sweep at once
//!   (`osm_sm_state_mgr_polling_callback`). A standby whose master is lower than itself sends
//!   the master trap 144 with the SM-priority-change flag after each answer, so that the master
//!   sweeps, finds it and hands over (`smi_rcv_process_get_sm`).
//! - SMInfo Gets are answered with this SM's state, priority and SM_Key, and as ActCount the
//!   SMPs it has sent (OpenSM's `qp0_mads_sent`).
//! - The first sweep after this SM became MASTER, was handed the subnet, or lost the master it
//!   polled as MASTER is its first master sweep until one brings the subnet up
//!   ([`Election::is_first_master_sweep`], OpenSM's `first_time_master_sweep`): it asks the
//!   endports for a client reregistration. A Set is checked as
//!   `smi_rcv_check_set_req_legality` and `osm_sm_state_mgr_check_legality` check it, answered
//!   (with "invalid value" when illegal), then acted on: HANDOVER makes a STANDBY the MASTER
//!   (and a DISCOVERING or MASTER SM sweep again), DISCOVER makes a STANDBY sweep, DISABLE makes
//!   a STANDBY NOTACTIVE, STANDBY makes a NOTACTIVE SM a STANDBY polling the sender, and
//!   ACKNOWLEDGE changes nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use ibqos_exchange::smp::answer;
use ibqos_exchange::{OutgoingMad, Transmit};
use ibqos_mad::{
    Attribute, AttributeId, CapabilityMask, DrPath, Guid, Method, NodeType, Notice, NoticeRepr,
    NoticeType, Routing, SmInfo, SmInfoModifier, SmInfoRepr, SmState, SmpRepr, Status,
};
use serde::{Serialize, Serializer};
use tracing::{debug, error, info, warn};

/// The SMState the sender of an SMInfo Set must be in for it to be legal
/// (`smi_rcv_check_set_req_legality`): ACKNOWLEDGE comes from a STANDBY, the rest from the
/// MASTER.
fn sender_state(modifier: SmInfoModifier) -> SmState {
    match modifier {
        SmInfoModifier::Acknowledge => SmState::Standby,
        _ => SmState::Master,
    }
}

/// The name OpenSM gives a state in its logs (`osm_get_sm_mgr_state_str`).
pub fn state_name(state: SmState) -> &'static str {
    match state {
        SmState::NotActive => "NOTACTIVE",
        SmState::Discovering => "DISCOVERING",
        SmState::Standby => "STANDBY",
        SmState::Master => "MASTER",
        _ => "UNKNOWN",
    }
}

/// An SM state by OpenSM's name for it.
pub(crate) fn state_str<S: Serializer>(state: &SmState, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(state_name(*state))
}

/// A GUID as `0x` and 16 hex digits.
fn hex_guid<S: Serializer>(guid: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("{guid:#018x}"))
}

/// Whether an SM of priority `a_priority` on port `a_guid` outranks one of `b_priority` on
/// `b_guid` (IBA 14.4.1.2, `osm_sm_is_greater_than`).
pub fn is_higher(a_priority: u8, a_guid: u64, b_priority: u8, b_guid: u64) -> bool {
    a_priority > b_priority || (a_priority == b_priority && a_guid < b_guid)
}

/// How the election is configured (opensm.conf's `sm_priority`, `sm_key`,
/// `sminfo_polling_timeout`, `polling_retry_number`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElectionConfig {
    /// The GUID of the SM's port.
    pub guid: u64,
    /// 0-15.
    pub priority: u8,
    pub sm_key: u64,
    pub polling_timeout: Duration,
    pub polling_retries: u32,
}

/// Another SM, as its SMInfo last answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSm {
    pub info: SmInfoRepr,
    /// The LID of its port, as its PortInfo said.
    pub lid: u16,
    /// The directed route to its port; empty when unknown (then it is reached by its LID).
    pub path: Vec<u8>,
}

impl RemoteSm {
    fn outranks(&self, config: &ElectionConfig) -> bool {
        is_higher(
            self.info.priority,
            self.info.guid,
            config.priority,
            config.guid,
        )
    }
}

/// This SM's own port, as discovery read it: the source of its traps 144.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnPort {
    pub lid: u16,
    pub capability_mask: u32,
    pub node_type: NodeType,
}

impl Default for OwnPort {
    fn default() -> Self {
        OwnPort {
            lid: 0,
            capability_mask: 0,
            node_type: NodeType::Ca,
        }
    }
}

/// Why the SM is in its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateReason {
    /// The SM started, or was told to discover again.
    Started,
    /// Discovery found no master and no higher SM.
    NoHigherSm,
    /// Discovery found a master, or a higher SM.
    MasterFound,
    /// The SM handed the subnet over to a higher SM.
    HandedOver,
    /// The master handed the subnet over to this SM.
    HandoverReceived,
    /// The master stopped answering its polls.
    MasterLost,
    /// An SMInfo Set from the master told it (DISCOVER, DISABLE, STANDBY).
    Told,
}

impl fmt::Display for StateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateReason::Started => "starting",
            StateReason::NoHigherSm => "no master and no higher SM found",
            StateReason::MasterFound => "a master or a higher SM found",
            StateReason::HandedOver => "handed over to a higher SM",
            StateReason::HandoverReceived => "the master handed over",
            StateReason::MasterLost => "the master stopped answering",
            StateReason::Told => "told so by the master",
        })
    }
}

/// The master as this SM knows it (for the logs, the summary and `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MasterSm {
    #[serde(serialize_with = "hex_guid")]
    pub guid: u64,
    pub priority: u8,
    pub lid: u16,
}

impl fmt::Display for MasterSm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#018x} (priority {}, LID {})",
            self.guid, self.priority, self.lid
        )
    }
}

/// A change of the SM's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StateChange {
    #[serde(serialize_with = "state_str")]
    pub from: SmState,
    #[serde(serialize_with = "state_str")]
    pub to: SmState,
    pub reason: StateReason,
    /// The master, when another SM is (or is about to be) it.
    pub master: Option<MasterSm>,
}

/// What the manager is to do after the election heard something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing changes for the sweeps.
    Continue,
    /// Sweep now: this SM is to (re)configure the subnet, or to find out who is master.
    Sweep,
    /// Stop sweeping and send no Set: another SM is master, or this one is disabled.
    Yield,
}

/// Whether a sweep goes on past discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This SM is master: configure the subnet.
    Proceed,
    /// Another SM is, or will be, master: stop before any Set.
    Stop,
    /// What discovery found may be out of date: stop before any Set and sweep again at once.
    Rediscover,
}

/// Polling another SM's SMInfo.
#[derive(Debug, Clone)]
struct Polling {
    target: RemoteSm,
    /// Polls sent since the last answer as MASTER (OpenSM's `retry_number`).
    unanswered: u32,
    next_at: Instant,
}

/// The low 32 bits of the TIDs of the election's own SMPs have this bit set, so their answers
/// are told apart from the sweep's (whose scheduler counts TIDs from 1 each sweep).
pub const ELECTION_TID: u32 = 0x8000_0000;

/// The SM's state and what it knows of the other SMs.
#[derive(Debug, Clone)]
pub struct Election {
    config: ElectionConfig,
    state: SmState,
    reason: StateReason,
    /// The master this SM defers to, or polls while waiting for its handover.
    polling: Option<Polling>,
    /// The last master named, for the summary once polling ended.
    master: Option<MasterSm>,
    /// Every other SM the last discovery (or a poll since) heard from, by port GUID.
    known: BTreeMap<u64, RemoteSm>,
    /// Another SM asked for this SM's SMInfo while this one was DISCOVERING: it may have come
    /// after this SM's discovery read its port, so what the discovery found may be stale.
    asked_while_discovering: bool,
    /// The discovery under way repeats one made stale by a request: it is not repeated again,
    /// so that an SM asked more often than it can discover (polled by a standby faster than it
    /// sweeps a large subnet) still becomes master.
    rediscovering: bool,
    own: OwnPort,
    /// This SM became master (or was handed the subnet again, or its polled master is gone)
    /// and no sweep has brought the subnet up since: OpenSM's `first_time_master_sweep`.
    first_master_sweep: bool,
    /// SMPs this SM sent since it started (wrapping): its SMInfo ActCount, as OpenSM's
    /// `qp0_mads_sent`, which grows while the SM is alive.
    act_count: u32,
    next_tid: u32,
    outgoing: Vec<OutgoingMad>,
    changes: Vec<StateChange>,
}

impl Election {
    /// An SM that starts DISCOVERING.
    pub fn new(config: ElectionConfig) -> Election {
        Election {
            config,
            state: SmState::Discovering,
            reason: StateReason::Started,
            polling: None,
            master: None,
            known: BTreeMap::new(),
            asked_while_discovering: false,
            rediscovering: false,
            own: OwnPort::default(),
            first_master_sweep: false,
            act_count: 0,
            next_tid: 0,
            outgoing: Vec::new(),
            changes: Vec::new(),
        }
    }

    /// An SM that takes no part: NOTACTIVE for good (a dry run, which Sets nothing).
    pub fn inactive(config: ElectionConfig) -> Election {
        Election {
            state: SmState::NotActive,
            ..Election::new(config)
        }
    }

    pub fn state(&self) -> SmState {
        self.state
    }

    pub fn reason(&self) -> StateReason {
        self.reason
    }

    /// The master, when it is another SM.
    pub fn master(&self) -> Option<MasterSm> {
        if self.state == SmState::Master {
            None
        } else {
            self.master
        }
    }

    /// The other SMs known, as they last answered.
    pub fn known(&self) -> impl Iterator<Item = &RemoteSm> {
        self.known.values()
    }

    /// A new priority (the configuration was read again).
    pub fn set_config(&mut self, config: ElectionConfig) {
        self.config = config;
    }

    /// Whether the sweep under way is the first since this SM became master: OpenSM sets it on
    /// DISCOVERING to MASTER, on a HANDOVER received as STANDBY or MASTER, and when a master
    /// polled as MASTER stops answering (`osm_sm_state_mgr_process`,
    /// `force_first_time_master_sweep`).
    pub fn is_first_master_sweep(&self) -> bool {
        self.first_master_sweep
    }

    /// A sweep brought the subnet up: later sweeps are not the first as master.
    pub fn master_sweep_done(&mut self) {
        self.first_master_sweep = false;
    }

    /// One more SMP sent, of any kind (`osm_vl15_post` counts every QP0 MAD, answers too).
    pub fn count_smp_sent(&mut self) {
        self.act_count = self.act_count.wrapping_add(1);
    }

    /// This SM's SMInfo, as it answers a Get: ActCount is the SMPs sent so far
    /// (`smi_rcv_process_get_request`).
    pub fn own_info(&self) -> SmInfoRepr {
        SmInfoRepr {
            guid: self.config.guid,
            sm_key: self.config.sm_key,
            act_count: self.act_count,
            priority: self.config.priority,
            sm_state: self.state,
        }
    }

    /// The changes of state since the last call, in order.
    pub fn take_changes(&mut self) -> Vec<StateChange> {
        std::mem::take(&mut self.changes)
    }

    /// SMPs to send: polls, HANDOVERs, traps 144.
    pub fn take_outgoing(&mut self) -> Vec<OutgoingMad> {
        std::mem::take(&mut self.outgoing)
    }

    /// When [`on_time`](Election::on_time) is next needed: the next poll.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.polling.as_ref().map(|p| p.next_at)
    }

    /// A sweep's discovery is done and found `found` (the answers of every other IsSM port),
    /// with this SM's port as `own`: whether the sweep goes on to configure the subnet
    /// (`do_sweep` after `state_mgr_sweep_hop_1`).
    ///
    /// Beyond OpenSM: a DISCOVERING SM that another SM asked for its SMInfo since its last
    /// discovery does not become MASTER on what that discovery found, but discovers again.
    /// The asker read this SM as DISCOVERING and, if higher, becomes MASTER on it; this SM's
    /// discovery may have read the asker's port before the asker was there (an SM that
    /// restarted, or hung and came back), and would make it a second master sending Sets until
    /// the next sweep resolved it. Read again, the asker is found. Discovery is repeated once
    /// in a row, not more.
    pub fn after_discovery(&mut self, now: Instant, found: Vec<RemoteSm>, own: OwnPort) -> Verdict {
        let asked = std::mem::take(&mut self.asked_while_discovering);
        let repeated = std::mem::take(&mut self.rediscovering);
        self.own = own;
        self.known.clear();
        for sm in found {
            if self.key_matches(&sm.info, &format!("{:?}", sm.path)) {
                self.known.insert(sm.info.guid, sm);
            }
        }
        match self.state {
            SmState::Discovering => {
                // `smi_rcv_process_get_sm`: any MASTER, or a higher DISCOVERING or STANDBY SM.
                let master = self
                    .known
                    .values()
                    .find(|sm| sm.info.sm_state == SmState::Master);
                let higher = self.known.values().filter(|sm| {
                    matches!(sm.info.sm_state, SmState::Discovering | SmState::Standby)
                        && sm.outranks(&self.config)
                });
                match master.or_else(|| self.highest(higher)).cloned() {
                    Some(master) => {
                        self.poll(now, master.clone());
                        self.enter(SmState::Standby, StateReason::MasterFound, Some(&master));
                        Verdict::Stop
                    }
                    None if asked && !repeated => {
                        info!(
                            "another SM asked for this SM's SMInfo during discovery; \
                             discovering again before taking mastership"
                        );
                        self.rediscovering = true;
                        Verdict::Rediscover
                    }
                    None => {
                        self.enter(SmState::Master, StateReason::NoHigherSm, None);
                        Verdict::Proceed
                    }
                }
            }
            SmState::Master => {
                // `state_mgr_get_highest_sm`: a higher SM not NOTACTIVE takes over.
                let higher = self.known.values().filter(|sm| {
                    sm.info.sm_state != SmState::NotActive && sm.outranks(&self.config)
                });
                if let Some(highest) = self.highest(higher).cloned() {
                    self.send_handover(&highest);
                    self.poll(now, highest.clone());
                    self.enter(SmState::Standby, StateReason::HandedOver, Some(&highest));
                    return Verdict::Stop;
                }
                let other_master = self
                    .known
                    .values()
                    .find(|sm| sm.info.sm_state == SmState::Master)
                    .cloned();
                match other_master {
                    Some(other) => {
                        info!(
                            guid = %Guid(other.info.guid),
                            priority = other.info.priority,
                            "another master, lower than this SM: waiting for its handover, \
                             programming nothing meanwhile"
                        );
                        self.poll(now, other);
                        Verdict::Stop
                    }
                    None => {
                        // The master it waited for is gone (`OSM_SM_SIGNAL_POLLING_TIMEOUT`).
                        self.polling = None;
                        Verdict::Proceed
                    }
                }
            }
            _ => Verdict::Stop,
        }
    }

    /// Time has passed: a poll may be due, or the polled SM may be taken as gone.
    pub fn on_time(&mut self, now: Instant) -> Next {
        let Some(polling) = &mut self.polling else {
            return Next::Continue;
        };
        if now < polling.next_at {
            return Next::Continue;
        }
        if polling.unanswered > self.config.polling_retries {
            let guid = polling.target.info.guid;
            self.polling = None;
            warn!(
                guid = %Guid(guid),
                polls = self.config.polling_retries + 1,
                "the polled SM stopped answering SMInfo"
            );
            return match self.state {
                SmState::Standby => {
                    self.enter(SmState::Discovering, StateReason::MasterLost, None);
                    Next::Sweep
                }
                SmState::Master => {
                    self.first_master_sweep = true;
                    Next::Sweep
                }
                _ => Next::Continue,
            };
        }
        polling.unanswered += 1;
        polling.next_at = now + self.config.polling_timeout;
        let target = polling.target.clone();
        self.send_get(&target);
        Next::Continue
    }

    /// Whether `smp` is the answer to one of the election's own SMPs.
    pub fn is_own_answer(smp: &SmpRepr) -> bool {
        smp.attribute_id == AttributeId::SmInfo
            && smp.method.is_response()
            && (smp.transaction_id as u32) & ELECTION_TID != 0
    }

    /// The answer to a poll or a HANDOVER (`smi_rcv_process_get_response`).
    pub fn on_answer(&mut self, answer: &SmpRepr) -> Next {
        if answer.status != Status::OK {
            debug!(status = ?answer.status, "SMInfo answered with an error status; ignored");
            return Next::Continue;
        }
        let Ok(info) = SmInfoRepr::parse(&SmInfo::new_unchecked(&answer.data[..])) else {
            return Next::Continue;
        };
        let Some(polling) = &self.polling else {
            return Next::Continue;
        };
        if info.guid != polling.target.info.guid {
            warn!(
                expected = %Guid(polling.target.info.guid),
                received = %Guid(info.guid),
                "unexpected SM port GUID in an SMInfo answer; ignored"
            );
            return Next::Continue;
        }
        if !self.key_matches(&info, &format!("{:?}", polling.target.path)) {
            return Next::Continue;
        }
        let mut target = polling.target.clone();
        target.info = info;
        self.known.insert(info.guid, target.clone());
        let higher = target.outranks(&self.config);
        let mut next = Next::Continue;
        match (self.state, info.sm_state) {
            (SmState::Standby, SmState::Master) => {
                self.alive(&target);
                if !higher {
                    // A lower master: tell it, so that it sweeps and hands over.
                    self.send_trap_144(&target);
                }
            }
            (SmState::Standby, SmState::Standby) if higher => self.alive(&target),
            (SmState::Master, SmState::Master) => {
                if higher {
                    // `force_heavy_sweep`: the sweep finds it and hands over.
                    next = Next::Sweep;
                } else {
                    self.send_trap_144(&target);
                }
                self.alive(&target);
            }
            _ => {}
        }
        next
    }

    /// An SMInfo Get or Set that reached the SM from LID `slid`: its answer, and what the
    /// manager is to do (`osm_sminfo_rcv_process` for requests).
    pub fn on_request(&mut self, now: Instant, request: SmpRepr, slid: u16) -> (OutgoingMad, Next) {
        let own = Attribute::SmInfo(self.own_info()).to_data();
        if request.method != Method::Set {
            if self.state == SmState::Discovering {
                self.asked_while_discovering = true;
            }
            return (answer(request, slid, Status::OK, own), Next::Continue);
        }
        // A Set that fails a check is answered with its own SMInfo and INVALID_VALUE.
        let refused = || {
            (
                answer(request, slid, Status::INVALID_VALUE, own),
                Next::Continue,
            )
        };
        let sender = SmInfoRepr::parse(&SmInfo::new_unchecked(&request.data[..]));
        // A Set names a transition (IBA 14.2.5.13); 0 is a Get's.
        let modifier = Some(SmInfoModifier::from(request.attribute_modifier))
            .filter(|m| !matches!(m, SmInfoModifier::Get | SmInfoModifier::Unknown(_)));
        let (Ok(sender), Some(modifier)) = (sender, modifier) else {
            error!(
                modifier = request.attribute_modifier,
                "SMInfo Set with an unknown modifier; refused"
            );
            return refused();
        };
        if sender.sm_state != sender_state(modifier) {
            error!(
                ?modifier,
                remote_state = state_name(sender.sm_state),
                "check legality failed: SMInfo Set from an SM in the wrong state; refused"
            );
            return refused();
        }
        if !self.is_legal(modifier) {
            error!(
                ?modifier,
                state = state_name(self.state),
                "failed check of legality of the needed SM transition; refused"
            );
            return refused();
        }
        let reply = answer(request, slid, Status::OK, own);
        // The route to the sender is the one discovery found; a sender it did not find is
        // reached by its LID.
        let from = RemoteSm {
            info: sender,
            lid: slid,
            path: Vec::new(),
        };
        (reply, self.signal(now, modifier, from))
    }

    /// A legal SMInfo Set acted on (`osm_sm_state_mgr_process`).
    fn signal(&mut self, now: Instant, modifier: SmInfoModifier, from: RemoteSm) -> Next {
        info!(?modifier, from = %Guid(from.info.guid), state = state_name(self.state), "SMInfo Set received");
        match (self.state, modifier) {
            (SmState::Discovering, SmInfoModifier::Handover) => Next::Sweep,
            (SmState::Standby, SmInfoModifier::Discover) => {
                self.polling = None;
                self.enter(SmState::Discovering, StateReason::Told, None);
                Next::Sweep
            }
            (SmState::Standby, SmInfoModifier::Disable) => {
                self.polling = None;
                self.enter(SmState::NotActive, StateReason::Told, None);
                Next::Yield
            }
            (SmState::Standby, SmInfoModifier::Handover) => {
                self.polling = None;
                self.enter(SmState::Master, StateReason::HandoverReceived, None);
                Next::Sweep
            }
            (SmState::NotActive, SmInfoModifier::Standby) => {
                // The sender is the master to poll (`smi_rcv_process_set_request`).
                let master = self.known.get(&from.info.guid).cloned().unwrap_or(from);
                self.poll(now, master.clone());
                self.enter(SmState::Standby, StateReason::Told, Some(&master));
                Next::Yield
            }
            (SmState::Master, SmInfoModifier::Handover) => {
                self.polling = None;
                self.first_master_sweep = true;
                Next::Sweep
            }
            _ => Next::Continue,
        }
    }

    /// `osm_sm_state_mgr_check_legality` for a Set's signal.
    fn is_legal(&self, modifier: SmInfoModifier) -> bool {
        use SmInfoModifier::*;
        match self.state {
            SmState::Discovering => modifier == Handover,
            SmState::Standby => matches!(modifier, Discover | Disable | Handover | Acknowledge),
            SmState::NotActive => modifier == Standby,
            SmState::Master => modifier == Handover,
            _ => false,
        }
    }

    /// OpenSM ignores an SM whose SM_Key is not its own, unless its own is 0
    /// (`smi_rcv_process_get_response`, ERR 2F18).
    fn key_matches(&self, info: &SmInfoRepr, at: &str) -> bool {
        if self.config.sm_key == 0 || info.sm_key == self.config.sm_key {
            return true;
        }
        warn!(
            at,
            sm_key = format_args!("{:#018x}", info.sm_key),
            "found remote SM with non-matching sm_key; ignoring it"
        );
        false
    }

    fn highest<'a>(&self, sms: impl Iterator<Item = &'a RemoteSm>) -> Option<&'a RemoteSm> {
        sms.fold(None, |best: Option<&RemoteSm>, sm| match best {
            Some(b) if !is_higher(sm.info.priority, sm.info.guid, b.info.priority, b.info.guid) => {
                Some(b)
            }
            _ => Some(sm),
        })
    }

    fn enter(&mut self, to: SmState, reason: StateReason, master: Option<&RemoteSm>) {
        let from = self.state;
        self.state = to;
        self.first_master_sweep |= to == SmState::Master;
        self.reason = reason;
        self.master = master.map(|sm| MasterSm {
            guid: sm.info.guid,
            priority: sm.info.priority,
            lid: sm.lid,
        });
        match self.master {
            Some(m) => info!(
                reason = %reason,
                master_guid = %Guid(m.guid),
                master_priority = m.priority,
                master_lid = m.lid,
                "Entering {} state",
                state_name(to)
            ),
            None => info!(reason = %reason, "Entering {} state", state_name(to)),
        }
        self.changes.push(StateChange {
            from,
            to,
            reason,
            master: self.master,
        });
    }

    /// Starts polling `target` with a poll at once (`sm_state_mgr_start_polling`).
    fn poll(&mut self, now: Instant, target: RemoteSm) {
        self.send_get(&target);
        self.polling = Some(Polling {
            target,
            unanswered: 0,
            next_at: now + self.config.polling_timeout,
        });
    }

    fn alive(&mut self, target: &RemoteSm) {
        if let Some(polling) = &mut self.polling
            && polling.target.info.guid == target.info.guid
        {
            polling.unanswered = 0;
        }
        self.master = Some(MasterSm {
            guid: target.info.guid,
            priority: target.info.priority,
            lid: target.lid,
        });
    }

    fn fresh_tid(&mut self) -> u64 {
        self.next_tid = (self.next_tid + 1) & !ELECTION_TID;
        u64::from(ELECTION_TID | self.next_tid)
    }

    /// The route to `to`: directed, as OpenSM sends SMInfo, or by LID when no route is known.
    fn route(to: &RemoteSm) -> Option<(Routing, Option<u16>)> {
        if to.path.is_empty() {
            return Some((Routing::Lid, Some(to.lid)));
        }
        match DrPath::request(&to.path) {
            Ok(route) => Some((Routing::Directed(route), None)),
            Err(error) => {
                warn!(path = ?to.path, %error, "no directed route to the other SM");
                None
            }
        }
    }

    fn send_get(&mut self, target: &RemoteSm) {
        let Some((routing, dlid)) = Self::route(target) else {
            return;
        };
        let smp = SmpRepr::get(AttributeId::SmInfo, 0, self.fresh_tid(), routing);
        debug!(guid = %Guid(target.info.guid), "polling SMInfo");
        self.outgoing
            .push(OutgoingMad::from(&Transmit { mad: smp, dlid }));
    }

    /// SubnSet(SMInfo, HANDOVER) to `to` (`state_mgr_send_handover`).
    fn send_handover(&mut self, to: &RemoteSm) {
        let Some((routing, dlid)) = Self::route(to) else {
            return;
        };
        info!(to = %Guid(to.info.guid), priority = to.info.priority, "handing over mastership");
        let smp = SmpRepr::set(
            &Attribute::SmInfo(self.own_info()),
            u32::from(SmInfoModifier::Handover),
            self.fresh_tid(),
            routing,
        );
        self.outgoing
            .push(OutgoingMad::from(&Transmit { mad: smp, dlid }));
    }

    /// Trap 144 with the SM-priority-change flag, LID-routed to the master (`osm_send_trap144`
    /// with TRAP_144_MASK_SM_PRIORITY_CHANGE).
    fn send_trap_144(&mut self, to: &RemoteSm) {
        const OTHER_LOCAL_CHANGES: u8 = 0x01;
        const SM_PRIORITY_CHANGE: u16 = 0x0008;
        let notice = NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Informational,
            producer_type: u32::from(u8::from(self.own.node_type)),
            trap_number: NoticeRepr::TRAP_CAPABILITY_CHANGE,
            issuer_lid: self.own.lid,
            notice_toggle: false,
            notice_count: 0,
            data_details: [0; 54],
        };
        let mut data = Attribute::Notice(notice).to_data();
        let mut details = Notice::new_unchecked(&mut data[..]);
        details.set_trap144_lid_addr(self.own.lid);
        details.set_trap144_local_changes(OTHER_LOCAL_CHANGES);
        details.set_trap144_capability_mask(CapabilityMask(self.own.capability_mask));
        details.set_trap144_change_flags(SM_PRIORITY_CHANGE);
        let smp = SmpRepr {
            method: Method::Trap,
            data,
            ..SmpRepr::get(AttributeId::Notice, 0, self.fresh_tid(), Routing::Lid)
        };
        debug!(to = to.lid, "sending trap 144 to the lower master");
        self.outgoing.push(OutgoingMad::from(&Transmit {
            mad: smp,
            dlid: Some(to.lid),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_exchange::Address;

    const OURS: u64 = 0x20;

    fn config(priority: u8) -> ElectionConfig {
        ElectionConfig {
            guid: OURS,
            priority,
            sm_key: 1,
            polling_timeout: Duration::from_millis(500),
            polling_retries: 2,
        }
    }

    fn sm(guid: u64, priority: u8, state: SmState, sm_key: u64) -> RemoteSm {
        RemoteSm {
            info: SmInfoRepr {
                guid,
                sm_key,
                act_count: 0,
                priority,
                sm_state: state,
            },
            lid: 7,
            path: vec![1, 2],
        }
    }

    #[test]
    fn priority_first_then_the_lower_guid() {
        assert!(is_higher(5, 0x99, 4, 0x01));
        assert!(is_higher(5, 0x01, 5, 0x99));
        assert!(!is_higher(5, 0x99, 5, 0x01));
        assert!(
            !is_higher(5, 0x10, 5, 0x10),
            "an SM does not outrank itself"
        );
    }

    #[test]
    fn a_discovering_sm_defers_to_a_master_or_a_higher_sm_and_otherwise_is_master() {
        let now = Instant::now();
        let verdict = |priority: u8, found: Vec<RemoteSm>| {
            let mut election = Election::new(config(priority));
            let verdict = election.after_discovery(now, found, OwnPort::default());
            (verdict, election.state())
        };
        // A master of lower priority is still deferred to while this SM discovers.
        assert_eq!(
            verdict(9, vec![sm(0x30, 1, SmState::Master, 1)]),
            (Verdict::Stop, SmState::Standby)
        );
        // A standby of the same priority and a lower GUID outranks this SM.
        assert_eq!(
            verdict(5, vec![sm(0x10, 5, SmState::Standby, 1)]),
            (Verdict::Stop, SmState::Standby)
        );
        // Only lower SMs: this one is master.
        assert_eq!(
            verdict(5, vec![sm(0x30, 5, SmState::Standby, 1)]),
            (Verdict::Proceed, SmState::Master)
        );
        // A master whose SM_Key differs is ignored (OpenSM's sm_key check).
        assert_eq!(
            verdict(5, vec![sm(0x10, 9, SmState::Master, 0x1234)]),
            (Verdict::Proceed, SmState::Master)
        );
    }

    #[test]
    fn a_discovering_sm_asked_for_its_sminfo_discovers_again_before_taking_mastership() {
        let now = Instant::now();
        let mut election = Election::new(config(5));
        // Another SM reads this one while it discovers: it saw this SM DISCOVERING, and may
        // become master on it, after this SM's discovery found nothing at its port.
        let get = SmpRepr::get(AttributeId::SmInfo, 0, 9, Routing::Lid);
        let (reply, next) = election.on_request(now, get, 7);
        assert_eq!(next, Next::Continue);
        let reply = SmpRepr::parse_bytes(&reply.mad).unwrap();
        let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&reply.data[..])).unwrap();
        assert_eq!(info.sm_state, SmState::Discovering);
        assert_eq!(
            election.after_discovery(now, Vec::new(), OwnPort::default()),
            Verdict::Rediscover
        );
        assert_eq!(election.state(), SmState::Discovering);
        // Discovered again: nothing higher, so master, even if asked again meanwhile (a
        // standby's polls must not hold it back for ever).
        election.on_request(now, get, 7);
        assert_eq!(
            election.after_discovery(now, Vec::new(), OwnPort::default()),
            Verdict::Proceed
        );
        assert_eq!(election.state(), SmState::Master);
        // A master asked for its SMInfo goes on as master: only discovery is in question.
        election.on_request(now, get, 7);
        assert_eq!(
            election.after_discovery(now, Vec::new(), OwnPort::default()),
            Verdict::Proceed
        );
        // A request during discovery does not keep a lower SM from deferring.
        let mut lower = Election::new(config(1));
        lower.on_request(now, get, 7);
        assert_eq!(
            lower.after_discovery(
                now,
                vec![sm(0x30, 5, SmState::Discovering, 1)],
                OwnPort::default()
            ),
            Verdict::Stop
        );
    }

    #[test]
    fn the_sminfo_answered_and_sent_carries_the_smps_counted_as_act_count() {
        let now = Instant::now();
        let mut election = Election::new(config(5));
        election.after_discovery(now, Vec::new(), OwnPort::default());
        let get = SmpRepr::get(AttributeId::SmInfo, 0, 9, Routing::Lid);
        let act_count = |mad: &[u8]| {
            let smp = SmpRepr::parse_bytes(mad).unwrap();
            SmInfoRepr::parse(&SmInfo::new_unchecked(&smp.data[..]))
                .unwrap()
                .act_count
        };
        assert_eq!(act_count(&election.on_request(now, get, 7).0.mad), 0);
        for _ in 0..3 {
            election.count_smp_sent();
        }
        assert_eq!(act_count(&election.on_request(now, get, 7).0.mad), 3);
        // The HANDOVER a master sends carries it too.
        election.after_discovery(
            now,
            vec![sm(0x30, 9, SmState::Standby, 1)],
            OwnPort::default(),
        );
        let sent = election.take_outgoing();
        let handover = sent
            .iter()
            .find(|out| SmpRepr::parse_bytes(&out.mad).unwrap().method == Method::Set)
            .expect("a HANDOVER");
        assert_eq!(act_count(&handover.mad), 3);
    }

    #[test]
    fn the_first_master_sweep_follows_becoming_master_and_a_handover_as_master() {
        let now = Instant::now();
        let mut election = Election::new(config(5));
        assert!(!election.is_first_master_sweep(), "not master yet");
        election.after_discovery(now, Vec::new(), OwnPort::default());
        assert!(election.is_first_master_sweep());
        election.master_sweep_done();
        assert!(!election.is_first_master_sweep());
        // A HANDOVER reaching a master makes its next sweep a first one again.
        let other = sm(0x30, 1, SmState::Master, 1).info;
        let handover = SmpRepr::set(
            &Attribute::SmInfo(other),
            u32::from(SmInfoModifier::Handover),
            9,
            Routing::Lid,
        );
        assert_eq!(election.on_request(now, handover, 7).1, Next::Sweep);
        assert!(election.is_first_master_sweep());
        // A standby handed the subnet becomes master, first sweep included.
        let mut standby = Election::new(config(1));
        standby.after_discovery(
            now,
            vec![sm(0x30, 5, SmState::Master, 1)],
            OwnPort::default(),
        );
        assert!(!standby.is_first_master_sweep());
        assert_eq!(standby.on_request(now, handover, 7).1, Next::Sweep);
        assert_eq!(standby.state(), SmState::Master);
        assert!(standby.is_first_master_sweep());
    }

    #[test]
    fn a_standby_takes_only_the_sminfo_sets_a_master_may_send_it() {
        let now = Instant::now();
        let master = sm(0x30, 5, SmState::Master, 1);
        // (modifier, what the standby answers, the state it is in after)
        let cases = [
            (0, Status::INVALID_VALUE, SmState::Standby),
            (
                u32::from(SmInfoModifier::Handover),
                Status::OK,
                SmState::Master,
            ),
            // ACKNOWLEDGE comes from a standby, not from this master.
            (
                u32::from(SmInfoModifier::Acknowledge),
                Status::INVALID_VALUE,
                SmState::Standby,
            ),
            (
                u32::from(SmInfoModifier::Disable),
                Status::OK,
                SmState::NotActive,
            ),
            // STANDBY is for a NOTACTIVE SM.
            (
                u32::from(SmInfoModifier::Standby),
                Status::INVALID_VALUE,
                SmState::Standby,
            ),
            (
                u32::from(SmInfoModifier::Discover),
                Status::OK,
                SmState::Discovering,
            ),
            (9, Status::INVALID_VALUE, SmState::Standby),
        ];
        for (modifier, status, after) in cases {
            let mut standby = Election::new(config(1));
            standby.after_discovery(now, vec![master.clone()], OwnPort::default());
            assert_eq!(standby.state(), SmState::Standby);
            let set = SmpRepr::set(&Attribute::SmInfo(master.info), modifier, 9, Routing::Lid);
            let (reply, _) = standby.on_request(now, set, 7);
            let reply = SmpRepr::parse_bytes(&reply.mad).unwrap();
            assert_eq!(
                (reply.status, standby.state()),
                (status, after),
                "{modifier}"
            );
        }
    }

    #[test]
    fn a_standby_tells_a_lower_master_with_trap_144_as_opensm_lays_it_out() {
        let now = Instant::now();
        let mut standby = Election::new(config(5));
        let master = sm(0x30, 1, SmState::Master, 1);
        let own = OwnPort {
            lid: 0x0102,
            capability_mask: 0x0250_0a6a,
            node_type: NodeType::Ca,
        };
        standby.after_discovery(now, vec![master.clone()], own);
        assert_eq!(standby.state(), SmState::Standby);
        standby.take_outgoing();
        let answer = SmpRepr {
            method: Method::GetResp,
            data: Attribute::SmInfo(master.info).to_data(),
            ..SmpRepr::get(AttributeId::SmInfo, 0, 1, Routing::Lid)
        };
        standby.on_answer(&answer);
        let sent: Vec<(SmpRepr, Address)> = standby
            .take_outgoing()
            .into_iter()
            .map(|out| (SmpRepr::parse_bytes(&out.mad).unwrap(), out.address))
            .collect();
        let [(trap, address)] = &sent[..] else {
            panic!("{sent:?}")
        };
        assert_eq!(
            (trap.method, *address),
            (Method::Trap, Address::Lid(master.lid))
        );
        let notice = NoticeRepr::parse(&Notice::new_unchecked(&trap.data[..])).unwrap();
        assert_eq!(
            (notice.trap_number, notice.issuer_lid, notice.producer_type),
            (NoticeRepr::TRAP_CAPABILITY_CHANGE, 0x0102, 1)
        );
        // ib_mad_notice_attr_t's ntc_144: LID, OtherLocalChanges, CapabilityMask, and the
        // SM-priority change flag (include/iba/ib_types.h, osm_send_trap144).
        let mut details = [0u8; 54];
        details[2..4].copy_from_slice(&[0x01, 0x02]);
        details[5] = 0x01;
        details[6..10].copy_from_slice(&[0x02, 0x50, 0x0a, 0x6a]);
        details[12..14].copy_from_slice(&[0x00, 0x08]);
        assert_eq!(notice.data_details, details);
    }

    #[test]
    fn a_master_that_finds_a_higher_standby_hands_over() {
        let now = Instant::now();
        let mut election = Election::new(config(5));
        assert_eq!(
            election.after_discovery(now, Vec::new(), OwnPort::default()),
            Verdict::Proceed
        );
        let verdict = election.after_discovery(
            now,
            vec![sm(0x30, 9, SmState::Standby, 1)],
            OwnPort::default(),
        );
        assert_eq!(
            (verdict, election.state()),
            (Verdict::Stop, SmState::Standby)
        );
        // One SMInfo Set, HANDOVER, goes to the higher SM.
        let sent: Vec<SmpRepr> = election
            .take_outgoing()
            .iter()
            .filter_map(|out| SmpRepr::parse_bytes(&out.mad).ok())
            .filter(|smp| smp.method == Method::Set)
            .collect();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].attribute_id, AttributeId::SmInfo);
        assert_eq!(
            sent[0].attribute_modifier,
            u32::from(SmInfoModifier::Handover)
        );
    }

    #[test]
    fn a_standby_takes_over_once_its_master_misses_every_poll() {
        let start = Instant::now();
        let mut election = Election::new(config(1));
        election.after_discovery(
            start,
            vec![sm(0x30, 5, SmState::Master, 1)],
            OwnPort::default(),
        );
        assert_eq!(election.state(), SmState::Standby);
        // Every poll goes unanswered: after polling_retries + 1 polls, the next deadline finds
        // the master gone, and this SM sweeps to take over.
        let gets = |election: &mut Election| {
            election
                .take_outgoing()
                .iter()
                .filter_map(|out| SmpRepr::parse_bytes(&out.mad).ok())
                .filter(|smp| smp.method == Method::Get && smp.attribute_id == AttributeId::SmInfo)
                .count()
        };
        let mut polls = gets(&mut election);
        let mut now = start;
        let mut next = Next::Continue;
        for _ in 0..10 {
            let Some(deadline) = election.next_deadline() else {
                break;
            };
            now = now.max(deadline);
            next = election.on_time(now);
            polls += gets(&mut election);
            if next != Next::Continue {
                break;
            }
        }
        assert_eq!(next, Next::Sweep);
        assert_eq!(election.state(), SmState::Discovering);
        // As `sm_state_mgr_start_polling` and `osm_sm_state_mgr_polling_callback` count: one
        // poll on becoming standby, then one per 500 ms while the count is not past
        // `polling_retry_number` (2): 4 polls, and the master is taken as gone at 2 s.
        assert_eq!(polls, 4);
        assert_eq!(now - start, Duration::from_millis(2000));
    }
}
