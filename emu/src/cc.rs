//! A congestion control agent (CCA, IBA annex A10.4) for every switch and every CA or router
//! port: it keeps what a congestion control manager Sets and answers Gets, as hardware does.
//!
//! - A switch's agent sits at its port 0 and holds SwitchCongestionSetting and one
//!   SwitchPortCongestionSetting element per port; a CA's agent sits at each of its ports and
//!   holds CACongestionSetting and a congestion control table of [`CONTROL_TABLE_CAP`] blocks.
//!   Both hold CongestionKeyInfo and answer CongestionInfo, CongestionLog (empty until traffic
//!   marks packets) and TimeStamp (the emulated time in 1.024 us units).
//! - A Set changes what its Control_Map selects: the switch's fields by their bits, a CA's
//!   SLs by theirs (Port_Control always). The answer is the attribute as it then is, with the
//!   Control_Map of the last Set. The Linux qib driver takes every CA entry whatever the map;
//!   this agent follows the annex.
//! - A congestion control table Set writes the 64 entries of the block its modifier names and
//!   CCTI_Limit, which must index the table (else status 0x001C).
//! - Status 0x0004 for a class version other than 2, 0x0008 for a method other than Get and
//!   Set, 0x000C for an attribute this kind of node has not or a Set of a read-only one, 0x001C
//!   for a block beyond the ports or the table.
//!
//! CC_Key (A10.4.1): a CCA whose key is 0 checks nothing. Otherwise a Set without the key is a
//! violation: dropped unanswered, counted in CC_KeyViolations (up to 0xFFFF), and it starts a
//! lease of CC_KeyLeasePeriod seconds unless one runs or the period is 0. A Get without the key
//! is answered, but with CC_KeyProtectBit set it reads the key as 0. A MAD with the key ends the
//! lease; a lease that runs out clears the protect bit. Leases are checked when a MAD arrives or
//! the agent is read, against the emulated time. No CC_Key violation trap is sent.

use std::collections::{BTreeMap, BTreeSet};

use ibqos_fabric::dump::{CaCongestionDump, CongestionDump, SwitchCongestionDump};
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_mad::{
    CC_CLASS_VERSION, CaCongestionLog, CaCongestionSetting, CaCongestionSettingRepr, CcAttributeId,
    CcMad, CctEntry, CongestionControlTable, CongestionControlTableRepr, CongestionInfo,
    CongestionInfoRepr, CongestionKeyInfo, CongestionKeyInfoRepr, LOG_TYPE_CA, LOG_TYPE_SWITCH,
    Method, Status, SwitchCongestionLog, SwitchCongestionSetting, SwitchCongestionSettingRepr,
    SwitchControlMap, SwitchPortCongestionElement, SwitchPortCongestionSetting, TimeStamp,
    TimeStampRepr,
};

/// Blocks of 64 entries in an emulated CA's congestion control table (ControlTableCap), as the
/// Linux qib driver keeps.
pub const CONTROL_TABLE_CAP: u8 = 31;

/// Entries of an emulated CA's congestion control table.
const CCT_ENTRIES: usize = CONTROL_TABLE_CAP as usize * 64;

/// Bytes of log data before a CC MAD's attribute data.
const LOG_DATA_LEN: usize = 32;

/// Ports in one SwitchPortCongestionSetting block.
const PORTS_PER_BLOCK: usize = 32;

const NS_PER_S: u64 = 1_000_000_000;

/// The emulated time in the agents' TimeStamp units, 1.024 us, wrapping at 32 bits.
fn timestamp(now_ns: u64) -> u32 {
    (now_ns / 1024) as u32
}

/// What one agent holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CongestionAgent {
    /// CongestionKeyInfo.
    pub key: CongestionKeyInfoRepr,
    /// When the running lease ends, in emulated ns.
    pub lease_end_ns: Option<u64>,
    pub settings: CongestionSettings,
}

/// A switch's settings or a CA port's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CongestionSettings {
    Switch(SwitchCongestion),
    Ca(CaCongestion),
}

/// A switch agent's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchCongestion {
    pub setting: SwitchCongestionSettingRepr,
    /// By port number, port 0 first.
    pub ports: Vec<SwitchPortCongestionElement>,
}

/// A CA port agent's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaCongestion {
    pub setting: CaCongestionSettingRepr,
    /// CCTI_Limit: the table's last index in use.
    pub ccti_limit: u16,
    /// The congestion control table, [`CONTROL_TABLE_CAP`] blocks of 64 entries.
    pub table: Vec<CctEntry>,
}

impl CongestionAgent {
    /// An agent at power-on: every setting 0, no key.
    fn new(switch_ports: Option<usize>) -> CongestionAgent {
        let settings = match switch_ports {
            Some(ports) => CongestionSettings::Switch(SwitchCongestion {
                setting: SwitchCongestionSettingRepr::default(),
                ports: vec![SwitchPortCongestionElement::default(); ports],
            }),
            None => CongestionSettings::Ca(CaCongestion {
                setting: CaCongestionSettingRepr::default(),
                ccti_limit: 0,
                table: vec![CctEntry::default(); CCT_ENTRIES],
            }),
        };
        CongestionAgent {
            key: CongestionKeyInfoRepr {
                cc_key: 0,
                protect: false,
                lease_period: 0,
                violations: 0,
            },
            lease_end_ns: None,
            settings,
        }
    }

    /// Ends the lease if it has run out by `now_ns`, clearing the protect bit.
    fn expire_lease(&mut self, now_ns: u64) {
        if self.lease_end_ns.is_some_and(|end| end <= now_ns) {
            self.lease_end_ns = None;
            self.key.protect = false;
        }
    }

    /// Whether a MAD carrying `cc_key` passes (see the module's comment); counts a violation
    /// and starts the lease when it does not. A Get always passes.
    fn check_key(&mut self, cc_key: u64, set: bool, now_ns: u64) -> Check {
        self.expire_lease(now_ns);
        if self.key.cc_key == 0 || cc_key == self.key.cc_key {
            self.lease_end_ns = None;
            return Check::Passed { key_hidden: false };
        }
        if !set {
            return Check::Passed {
                key_hidden: self.key.protect,
            };
        }
        self.key.violations = self.key.violations.saturating_add(1);
        if self.lease_end_ns.is_none() && self.key.lease_period != 0 {
            let period = u64::from(self.key.lease_period) * NS_PER_S;
            self.lease_end_ns = Some(now_ns.saturating_add(period));
        }
        Check::Violation
    }
}

/// The outcome of a CC_Key check.
enum Check {
    Passed { key_hidden: bool },
    Violation,
}

/// Every agent of the fabric that a MAD has reached, made at power-on state when first reached.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ccas {
    agents: BTreeMap<PortRef, CongestionAgent>,
    /// Nodes without an agent (the fault schedule's `[[without_cc]]`).
    without: BTreeSet<NodeId>,
}

/// Where `port`'s agent sits (a switch's port 0), and the switch's port count (ports 0..=N) or
/// `None` for a CA or router port; `None` for a port the topology does not have.
fn agent_of(topology: &Topology, port: PortRef) -> Option<(PortRef, Option<usize>)> {
    let node = topology.node(port.node)?;
    if node.is_switch() {
        let at = PortRef {
            node: port.node,
            port: 0,
        };
        return Some((at, Some(usize::from(node.num_ports()) + 1)));
    }
    topology.port(port)?;
    Some((port, None))
}

impl Ccas {
    /// `nodes` have no agent from now on: every CC MAD they get is answered with status
    /// 0x0008, the data as it came, as ibsim's switches answer a SwitchCongestionSetting Set.
    pub(crate) fn remove_agents(&mut self, nodes: &[NodeId]) {
        self.without.extend(nodes);
        self.agents
            .retain(|port, _| !self.without.contains(&port.node));
    }

    /// What the agent of `port` holds at `now_ns` (a switch's, for any of its ports); `None` for
    /// a port the topology does not have, or of a node without an agent.
    pub(crate) fn agent(
        &self,
        topology: &Topology,
        port: PortRef,
        now_ns: u64,
    ) -> Option<CongestionAgent> {
        if self.without.contains(&port.node) {
            return None;
        }
        let (at, switch_ports) = agent_of(topology, port)?;
        let mut agent = self
            .agents
            .get(&at)
            .cloned()
            .unwrap_or_else(|| CongestionAgent::new(switch_ports));
        agent.expire_lease(now_ns);
        Some(agent)
    }

    /// What the agent at `port` holds, for a fabric dump: only an agent a MAD has reached (an
    /// untouched one holds its power-on state), and only at the port it sits at.
    pub(crate) fn dump(&self, port: PortRef) -> Option<CongestionDump> {
        let agent = self.agents.get(&port)?;
        Some(match &agent.settings {
            CongestionSettings::Switch(switch) => {
                CongestionDump::Switch(SwitchCongestionDump::new(&switch.setting))
            }
            CongestionSettings::Ca(ca) => {
                CongestionDump::Ca(CaCongestionDump::new(&ca.setting, ca.ccti_limit, &ca.table))
            }
        })
    }

    /// What the agent that answers for `port` holds (a switch's at its port 0), as [`Ccas::dump`]
    /// gives it: to tell whether a MAD changed it.
    pub(crate) fn held_for(&self, topology: &Topology, port: PortRef) -> Option<CongestionDump> {
        self.dump(agent_of(topology, port)?.0)
    }

    fn agent_mut(&mut self, topology: &Topology, port: PortRef) -> Option<&mut CongestionAgent> {
        let (at, switch_ports) = agent_of(topology, port)?;
        Some(
            self.agents
                .entry(at)
                .or_insert_with(|| CongestionAgent::new(switch_ports)),
        )
    }

    /// The agent at `at` answers `request`, a CC request whose header the caller checked
    /// (BaseVersion 1, class 0x21, a request method): the response MAD, or `None` when a CC_Key
    /// violation drops it. On an error status the data goes back as it came.
    pub(crate) fn respond(
        &mut self,
        topology: &Topology,
        at: PortRef,
        request: CcMad<&[u8]>,
        now_ns: u64,
    ) -> Option<Vec<u8>> {
        let header = request.header();
        let (class_version, method) = (header.class_version(), header.method());
        let attribute = CcAttributeId::from(u16::from(header.attribute_id()));
        let modifier = header.attribute_modifier();
        let cc_key = request.cc_key();
        let mut response = request.into_inner().to_vec();
        let mut mad = CcMad::new_unchecked(&mut response[..]);
        if self.without.contains(&at.node) {
            let mut out = mad.header_mut();
            out.set_method(Method::GetResp);
            out.set_status(Status::METHOD_UNSUPPORTED);
            return Some(response);
        }
        let agent = self.agent_mut(topology, at)?;
        let set = method == Method::Set;
        let outcome = match (class_version, method) {
            (CC_CLASS_VERSION, Method::Get | Method::Set) => {
                match agent.check_key(cc_key, set, now_ns) {
                    Check::Violation => return None,
                    Check::Passed { key_hidden } => {
                        let answer = Answer {
                            attribute,
                            modifier,
                            set,
                            key_hidden,
                            now_ns,
                        };
                        answer.apply(agent, mad.log_and_data_mut())
                    }
                }
            }
            (CC_CLASS_VERSION, _) => Err(Status::METHOD_UNSUPPORTED),
            _ => Err(Status::BAD_VERSION),
        };
        let mut out = mad.header_mut();
        out.set_method(Method::GetResp);
        out.set_status(outcome.err().unwrap_or(Status::OK));
        Some(response)
    }
}

/// One Get or Set an agent answers.
struct Answer {
    attribute: CcAttributeId,
    modifier: u32,
    set: bool,
    key_hidden: bool,
    now_ns: u64,
}

impl Answer {
    /// Does the Get or Set in place: `area` is the MAD's log and attribute data (224 bytes), the
    /// attribute data starting 32 bytes in.
    fn apply(&self, agent: &mut CongestionAgent, area: &mut [u8]) -> Result<(), Status> {
        if self.attribute == CcAttributeId::CongestionLog {
            self.read_only()?;
            area.fill(0);
            let stamp = timestamp(self.now_ns);
            match agent.settings {
                CongestionSettings::Switch(_) => {
                    let mut view = SwitchCongestionLog::new_unchecked(area);
                    view.set_log_type(LOG_TYPE_SWITCH);
                    view.set_current_time_stamp(stamp);
                }
                CongestionSettings::Ca(_) => {
                    let mut view = CaCongestionLog::new_unchecked(area);
                    view.set_log_type(LOG_TYPE_CA);
                    view.set_current_time_stamp(stamp);
                }
            }
            return Ok(());
        }
        let data = &mut area[LOG_DATA_LEN..];
        match (self.attribute, &mut agent.settings) {
            (CcAttributeId::CongestionInfo, settings) => {
                self.read_only()?;
                let control_table_cap = match settings {
                    CongestionSettings::Switch(_) => 0,
                    CongestionSettings::Ca(_) => CONTROL_TABLE_CAP,
                };
                let info = CongestionInfoRepr {
                    congestion_info: 0,
                    control_table_cap,
                };
                info.emit(&mut CongestionInfo::new_unchecked(data));
            }
            (CcAttributeId::CongestionKeyInfo, _) => {
                let view = CongestionKeyInfo::new_unchecked(&*data);
                if self.set {
                    let key =
                        CongestionKeyInfoRepr::parse(&view).map_err(|_| Status::INVALID_VALUE)?;
                    agent.key = key;
                    agent.lease_end_ns = None;
                }
                let mut shown = agent.key;
                if self.key_hidden {
                    shown.cc_key = 0;
                }
                shown.emit(&mut CongestionKeyInfo::new_unchecked(data));
            }
            (CcAttributeId::SwitchCongestionSetting, CongestionSettings::Switch(switch)) => {
                self.whole_attribute()?;
                if self.set {
                    let view = SwitchCongestionSetting::new_unchecked(&*data);
                    let sent = SwitchCongestionSettingRepr::parse(&view)
                        .map_err(|_| Status::INVALID_VALUE)?;
                    switch.setting = merge_switch(switch.setting, &sent);
                }
                switch
                    .setting
                    .emit(&mut SwitchCongestionSetting::new_unchecked(data));
            }
            (CcAttributeId::SwitchPortCongestionSetting, CongestionSettings::Switch(switch)) => {
                let first = usize::try_from(self.modifier)
                    .ok()
                    .and_then(|block| block.checked_mul(PORTS_PER_BLOCK))
                    .filter(|&first| first < switch.ports.len())
                    .ok_or(Status::INVALID_VALUE)?;
                let ports = &mut switch.ports[first..];
                let view = SwitchPortCongestionSetting::new_unchecked(&*data);
                if self.set {
                    for (i, port) in ports.iter_mut().take(PORTS_PER_BLOCK).enumerate() {
                        *port = SwitchPortCongestionElement::read(&view, i);
                    }
                }
                let mut block = SwitchPortCongestionSetting::new_unchecked(&mut *data);
                block.clear();
                for (i, port) in ports.iter().take(PORTS_PER_BLOCK).enumerate() {
                    port.write(&mut block, i);
                }
            }
            (CcAttributeId::CaCongestionSetting, CongestionSettings::Ca(ca)) => {
                self.whole_attribute()?;
                if self.set {
                    let view = CaCongestionSetting::new_unchecked(&*data);
                    let sent =
                        CaCongestionSettingRepr::parse(&view).map_err(|_| Status::INVALID_VALUE)?;
                    ca.setting = merge_ca(ca.setting, &sent);
                }
                ca.setting
                    .emit(&mut CaCongestionSetting::new_unchecked(data));
            }
            (CcAttributeId::CongestionControlTable, CongestionSettings::Ca(ca)) => {
                let first = usize::try_from(self.modifier)
                    .ok()
                    .and_then(|block| block.checked_mul(64))
                    .filter(|&first| first < ca.table.len())
                    .ok_or(Status::INVALID_VALUE)?;
                if self.set {
                    let view = CongestionControlTable::new_unchecked(&*data);
                    let sent = CongestionControlTableRepr::parse(&view)
                        .map_err(|_| Status::INVALID_VALUE)?;
                    if usize::from(sent.ccti_limit) >= ca.table.len() {
                        return Err(Status::INVALID_VALUE);
                    }
                    ca.ccti_limit = sent.ccti_limit;
                    ca.table[first..first + 64].copy_from_slice(&sent.entries);
                }
                let block = CongestionControlTableRepr {
                    ccti_limit: ca.ccti_limit,
                    entries: std::array::from_fn(|i| ca.table[first + i]),
                };
                block.emit(&mut CongestionControlTable::new_unchecked(data));
            }
            (CcAttributeId::TimeStamp, _) => {
                self.read_only()?;
                let stamp = TimeStampRepr {
                    timestamp: timestamp(self.now_ns),
                };
                stamp.emit(&mut TimeStamp::new_unchecked(data));
            }
            _ => return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED),
        }
        Ok(())
    }

    /// A Set of a read-only attribute is a method the attribute does not take.
    fn read_only(&self) -> Result<(), Status> {
        if self.set {
            return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED);
        }
        Ok(())
    }

    /// An attribute that is one block takes modifier 0 only.
    fn whole_attribute(&self) -> Result<(), Status> {
        if self.modifier != 0 {
            return Err(Status::INVALID_VALUE);
        }
        Ok(())
    }
}

/// `held` with the fields `sent`'s Control_Map selects taken from `sent`, and that map.
fn merge_switch(
    held: SwitchCongestionSettingRepr,
    sent: &SwitchCongestionSettingRepr,
) -> SwitchCongestionSettingRepr {
    let map = sent.control_map;
    let mut merged = SwitchCongestionSettingRepr {
        control_map: map,
        ..held
    };
    if map.contains(SwitchControlMap::VICTIM_MASK) {
        merged.victim_mask = sent.victim_mask;
    }
    if map.contains(SwitchControlMap::CREDIT_MASK) {
        merged.credit_mask = sent.credit_mask;
    }
    if map.contains(SwitchControlMap::THRESHOLD) {
        merged.threshold = sent.threshold;
        merged.packet_size = sent.packet_size;
    }
    if map.contains(SwitchControlMap::CREDIT_STARVATION) {
        merged.cs_threshold = sent.cs_threshold;
        merged.cs_return_delay = sent.cs_return_delay;
    }
    if map.contains(SwitchControlMap::MARKING_RATE) {
        merged.marking_rate = sent.marking_rate;
    }
    merged
}

/// `held` with `sent`'s Port_Control and Control_Map, and the SL entries that map selects.
fn merge_ca(
    held: CaCongestionSettingRepr,
    sent: &CaCongestionSettingRepr,
) -> CaCongestionSettingRepr {
    let mut merged = CaCongestionSettingRepr {
        port_control: sent.port_control,
        control_map: sent.control_map,
        ..held
    };
    for (sl, entry) in merged.entries.iter_mut().enumerate() {
        if sent.control_map & (1 << sl) != 0 {
            *entry = sent.entries[sl];
        }
    }
    merged
}
