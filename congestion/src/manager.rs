//! The congestion control manager: OpenSM's `osm_congestion_control_setup` and the receive
//! path behind it, as a sans-IO [`Engine`].
//!
//! After a sweep that routed, [`CongestionManager::program`] queues, for each port in OpenSM's
//! port GUID order: a SwitchCongestionSetting Set to every switch (at its LID), a
//! CACongestionSetting Set and the CongestionControlTable blocks to every CA port. A Set goes
//! only where the data differs from what the port last answered, unless the port is new or the
//! caller forces all. At most `cc_max_outstanding_mads` are on the wire.
//!
//! The answers, as OpenSM takes them:
//! - status 0: the echo is kept as what the port holds;
//! - a status with bit 0x0004, 0x0008 or 0x000C set: the port has no usable agent and is never
//!   sent to again (OpenSM's `cc_unavailable_flag`); any other status is ignored;
//! - no answer after the retries: counted, and a port with more than 3 such in a row is taken
//!   as having no agent.
//!
//! Beyond OpenSM, each echo is checked against the fields the Set's Control_Map selected (and
//! a whole table block): a port that does not keep them is reported.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use ibqos_exchange::scheduler::{Completion, Failure, Request, Scheduler, SchedulerConfig};
use ibqos_exchange::{Engine, Gmp, OutgoingMad, Peer};
use ibqos_mad::{
    CaCongestionSetting, CaCongestionSettingRepr, CcAttributeId, CongestionControlTable,
    CongestionControlTableRepr, Guid, Method, Status, SwitchCongestionSetting,
    SwitchCongestionSettingRepr, SwitchControlMap,
};

use crate::config::{CcData, CcOptions};
use crate::wire::{CcClient, DATA_IN_PAYLOAD, cc_mad};

/// Timeouts in a row after which a port is taken as having no agent
/// (`OSM_CC_TIMEOUT_COUNT_THRESHOLD`).
const TIMEOUT_THRESHOLD: u32 = 3;

/// What kind of node a port to program belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcNodeKind {
    Switch,
    Ca,
    /// OpenSM programs no congestion control on routers.
    Router,
}

/// One port of the subnet: a switch's port 0, or a CA or router port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcPort {
    pub port_guid: u64,
    pub node_guid: u64,
    pub port: u8,
    pub lid: u16,
    pub kind: CcNodeKind,
}

/// What a port last answered, and whether it has a usable agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortState {
    /// No usable agent: never sent to again.
    pub unavailable: bool,
    /// Sets without an answer in a row.
    pub timeouts: u32,
    pub switch: Option<SwitchCongestionSettingRepr>,
    pub ca: Option<CaCongestionSettingRepr>,
    /// By block.
    pub table: Vec<Option<CongestionControlTableRepr>>,
}

/// What happened, for the SM's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CcNotice {
    /// A Set got no answer (OpenSM's ERR C106), logged once per run of timeouts.
    NoAnswer {
        attribute: CcAttributeId,
        lid: u16,
        node_guid: u64,
        port: u8,
    },
    /// A port answered with a status that says it has no usable agent.
    Unavailable {
        node_guid: u64,
        port: u8,
        status: Status,
    },
    /// A port's echo does not hold what the Set selected.
    NotKept {
        attribute: CcAttributeId,
        node_guid: u64,
        port: u8,
    },
}

impl std::fmt::Display for CcNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CcNotice::NoAnswer {
                attribute,
                lid,
                node_guid,
                port,
            } => write!(
                f,
                "ERR C106: MAD Error (IB_TIMEOUT): attr id = {} LID {lid} GUID 0x{node_guid:016x} \
                 port {port}",
                u16::from(*attribute)
            ),
            CcNotice::Unavailable {
                node_guid,
                port,
                status,
            } => write!(
                f,
                "congestion control unavailable at node 0x{node_guid:016x} port {port}: status \
                 0x{:04x}; not programmed again",
                status.0
            ),
            CcNotice::NotKept {
                attribute,
                node_guid,
                port,
            } => write!(
                f,
                "node 0x{node_guid:016x} port {port} did not keep the {attribute} it was set"
            ),
        }
    }
}

/// One Set in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    port: CcPort,
    set: SetKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetKind {
    Switch,
    Ca,
    Table(u32),
}

impl SetKind {
    fn attribute(self) -> CcAttributeId {
        match self {
            SetKind::Switch => CcAttributeId::SwitchCongestionSetting,
            SetKind::Ca => CcAttributeId::CaCongestionSetting,
            SetKind::Table(_) => CcAttributeId::CongestionControlTable,
        }
    }
}

/// OpenSM's congestion control manager.
#[derive(Debug)]
pub struct CongestionManager {
    options: CcOptions,
    data: CcData,
    scheduler: Scheduler<Op, Gmp>,
    /// Every port that was ever programmed, by port GUID.
    ports: BTreeMap<u64, PortState>,
    /// Sets not yet handed to the scheduler, in OpenSM's order.
    planned: VecDeque<Request<Op, Gmp>>,
    notices: Vec<CcNotice>,
}

/// The scheduler OpenSM's CC poller amounts to: `cc_max_outstanding_mads` on the wire, the SM's
/// timeout and retries.
fn scheduler(options: &CcOptions) -> Scheduler<Op, Gmp> {
    Scheduler::new(SchedulerConfig {
        max_outstanding: usize::try_from(options.max_outstanding_mads)
            .unwrap_or(usize::MAX)
            .max(1),
        timeout: options.timeout,
        retries: options.retries,
    })
}

impl CongestionManager {
    pub fn new(options: CcOptions) -> CongestionManager {
        let scheduler = scheduler(&options);
        CongestionManager {
            data: options.data(),
            options,
            scheduler,
            ports: BTreeMap::new(),
            planned: VecDeque::new(),
            notices: Vec::new(),
        }
    }

    pub fn options(&self) -> &CcOptions {
        &self.options
    }

    /// New options (a configuration read again): what each port answered is kept, so the next
    /// [`program`](Self::program) sends what now differs. The wire's limits change once nothing
    /// is in flight.
    pub fn set_options(&mut self, options: CcOptions) {
        if options == self.options {
            return;
        }
        if self.is_idle() {
            self.scheduler = scheduler(&options);
        }
        self.data = options.data();
        self.options = options;
    }

    /// What each port last answered, by port GUID.
    pub fn ports(&self) -> &BTreeMap<u64, PortState> {
        &self.ports
    }

    /// Every Set answered or given up.
    pub fn is_idle(&self) -> bool {
        self.planned.is_empty() && self.scheduler.outstanding() == 0
    }

    /// What happened since the last call, oldest first.
    pub fn take_notices(&mut self) -> Vec<CcNotice> {
        std::mem::take(&mut self.notices)
    }

    /// `osm_congestion_control_setup`: queues the Sets `ports` need, in OpenSM's port GUID
    /// order. `force` sends every one whatever the ports answered before (OpenSM's subnet
    /// `need_update`, on the first sweep).
    pub fn program(&mut self, ports: &[CcPort], force: bool) {
        if !self.options.enabled {
            return;
        }
        let mut ordered: Vec<&CcPort> = ports.iter().collect();
        ordered.sort_by_key(|p| Guid(p.port_guid).opensm_order());
        for &port in ordered {
            let known = self.ports.get(&port.port_guid);
            if known.is_some_and(|state| state.unavailable) {
                continue;
            }
            let state = known.cloned().unwrap_or_default();
            let force = force || known.is_none();
            match port.kind {
                CcNodeKind::Switch if force || state.switch != Some(self.data.switch) => {
                    self.plan(port, SetKind::Switch);
                }
                CcNodeKind::Ca => {
                    if force || state.ca != Some(self.data.ca) {
                        self.plan(port, SetKind::Ca);
                    }
                    let stale: Vec<u32> = (0..self.data.table.len())
                        .filter(|&index| {
                            let held = state.table.get(index).copied().flatten();
                            force || held != Some(self.data.table[index])
                        })
                        .map(|index| index as u32)
                        .collect();
                    for block in stale {
                        self.plan(port, SetKind::Table(block));
                    }
                }
                CcNodeKind::Switch | CcNodeKind::Router => {}
            }
        }
    }

    fn plan(&mut self, port: CcPort, set: SetKind) {
        let (modifier, data) = match set {
            SetKind::Switch => {
                let mut bytes = [0u8; 76];
                self.data
                    .switch
                    .emit(&mut SwitchCongestionSetting::new_unchecked(&mut bytes[..]));
                (0, bytes.to_vec())
            }
            SetKind::Ca => {
                let mut bytes = [0u8; 132];
                self.data
                    .ca
                    .emit(&mut CaCongestionSetting::new_unchecked(&mut bytes[..]));
                (0, bytes.to_vec())
            }
            SetKind::Table(block) => {
                let mut bytes = [0u8; 132];
                self.data.table[block as usize]
                    .emit(&mut CongestionControlTable::new_unchecked(&mut bytes[..]));
                (block, bytes.to_vec())
            }
        };
        let mut mad = cc_mad(Method::Set, set.attribute(), modifier, self.options.cc_key);
        mad.payload[DATA_IN_PAYLOAD..DATA_IN_PAYLOAD + data.len()].copy_from_slice(&data);
        self.planned.push_back(Request {
            mad,
            dlid: Some(port.lid),
            node: port.node_guid,
            timeout: None,
            context: Op { port, set },
        });
    }

    /// Hands planned Sets to the scheduler while the wire has room.
    fn feed(&mut self) {
        while self.scheduler.wants_work() {
            let Some(request) = self.planned.pop_front() else {
                return;
            };
            self.scheduler.submit(request);
        }
    }

    /// `cc_mad_send_err_callback` for a timeout: counted; past the threshold the port is taken
    /// as having no agent. A MAD the fabric handed back counts as one: the kernel reports both
    /// as a timeout.
    fn unanswered(&mut self, op: Op) {
        let state = self.ports.entry(op.port.port_guid).or_default();
        if state.timeouts == 0 {
            self.notices.push(CcNotice::NoAnswer {
                attribute: op.set.attribute(),
                lid: op.port.lid,
                node_guid: op.port.node_guid,
                port: op.port.port,
            });
        }
        state.timeouts += 1;
        if state.timeouts > TIMEOUT_THRESHOLD && !state.unavailable {
            state.unavailable = true;
            state.timeouts = 0;
        }
    }
}

/// Whether `echo` holds every field of `sent` that its Control_Map selected.
fn switch_kept(sent: &SwitchCongestionSettingRepr, echo: &SwitchCongestionSettingRepr) -> bool {
    let map = sent.control_map;
    let selected = |bit: SwitchControlMap, same: bool| !map.contains(bit) || same;
    selected(
        SwitchControlMap::VICTIM_MASK,
        sent.victim_mask == echo.victim_mask,
    ) && selected(
        SwitchControlMap::CREDIT_MASK,
        sent.credit_mask == echo.credit_mask,
    ) && selected(
        SwitchControlMap::THRESHOLD,
        (sent.threshold, sent.packet_size) == (echo.threshold, echo.packet_size),
    ) && selected(
        SwitchControlMap::CREDIT_STARVATION,
        (sent.cs_threshold, sent.cs_return_delay) == (echo.cs_threshold, echo.cs_return_delay),
    ) && selected(
        SwitchControlMap::MARKING_RATE,
        sent.marking_rate == echo.marking_rate,
    )
}

/// Whether `echo` holds `sent`'s Port_Control and every SL entry its Control_Map selected.
fn ca_kept(sent: &CaCongestionSettingRepr, echo: &CaCongestionSettingRepr) -> bool {
    sent.port_control == echo.port_control
        && (0..16)
            .all(|sl| sent.control_map & (1 << sl) == 0 || sent.entries[sl] == echo.entries[sl])
}

impl CcClient for CongestionManager {
    type Op = Op;

    fn scheduler(&mut self) -> &mut Scheduler<Op, Gmp> {
        &mut self.scheduler
    }

    /// `cc_rcv_mad`: an answer with its real status.
    fn answered(&mut self, op: Op, status: Status, response: &Gmp) {
        let state = self.ports.entry(op.port.port_guid).or_default();
        state.timeouts = 0;
        if status != Status::OK {
            let unusable = Status::BAD_VERSION.0
                | Status::METHOD_UNSUPPORTED.0
                | Status::METHOD_ATTRIBUTE_UNSUPPORTED.0;
            if status.0 & unusable != 0 {
                state.unavailable = true;
                self.notices.push(CcNotice::Unavailable {
                    node_guid: op.port.node_guid,
                    port: op.port.port,
                    status,
                });
            }
            return;
        }
        state.unavailable = false;
        let data = &response.payload[DATA_IN_PAYLOAD..];
        let kept = match op.set {
            SetKind::Switch => {
                let echo = SwitchCongestionSettingRepr::parse(
                    &SwitchCongestionSetting::new_unchecked(data),
                );
                let kept = echo
                    .as_ref()
                    .is_ok_and(|echo| switch_kept(&self.data.switch, echo));
                state.switch = echo.ok();
                kept
            }
            SetKind::Ca => {
                let echo =
                    CaCongestionSettingRepr::parse(&CaCongestionSetting::new_unchecked(data));
                let kept = echo.as_ref().is_ok_and(|echo| ca_kept(&self.data.ca, echo));
                state.ca = echo.ok();
                kept
            }
            SetKind::Table(block) => {
                let echo =
                    CongestionControlTableRepr::parse(&CongestionControlTable::new_unchecked(data));
                let index = block as usize;
                if state.table.len() <= index {
                    state.table.resize(index + 1, None);
                }
                let kept = echo
                    .as_ref()
                    .is_ok_and(|echo| self.data.table.get(index) == Some(echo));
                state.table[index] = echo.ok();
                kept
            }
        };
        if !kept {
            self.notices.push(CcNotice::NotKept {
                attribute: op.set.attribute(),
                node_guid: op.port.node_guid,
                port: op.port.port,
            });
        }
    }

    fn settle(&mut self, completion: Completion<Op, Gmp>) {
        match completion {
            Completion::Answered { context, response } => {
                self.answered(context, Status::OK, &response)
            }
            Completion::Failed {
                context,
                failure: Failure::TimedOut { .. } | Failure::Dropped { .. },
                ..
            } => self.unanswered(context),
            // Status answers never reach the scheduler as errors (see `on_mad`), and a mismatched
            // answer was retried like a lost one.
            Completion::Failed { context, .. } => self.unanswered(context),
        }
    }
}

impl Engine for CongestionManager {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.feed();
        let transmit = self.scheduler.poll_transmit(now)?;
        Some(OutgoingMad::from(&transmit))
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.scheduler.next_deadline()
    }

    /// An answer; an error status is the agent's (see `wire::receive`).
    fn on_mad(&mut self, _now: Instant, mad: &[u8], _from: Peer) {
        self.on_cc_mad(mad);
    }

    fn on_dropped(&mut self, _now: Instant, mad: &[u8]) {
        self.on_cc_dropped(mad);
    }

    fn on_time(&mut self, now: Instant) {
        self.on_cc_time(now);
    }
}

#[cfg(test)]
mod tests;
