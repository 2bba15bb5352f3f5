//! The congestion control manager: OpenSM's `osm_congestion_control_setup` and the receive
//! path behind it, as a sans-IO [`Engine`].
//!
//! After a sweep that routed, [`CongestionManager::program`] queues, for each port in OpenSM's
//! port GUID order: a SwitchCongestionSetting Set to every switch (at its LID), a
//! CACongestionSetting Set and the CongestionControlTable blocks to every CA port. A Set goes
//! only where the data differs from what the port last answered, unless the caller forces all.
//! At most `cc_max_outstanding_mads` are on the wire.
//!
//! The answers, as OpenSM takes them:
//! - status 0: the echo is kept as what the port holds;
//! - a status with bit 0x0004, 0x0008 or 0x000C set: the port has no usable agent and is never
//!   sent to again (OpenSM's `cc_unavailable_flag`); any other status is ignored;
//! - no answer after the retries: counted, and a port with more than 3 such in a row is taken
//!   as having no agent.
//!
//! Beyond OpenSM, each echo is checked against the fields the Set's Control_Map selected (and
//! a whole table block): a port that does not keep them is reported. One programming runs in
//! stages, each waiting for the answers of the one before:
//! 1. with `key_program`, a Get of every port's CongestionKeyInfo: whether its key lets the
//!    SM's Sets in;
//! 2. with `read_back`, a Get of each attribute whose last answer OpenSM's rule takes as held
//!    (none when forced: every Set goes anyway). A port found not holding it is reported, and
//!    what it holds is kept as its last answer, so that the rule Sets it again in stage 4;
//! 3. with `key_program`, a CongestionKeyInfo Set where the port does not hold `cc_key` with
//!    the protection asked;
//! 4. OpenSM's Sets, unchanged: the drift stage 2 found is what adds to them;
//! 5. with `read_back`, a Get of each attribute Set in stages 3 and 4 and answered; a port that
//!    does not hold it is reported and Set again at the next programming.
//!
//! The Gets never change which ports OpenSM's rules give up on: their timeouts and statuses
//! are reported, not counted.
//!
//! A port whose agent holds another CC_Key than `cc_key` drops every Set as a violation (IBA
//! A10.4.1), so with `key_program` it is reported and left alone until it holds `cc_key` or
//! none. An agent that reads its key as 0 with the protect bit set hides it: another key.
//! Only a key this SM programmed (an earlier `cc_key`) is replaced, carried by the key Set.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

use ibqos_exchange::scheduler::{Completion, Request, Scheduler, SchedulerConfig};
use ibqos_exchange::{Engine, Gmp, OutgoingMad, Peer};
use ibqos_mad::{
    CaCongestionSetting, CaCongestionSettingRepr, CcAttributeId, CongestionControlTable,
    CongestionControlTableRepr, CongestionKeyInfo, CongestionKeyInfoRepr, Guid, Method, Status,
    SwitchCongestionSetting, SwitchCongestionSettingRepr, SwitchControlMap,
};

use crate::config::{CcData, CcOptions, KeyProgram};
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
    /// With `key_program`: CongestionKeyInfo as last answered while it held `cc_key` or none.
    pub key: Option<CongestionKeyInfoRepr>,
    /// With `key_program`: the agent holds a CC_Key this SM does not know, so it is left alone.
    pub foreign_key: bool,
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
    /// A Get found a port not holding what it was programmed with: Set again, in this
    /// programming when found before its Sets, at the next when found after them.
    NotHeld {
        attribute: CcAttributeId,
        node_guid: u64,
        port: u8,
    },
    /// A Get got an error status (`Some`) or no answer.
    Unread {
        attribute: CcAttributeId,
        node_guid: u64,
        port: u8,
        status: Option<Status>,
    },
    /// The agent holds a CC_Key other than `cc_key` (`None`: hidden by its protect bit), and
    /// drops the SM's Sets: it is not programmed while it does.
    ForeignKey {
        node_guid: u64,
        port: u8,
        held: Option<u64>,
    },
    /// The agent answered the CongestionKeyInfo Set with an error status: no key there.
    KeyRefused {
        node_guid: u64,
        port: u8,
        status: Status,
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
            CcNotice::NotHeld {
                attribute,
                node_guid,
                port,
            } => write!(
                f,
                "read back: node 0x{node_guid:016x} port {port} does not hold the {attribute} \
                 it was programmed with; it is Set again"
            ),
            CcNotice::Unread {
                attribute,
                node_guid,
                port,
                status,
            } => {
                write!(
                    f,
                    "read back: node 0x{node_guid:016x} port {port} gave no {attribute}: "
                )?;
                match status {
                    Some(status) => write!(f, "status 0x{:04x}", status.0),
                    None => f.write_str("no answer"),
                }
            }
            CcNotice::ForeignKey {
                node_guid,
                port,
                held,
            } => {
                write!(
                    f,
                    "node 0x{node_guid:016x} port {port} holds another CC_Key ("
                )?;
                match held {
                    Some(key) => write!(f, "0x{key:016x}")?,
                    None => f.write_str("hidden by its protect bit")?,
                }
                f.write_str(
                    ") than cc_key and drops this SM's Sets as violations: its congestion \
                     control is not programmed until it holds cc_key or none",
                )
            }
            CcNotice::KeyRefused {
                node_guid,
                port,
                status,
            } => write!(
                f,
                "node 0x{node_guid:016x} port {port} refused its CC_Key: status 0x{:04x}; its \
                 other settings are programmed without it",
                status.0
            ),
        }
    }
}

/// What the read back found, by attribute, since the manager started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CcDrift {
    /// Attributes a Get before the Sets found not holding what the port was programmed with.
    pub found: BTreeMap<CcAttributeId, u64>,
    /// Of those, Set again and echoed back holding it.
    pub repaired: BTreeMap<CcAttributeId, u64>,
}

/// An attribute the manager programs at a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Key,
    Switch,
    Ca,
    Table(u32),
}

impl Target {
    fn attribute(self) -> CcAttributeId {
        match self {
            Target::Key => CcAttributeId::CongestionKeyInfo,
            Target::Switch => CcAttributeId::SwitchCongestionSetting,
            Target::Ca => CcAttributeId::CaCongestionSetting,
            Target::Table(_) => CcAttributeId::CongestionControlTable,
        }
    }

    fn modifier(self) -> u32 {
        match self {
            Target::Table(block) => block,
            Target::Key | Target::Switch | Target::Ca => 0,
        }
    }
}

/// Why a MAD goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A Get before the Sets: what the port holds now.
    Read,
    Set,
    /// A Get after the Sets: whether the port holds what it was Set.
    Verify,
}

/// One MAD in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    port: CcPort,
    target: Target,
    access: Access,
}

/// A programming's stages, in order (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    ReadKey,
    Read,
    Key,
    Settings,
    Verify,
}

impl Stage {
    fn next(self) -> Option<Stage> {
        match self {
            Stage::ReadKey => Some(Stage::Read),
            Stage::Read => Some(Stage::Key),
            Stage::Key => Some(Stage::Settings),
            Stage::Settings => Some(Stage::Verify),
            Stage::Verify => None,
        }
    }
}

/// One programming under way.
#[derive(Debug)]
struct Pass {
    /// Switches and CA ports, in OpenSM's port GUID order.
    ports: Vec<CcPort>,
    force: bool,
    stage: Stage,
    /// Ports left alone from here on: a CC_Key this SM does not hold, or a key Set unanswered.
    left_alone: BTreeSet<u64>,
    /// Ports whose CongestionKeyInfo could not be read: no key Set this time.
    key_unread: BTreeSet<u64>,
    /// What was Set and answered with status 0, in order: read back in the last stage.
    set: Vec<(CcPort, Target)>,
    /// What the read before the Sets found drifted, by port GUID.
    drifted: BTreeSet<(u64, Target)>,
}

/// OpenSM's congestion control manager.
#[derive(Debug)]
pub struct CongestionManager {
    options: CcOptions,
    data: CcData,
    scheduler: Scheduler<Op, Gmp>,
    /// Every port that was ever programmed, by port GUID.
    ports: BTreeMap<u64, PortState>,
    pass: Option<Pass>,
    drift: CcDrift,
    /// MADs not yet handed to the scheduler, in OpenSM's order.
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

/// What a CongestionKeyInfo read says of the agent's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyHeld {
    /// `ours`, or none: the manager's MADs pass.
    Usable,
    /// Another key; `None` when the protect bit hides it.
    Other(Option<u64>),
}

/// Whether `held` is `cc_key` with the protection `wanted`.
fn key_is(held: &CongestionKeyInfoRepr, cc_key: u64, wanted: KeyProgram) -> bool {
    (held.cc_key, held.protect, held.lease_period) == (cc_key, wanted.protect, wanted.lease_period)
}

/// What `read` says of the agent's key, for a manager whose key is `ours`.
fn key_held(read: &CongestionKeyInfoRepr, ours: u64) -> KeyHeld {
    match (read.cc_key, read.protect) {
        (key, _) if key == ours => KeyHeld::Usable,
        (0, false) => KeyHeld::Usable,
        (0, true) => KeyHeld::Other(None),
        (key, _) => KeyHeld::Other(Some(key)),
    }
}

impl CongestionManager {
    pub fn new(options: CcOptions) -> CongestionManager {
        let scheduler = scheduler(&options);
        CongestionManager {
            data: options.data(),
            options,
            scheduler,
            ports: BTreeMap::new(),
            pass: None,
            drift: CcDrift::default(),
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

    /// The drift the read back found and repaired since the manager started.
    pub fn drift(&self) -> &CcDrift {
        &self.drift
    }

    /// Every stage of the programming done: each MAD answered or given up.
    pub fn is_idle(&self) -> bool {
        self.pass.is_none() && self.planned.is_empty() && self.scheduler.is_idle()
    }

    /// What happened since the last call, oldest first.
    pub fn take_notices(&mut self) -> Vec<CcNotice> {
        std::mem::take(&mut self.notices)
    }

    /// `osm_congestion_control_setup`: queues the Sets `ports` need, in OpenSM's port GUID
    /// order, with the Gets before and after them that `read_back` and `key_program` ask for.
    /// `force` sends every Set whatever the ports answered before (OpenSM's subnet
    /// `need_update`, on the first sweep).
    pub fn program(&mut self, ports: &[CcPort], force: bool) {
        if !self.options.enabled {
            return;
        }
        let mut ordered: Vec<CcPort> = ports
            .iter()
            .filter(|port| port.kind != CcNodeKind::Router)
            .copied()
            .collect();
        ordered.sort_by_key(|p| Guid(p.port_guid).opensm_order());
        self.pass = Some(Pass {
            ports: ordered,
            force,
            stage: Stage::ReadKey,
            left_alone: BTreeSet::new(),
            key_unread: BTreeSet::new(),
            set: Vec::new(),
            drifted: BTreeSet::new(),
        });
        self.plan_stage();
        self.advance();
    }

    /// Starts the next stage once the one under way has every answer, until one plans MADs or
    /// the programming ends.
    fn advance(&mut self) {
        while self.planned.is_empty() && self.scheduler.is_idle() {
            let Some(pass) = self.pass.as_mut() else {
                return;
            };
            match pass.stage.next() {
                Some(next) => {
                    pass.stage = next;
                    self.plan_stage();
                }
                None => self.pass = None,
            }
        }
    }

    /// The attributes a port of this kind is programmed with, in OpenSM's order.
    fn targets(&self, port: &CcPort) -> Vec<Target> {
        match port.kind {
            CcNodeKind::Switch => vec![Target::Switch],
            CcNodeKind::Ca => std::iter::once(Target::Ca)
                .chain((0..self.data.table.len() as u32).map(Target::Table))
                .collect(),
            CcNodeKind::Router => Vec::new(),
        }
    }

    /// Whether a port may be sent to: OpenSM's rules have not given up on its agent.
    fn usable(&self, port: &CcPort) -> bool {
        !self
            .ports
            .get(&port.port_guid)
            .is_some_and(|state| state.unavailable)
    }

    /// The MADs of the pass's stage.
    fn plan_stage(&mut self) {
        let Some(pass) = self.pass.take() else {
            return;
        };
        let usable: Vec<CcPort> = pass
            .ports
            .iter()
            .filter(|port| self.usable(port) && !pass.left_alone.contains(&port.port_guid))
            .copied()
            .collect();
        match pass.stage {
            Stage::ReadKey => {
                if self.options.key_program.is_some() {
                    for port in usable {
                        self.plan(port, Target::Key, Access::Read);
                    }
                }
            }
            Stage::Read => {
                if self.options.read_back && !pass.force {
                    for port in usable {
                        let state = self.ports.get(&port.port_guid).cloned().unwrap_or_default();
                        for target in self.targets(&port) {
                            if self.last_answer_is_wanted(&state, target) {
                                self.plan(port, target, Access::Read);
                            }
                        }
                    }
                }
            }
            Stage::Key => {
                if let Some(wanted) = self.options.key_program {
                    for port in usable {
                        let held = self.ports.get(&port.port_guid).and_then(|s| s.key);
                        let holds =
                            held.is_some_and(|held| key_is(&held, self.options.cc_key, wanted));
                        if !pass.key_unread.contains(&port.port_guid) && (pass.force || !holds) {
                            self.plan(port, Target::Key, Access::Set);
                        }
                    }
                }
            }
            Stage::Settings => {
                for port in usable {
                    let state = self.ports.get(&port.port_guid).cloned().unwrap_or_default();
                    for target in self.targets(&port) {
                        if pass.force || !self.last_answer_is_wanted(&state, target) {
                            self.plan(port, target, Access::Set);
                        }
                    }
                }
            }
            Stage::Verify => {
                if self.options.read_back {
                    for &(port, target) in &pass.set {
                        if self.usable(&port) {
                            self.plan(port, target, Access::Verify);
                        }
                    }
                }
            }
        }
        self.pass = Some(pass);
    }

    /// OpenSM's rule: whether a port's last answer for `target` is the data to send.
    fn last_answer_is_wanted(&self, state: &PortState, target: Target) -> bool {
        match target {
            Target::Switch => state.switch == Some(self.data.switch),
            Target::Ca => state.ca == Some(self.data.ca),
            Target::Table(block) => {
                let block = block as usize;
                state.table.get(block).copied().flatten() == self.data.table.get(block).copied()
            }
            Target::Key => false,
        }
    }

    /// The CongestionKeyInfo to Set.
    fn key_info(&self, wanted: KeyProgram) -> CongestionKeyInfoRepr {
        CongestionKeyInfoRepr {
            cc_key: self.options.cc_key,
            protect: wanted.protect,
            lease_period: wanted.lease_period,
            violations: 0,
        }
    }

    /// The attribute data a Set of `target` carries.
    fn set_data(&self, target: Target) -> Vec<u8> {
        match target {
            Target::Key => {
                let mut bytes = [0u8; 16];
                self.key_info(self.options.key_program.unwrap_or_default())
                    .emit(&mut CongestionKeyInfo::new_unchecked(&mut bytes[..]));
                bytes.to_vec()
            }
            Target::Switch => {
                let mut bytes = [0u8; 76];
                self.data
                    .switch
                    .emit(&mut SwitchCongestionSetting::new_unchecked(&mut bytes[..]));
                bytes.to_vec()
            }
            Target::Ca => {
                let mut bytes = [0u8; 132];
                self.data
                    .ca
                    .emit(&mut CaCongestionSetting::new_unchecked(&mut bytes[..]));
                bytes.to_vec()
            }
            Target::Table(block) => {
                let mut bytes = [0u8; 132];
                self.data.table[block as usize]
                    .emit(&mut CongestionControlTable::new_unchecked(&mut bytes[..]));
                bytes.to_vec()
            }
        }
    }

    /// The CC_Key a MAD to `port` carries: `cc_key`, but the key Set to a port that holds a key
    /// this SM programmed before carries that one, so that the agent takes the new key.
    fn carried_key(&self, port: &CcPort, target: Target, access: Access) -> u64 {
        let earlier = self
            .ports
            .get(&port.port_guid)
            .and_then(|state| state.key)
            .map(|key| key.cc_key)
            .filter(|&key| key != 0);
        match (target, access, earlier) {
            (Target::Key, Access::Set, Some(key)) => key,
            _ => self.options.cc_key,
        }
    }

    fn plan(&mut self, port: CcPort, target: Target, access: Access) {
        let method = match access {
            Access::Set => Method::Set,
            Access::Read | Access::Verify => Method::Get,
        };
        let key = self.carried_key(&port, target, access);
        let mut mad = cc_mad(method, target.attribute(), target.modifier(), key);
        if access == Access::Set {
            let data = self.set_data(target);
            mad.payload[DATA_IN_PAYLOAD..DATA_IN_PAYLOAD + data.len()].copy_from_slice(&data);
        }
        self.planned.push_back(Request {
            mad,
            dlid: Some(port.lid),
            node: port.node_guid,
            timeout: None,
            context: Op {
                port,
                target,
                access,
            },
        });
    }

    /// Hands planned MADs to the scheduler while the wire has room.
    fn feed(&mut self) {
        while self.scheduler.wants_work() {
            let Some(request) = self.planned.pop_front() else {
                return;
            };
            self.scheduler.submit(request);
        }
    }

    /// A request that ended without an answer (after its retries, or handed back).
    fn unanswered(&mut self, op: Op) {
        match op.access {
            Access::Set => {
                if op.target == Target::Key
                    && let Some(pass) = self.pass.as_mut()
                {
                    // Its other Sets carry the same key and would be dropped alike.
                    pass.left_alone.insert(op.port.port_guid);
                }
                self.set_unanswered(op);
            }
            Access::Read | Access::Verify => self.unread(op, None),
        }
    }

    /// `cc_mad_send_err_callback` for a timeout: counted; past the threshold the port is taken
    /// as having no agent. A MAD the fabric handed back counts as one: the kernel reports both
    /// as a timeout.
    fn set_unanswered(&mut self, op: Op) {
        let state = self.ports.entry(op.port.port_guid).or_default();
        if state.timeouts == 0 {
            self.notices.push(CcNotice::NoAnswer {
                attribute: op.target.attribute(),
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

    /// A Get without a usable answer: reported, and a key not read is not Set this time.
    fn unread(&mut self, op: Op, status: Option<Status>) {
        if op.target == Target::Key
            && let Some(pass) = self.pass.as_mut()
        {
            pass.key_unread.insert(op.port.port_guid);
        }
        self.notices.push(CcNotice::Unread {
            attribute: op.target.attribute(),
            node_guid: op.port.node_guid,
            port: op.port.port,
            status,
        });
    }

    /// `cc_rcv_mad`: the answer to a Set, with its real status.
    fn set_answered(&mut self, op: Op, status: Status, data: &[u8]) {
        let state = self.ports.entry(op.port.port_guid).or_default();
        state.timeouts = 0;
        if status != Status::OK {
            if op.target == Target::Key {
                self.notices.push(CcNotice::KeyRefused {
                    node_guid: op.port.node_guid,
                    port: op.port.port,
                    status,
                });
                return;
            }
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
        let kept = self.keep(op, data, true);
        if let Some(pass) = self.pass.as_mut() {
            pass.set.push((op.port, op.target));
            if pass.drifted.remove(&(op.port.port_guid, op.target)) && kept {
                *self
                    .drift
                    .repaired
                    .entry(op.target.attribute())
                    .or_default() += 1;
            }
        }
        if !kept {
            self.notices.push(CcNotice::NotKept {
                attribute: op.target.attribute(),
                node_guid: op.port.node_guid,
                port: op.port.port,
            });
        }
    }

    /// The answer to a Get: a port that does not hold what it was programmed with is reported,
    /// and what it holds kept so that OpenSM's rule Sets it again. Found before the Sets, it is
    /// drift.
    fn get_answered(&mut self, op: Op, status: Status, data: &[u8]) {
        if status != Status::OK {
            return self.unread(op, Some(status));
        }
        if op.target == Target::Key && op.access == Access::Read {
            return self.key_read(op, data);
        }
        if self.keep(op, data, false) {
            return;
        }
        if op.access == Access::Read
            && let Some(pass) = self.pass.as_mut()
        {
            pass.drifted.insert((op.port.port_guid, op.target));
            *self.drift.found.entry(op.target.attribute()).or_default() += 1;
        }
        self.notices.push(CcNotice::NotHeld {
            attribute: op.target.attribute(),
            node_guid: op.port.node_guid,
            port: op.port.port,
        });
    }

    /// The CongestionKeyInfo read first: whether the agent's key lets this SM's Sets in.
    fn key_read(&mut self, op: Op, data: &[u8]) {
        let Ok(read) = CongestionKeyInfoRepr::parse(&CongestionKeyInfo::new_unchecked(data)) else {
            return self.unread(op, None);
        };
        let cc_key = self.options.cc_key;
        let state = self.ports.entry(op.port.port_guid).or_default();
        // A key this SM programmed before `cc_key` changed, which the key Set carries (see
        // `carried_key`), unless the port shows another.
        let earlier = state
            .key
            .map(|key| key.cc_key)
            .filter(|&key| key != 0 && key != cc_key);
        match key_held(&read, cc_key) {
            KeyHeld::Usable => {
                state.key = Some(read);
                state.foreign_key = false;
            }
            KeyHeld::Other(held)
                if earlier.is_some() && held.is_none_or(|k| Some(k) == earlier) =>
            {
                state.foreign_key = false
            }
            KeyHeld::Other(held) => {
                if !state.foreign_key {
                    self.notices.push(CcNotice::ForeignKey {
                        node_guid: op.port.node_guid,
                        port: op.port.port,
                        held,
                    });
                }
                state.foreign_key = true;
                if let Some(pass) = self.pass.as_mut() {
                    pass.left_alone.insert(op.port.port_guid);
                }
            }
        }
    }

    /// Keeps the attribute in `data` as what `op`'s port holds: always for an echo (OpenSM
    /// caches it), for a Get only when it is not what was meant (else OpenSM's rule, on the
    /// echoes, decides). Whether it holds what was meant: the fields a Control_Map selected, a
    /// whole table block, the key and its protection.
    fn keep(&mut self, op: Op, data: &[u8], echo: bool) -> bool {
        let state = self.ports.entry(op.port.port_guid).or_default();
        match op.target {
            Target::Key => {
                let read = CongestionKeyInfoRepr::parse(&CongestionKeyInfo::new_unchecked(data));
                let wanted = self.options.key_program.unwrap_or_default();
                let held = read
                    .as_ref()
                    .is_ok_and(|read| key_is(read, self.options.cc_key, wanted));
                if echo || !held {
                    state.key = read.ok();
                }
                held
            }
            Target::Switch => {
                let read = SwitchCongestionSettingRepr::parse(
                    &SwitchCongestionSetting::new_unchecked(data),
                );
                let held = read
                    .as_ref()
                    .is_ok_and(|read| switch_kept(&self.data.switch, read));
                if echo || !held {
                    state.switch = read.ok();
                }
                held
            }
            Target::Ca => {
                let read =
                    CaCongestionSettingRepr::parse(&CaCongestionSetting::new_unchecked(data));
                let held = read.as_ref().is_ok_and(|read| ca_kept(&self.data.ca, read));
                if echo || !held {
                    state.ca = read.ok();
                }
                held
            }
            Target::Table(block) => {
                let read =
                    CongestionControlTableRepr::parse(&CongestionControlTable::new_unchecked(data));
                let index = block as usize;
                let held = read
                    .as_ref()
                    .is_ok_and(|read| self.data.table.get(index) == Some(read));
                if echo || !held {
                    if state.table.len() <= index {
                        state.table.resize(index + 1, None);
                    }
                    state.table[index] = read.ok();
                }
                held
            }
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

    /// An answer with its real status.
    fn answered(&mut self, op: Op, status: Status, response: &Gmp) {
        let data = &response.payload[DATA_IN_PAYLOAD..];
        match op.access {
            Access::Set => self.set_answered(op, status, data),
            Access::Read | Access::Verify => self.get_answered(op, status, data),
        }
    }

    fn settle(&mut self, completion: Completion<Op, Gmp>) {
        match completion {
            Completion::Answered { context, response } => {
                self.answered(context, Status::OK, &response)
            }
            // Timed out or handed back. Status answers never reach the scheduler as errors (see
            // `on_mad`), and a mismatched answer was retried like a lost one.
            Completion::Failed { context, .. } => self.unanswered(context),
        }
    }
}

impl Engine for CongestionManager {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.advance();
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
        self.advance();
    }

    fn on_dropped(&mut self, _now: Instant, mad: &[u8]) {
        self.on_cc_dropped(mad);
        self.advance();
    }

    fn on_time(&mut self, now: Instant) {
        self.on_cc_time(now);
        self.advance();
    }
}

#[cfg(test)]
mod tests;
