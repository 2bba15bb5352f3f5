//! A read-only look at what each congestion control agent of a surveyed fabric holds, as a
//! sans-IO [`Engine`]: a Get of SwitchCongestionSetting at each switch's port 0, and at each
//! CA port a Get of CACongestionSetting and of the CongestionControlTable blocks up to the
//! CCTI_Limit block 0 answers. Nothing is ever Set.
//!
//! A port whose every Get is answered with status 0 and a well-formed attribute gets its
//! [`CongestionDump`] in the fabric dump. Any other answer (an error status, none after the
//! retries, a malformed one) leaves the port's `congestion` absent and is kept as a
//! [`CcUnread`] saying why.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use ibqos_exchange::scheduler::{Completion, Request, Scheduler, SchedulerConfig, SchedulerStats};
use ibqos_exchange::{Engine, Gmp, OutgoingMad, Peer};
use ibqos_fabric::dump::{CaCongestionDump, CongestionDump, FabricDump, SwitchCongestionDump};
use ibqos_mad::{
    CaCongestionSetting, CaCongestionSettingRepr, CcAttributeId, CctEntry, CongestionControlTable,
    CongestionControlTableRepr, Guid, Method, Status, SwitchCongestionSetting,
    SwitchCongestionSettingRepr,
};

use crate::wire::{CcClient, DATA_IN_PAYLOAD, cc_mad};

/// Entries in one CongestionControlTable block.
const BLOCK_ENTRIES: usize = 64;

/// A CC agent to read: a switch's port 0 or a CA port, at its LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Target {
    node: u64,
    port: u8,
    lid: u16,
}

/// One Get in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    target: Target,
    attribute: CcAttributeId,
    block: u32,
}

/// What a port's agent answered so far.
#[derive(Debug, Default)]
struct PortRead {
    switch: Option<SwitchCongestionSettingRepr>,
    ca: Option<CaCongestionSettingRepr>,
    /// CCTI_Limit, from block 0's answer.
    ccti_limit: Option<u16>,
    /// The table's entries as the blocks came in.
    table: Vec<CctEntry>,
    /// A Get of this port got no usable answer: the port has no congestion section.
    failed: bool,
}

/// A Get that got no usable answer, so its port's congestion settings are not in the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcUnread {
    pub node_guid: u64,
    pub port: u8,
    pub attribute: CcAttributeId,
    pub block: u32,
    /// No answer, an error status or a malformed answer.
    pub reason: String,
}

impl fmt::Display for CcUnread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}]: {} (modifier {:#x}): {}",
            Guid(self.node_guid),
            self.port,
            self.attribute,
            self.block,
            self.reason
        )
    }
}

/// The read of every CC agent of one fabric dump.
#[derive(Debug)]
pub struct CongestionReader {
    scheduler: Scheduler<Op, Gmp>,
    ports: BTreeMap<Target, PortRead>,
    unread: Vec<CcUnread>,
}

impl CongestionReader {
    /// Gets for the agents of `dump`'s nodes: each switch's port 0 and each CA port that has a
    /// LID (routers are left out, as OpenSM programs none).
    pub fn start(dump: &FabricDump, config: SchedulerConfig) -> CongestionReader {
        let mut reader = CongestionReader {
            scheduler: Scheduler::new(config),
            ports: BTreeMap::new(),
            unread: Vec::new(),
        };
        for (key, node) in &dump.nodes {
            let Some(guid) = key
                .strip_prefix("0x")
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            else {
                continue;
            };
            let attribute = match node.kind.as_str() {
                "switch" => CcAttributeId::SwitchCongestionSetting,
                "ca" => CcAttributeId::CaCongestionSetting,
                _ => continue,
            };
            for (&number, port) in &node.ports {
                if port.lid == 0
                    || (attribute == CcAttributeId::SwitchCongestionSetting && number != 0)
                {
                    continue;
                }
                let target = Target {
                    node: guid,
                    port: number,
                    lid: port.lid,
                };
                reader.ports.insert(target, PortRead::default());
                reader.get(target, attribute, 0);
                if attribute == CcAttributeId::CaCongestionSetting {
                    reader.get(target, CcAttributeId::CongestionControlTable, 0);
                }
            }
        }
        reader
    }

    /// Every Get answered or given up.
    pub fn is_done(&self) -> bool {
        self.scheduler.is_idle()
    }

    pub fn stats(&self) -> &SchedulerStats {
        self.scheduler.stats()
    }

    /// The Gets given up, in the order they were.
    pub fn unread(&self) -> &[CcUnread] {
        &self.unread
    }

    /// Puts what each fully read agent holds into its port of `dump`.
    pub fn fill(&self, dump: &mut FabricDump) {
        for (target, read) in &self.ports {
            let Some(port) = dump
                .nodes
                .get_mut(&FabricDump::node_key(target.node))
                .and_then(|node| node.ports.get_mut(&target.port))
            else {
                continue;
            };
            port.congestion = read.dump();
        }
    }

    fn get(&mut self, target: Target, attribute: CcAttributeId, block: u32) {
        self.scheduler.submit(Request {
            mad: cc_mad(Method::Get, attribute, block, 0),
            dlid: Some(target.lid),
            node: target.node,
            timeout: None,
            context: Op {
                target,
                attribute,
                block,
            },
        });
    }

    fn give_up(&mut self, op: Op, reason: String) {
        if let Some(read) = self.ports.get_mut(&op.target) {
            read.failed = true;
        }
        self.unread.push(CcUnread {
            node_guid: op.target.node,
            port: op.target.port,
            attribute: op.attribute,
            block: op.block,
            reason,
        });
    }
}

impl PortRead {
    /// Keeps `block`'s entries; block 0 gives CCTI_Limit and so the blocks still to read.
    fn table_block(&mut self, block: u32, answer: &CongestionControlTableRepr) -> Vec<u32> {
        let first = block as usize * BLOCK_ENTRIES;
        if self.table.len() < first + BLOCK_ENTRIES {
            self.table
                .resize(first + BLOCK_ENTRIES, CctEntry::default());
        }
        self.table[first..first + BLOCK_ENTRIES].copy_from_slice(&answer.entries);
        if block != 0 {
            return Vec::new();
        }
        self.ccti_limit = Some(answer.ccti_limit);
        let blocks = u32::from(answer.ccti_limit) / BLOCK_ENTRIES as u32 + 1;
        (1..blocks).collect()
    }

    /// The port's section, when every Get of it was answered.
    fn dump(&self) -> Option<CongestionDump> {
        if self.failed {
            return None;
        }
        if let Some(switch) = &self.switch {
            return Some(CongestionDump::Switch(SwitchCongestionDump::new(switch)));
        }
        let limit = self.ccti_limit?;
        Some(CongestionDump::Ca(CaCongestionDump::new(
            self.ca.as_ref()?,
            limit,
            &self.table,
        )))
    }
}

impl CcClient for CongestionReader {
    type Op = Op;

    fn scheduler(&mut self) -> &mut Scheduler<Op, Gmp> {
        &mut self.scheduler
    }

    /// An answer with its real status.
    fn answered(&mut self, op: Op, status: Status, response: &Gmp) {
        if status != Status::OK {
            self.give_up(op, format!("answered status {:#06x}", status.0));
            return;
        }
        let data = &response.payload[DATA_IN_PAYLOAD..];
        let Some(read) = self.ports.get_mut(&op.target) else {
            return;
        };
        let more = match op.attribute {
            CcAttributeId::SwitchCongestionSetting => {
                SwitchCongestionSettingRepr::parse(&SwitchCongestionSetting::new_unchecked(data))
                    .map(|setting| {
                        read.switch = Some(setting);
                        Vec::new()
                    })
            }
            CcAttributeId::CaCongestionSetting => CaCongestionSettingRepr::parse(
                &CaCongestionSetting::new_unchecked(data),
            )
            .map(|setting| {
                read.ca = Some(setting);
                Vec::new()
            }),
            _ => CongestionControlTableRepr::parse(&CongestionControlTable::new_unchecked(data))
                .map(|block| read.table_block(op.block, &block)),
        };
        match more {
            Ok(blocks) => {
                for block in blocks {
                    self.get(op.target, CcAttributeId::CongestionControlTable, block);
                }
            }
            Err(error) => self.give_up(op, format!("malformed answer: {error}")),
        }
    }

    fn settle(&mut self, completion: Completion<Op, Gmp>) {
        match completion {
            Completion::Answered { context, response } => {
                self.answered(context, Status::OK, &response)
            }
            Completion::Failed {
                context, failure, ..
            } => self.give_up(context, failure.to_string()),
        }
    }
}

impl Engine for CongestionReader {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
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
mod tests {
    use std::time::Duration;

    use ibqos_exchange::Message;
    use ibqos_mad::{AttributeId, MgmtClass};

    use super::*;

    /// A dump of one CA port at LID 2, as a survey reads it.
    fn one_ca() -> FabricDump {
        FabricDump::from_json(
            r#"{"nodes":{"0x0002c90000000002":{"name":"H1","kind":"ca","ports":{"1":{
            "lid":2,"port_state":"Active","phys_state":"LinkUp","oper_vls":4,"neighbor_mtu":5,
            "vl_high_limit":0,"hoq_life":0,"vl_stall_count":0,"sl2vl":{},"vlarb_low":[],
            "vlarb_high":[]}}}}}"#,
        )
        .unwrap()
    }

    fn config() -> SchedulerConfig {
        SchedulerConfig {
            max_outstanding: 4,
            timeout: Duration::from_millis(200),
            retries: 1,
        }
    }

    /// Answers every Get the reader sends with `answer` applied to its echo, until it is done.
    fn read_with(dump: &mut FabricDump, answer: impl Fn(&mut Gmp)) -> CongestionReader {
        let mut reader = CongestionReader::start(dump, config());
        let mut now = Instant::now();
        while !reader.is_done() {
            while let Some(out) = reader.poll_transmit(now) {
                let mut response = Gmp::from_bytes(&out.mad).unwrap();
                assert_eq!(response.class, MgmtClass::CongestionControl);
                assert_eq!(response.method, Method::Get, "only Gets leave the reader");
                response.method = Method::GetResp;
                answer(&mut response);
                reader.on_mad(now, &response.to_bytes(), Peer::lid(2));
            }
            now += Duration::from_secs(1);
            reader.on_time(now);
        }
        reader.fill(dump);
        reader
    }

    #[test]
    fn a_table_past_one_block_is_read_up_to_its_ccti_limit() {
        let mut dump = one_ca();
        let reader = read_with(&mut dump, |response| {
            if response.attribute_id == AttributeId::from(0x0017) {
                // CCTI_Limit 100, and each entry its block's number.
                let data = &mut response.payload[DATA_IN_PAYLOAD..];
                data[..2].copy_from_slice(&100u16.to_be_bytes());
                let block = response.attribute_modifier as u8;
                for entry in data[4..132].chunks_mut(2) {
                    entry.copy_from_slice(&[0, block]);
                }
            }
        });
        assert_eq!(reader.unread(), []);
        assert_eq!(
            reader.stats().total_sent(),
            3,
            "the setting and blocks 0 and 1"
        );
        let port = &dump.nodes["0x0002c90000000002"].ports[&1];
        let Some(CongestionDump::Ca(ca)) = &port.congestion else {
            panic!("no CA section: {port:?}");
        };
        assert_eq!((ca.ccti_limit, ca.table.len()), (100, 101));
        assert_eq!((ca.table[63], ca.table[64], ca.table[100]), (0, 1, 1));
    }

    #[test]
    fn an_error_status_leaves_the_port_without_a_section() {
        let mut dump = one_ca();
        let reader = read_with(&mut dump, |response| {
            if response.attribute_id == AttributeId::from(0x0016) {
                response.status = Status::METHOD_ATTRIBUTE_UNSUPPORTED;
            }
        });
        let unread: Vec<String> = reader.unread().iter().map(ToString::to_string).collect();
        assert_eq!(
            unread,
            ["0x0002c90000000002[1]: CaCongestionSetting (modifier 0x0): answered status 0x000c"]
        );
        assert_eq!(dump.nodes["0x0002c90000000002"].ports[&1].congestion, None);
    }
}
