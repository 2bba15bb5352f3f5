//! What the simulator is given: nodes with ports, links, each port's arbitration tables, each
//! node's SL-to-VL tables and each switch's forwarding table. Neutral on purpose: the engine
//! knows nothing of how a topology was described or routed (the `fabric` crate sits above this
//! one), so `ibqos sim` builds this from a net file, the planner and minhop.

use std::sync::Arc;

use ibqos_qos::Sl2VlTable;
use ibqos_qos::{Sl, VlArbEntry, VlCount};

use crate::ethernet::dcqcn::{DcqcnConfig, EcnConfig};
use crate::ethernet::ets::EtsConfig;
use crate::ethernet::host_qos::HostQos;
use crate::ethernet::pfc::{PauseStormConfig, PfcConfig};
use crate::ethernet::shared_buffer::BufferConfig;
use crate::infiniband::cc::CcParams;
use crate::infiniband::link::LinkParams;

/// A host (channel adapter) or a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Sources and sinks of traffic; a packet arriving at a host is delivered there.
    Host,
    /// Forwards by its linear forwarding table.
    Switch,
}

/// A port of a node: (node index, port number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortAddr {
    pub node: usize,
    pub port: u8,
}

/// The arbitration a port applies to what it sends: the tables as programmed (as many entries as
/// its caps), PortInfo.VLHighLimit, and the data VLs it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortArbitration {
    pub high: Vec<VlArbEntry>,
    pub low: Vec<VlArbEntry>,
    pub high_limit: u8,
    /// PortInfo.OperationalVLs: the port runs VL0 up to one below this count (and VL15).
    pub oper_vls: VlCount,
}

/// No tables, and every data VL: a port that restricts nothing until told otherwise.
impl Default for PortArbitration {
    fn default() -> PortArbitration {
        PortArbitration {
            high: Vec::new(),
            low: Vec::new(),
            high_limit: 0,
            oper_vls: VlCount::Fifteen,
        }
    }
}

/// [`Node`]'s external pairs use more than one SL-to-VL table.
const MIXED: u32 = u32::MAX;

/// Whether the pair from `input` to `output` joins two external ports (1 to N, not a switch's
/// port 0).
fn is_external(input: u8, output: u8) -> bool {
    input > 0 && output > 0
}

/// The pairs of external ports of a node of `num_ports` (both ways, at most 255 x 255).
fn external_pair_count(num_ports: u8) -> u32 {
    u32::from(num_ports) * u32::from(num_ports)
}

/// One node.
#[derive(Debug, Clone)]
pub struct Node {
    /// As the topology names it; reports name ports `NAME[PORT]`.
    pub name: String,
    pub kind: NodeKind,
    /// Ports 0..=N. Port 0 of a switch is its management port, which the simulator does not
    /// send from.
    pub num_ports: u8,
    /// Per port (index = port number): the LID a host port answers (0 on switches).
    pub lids: Vec<u16>,
    /// Per port (index = port number): its VL arbitration.
    pub arbitration: Vec<PortArbitration>,
    /// The SL-to-VL table of each (input port, output port), `input * (num_ports + 1) +
    /// output`, as an index into `sl2vl_tables`. A switch has one per pair (IBA 7.6.6); a host
    /// uses input 0 for what it sends. A node holds few distinct tables, so a 128-port switch's
    /// 16,641 pairs take 66 KB instead of 266 KB.
    sl2vl_pairs: Vec<u32>,
    /// The distinct tables of `sl2vl_pairs`.
    sl2vl_tables: Vec<Sl2VlTable>,
    /// Per table of `sl2vl_tables`, the pairs of external ports (1 to N, both) that use it.
    external_pairs: Vec<u32>,
    /// The table every pair of external ports uses, [`MIXED`] when they differ: what a switch
    /// forwards by, found without reading `sl2vl_pairs` (a 128-port switch's are 66 KB, and a
    /// forwarded packet's pair a cache miss in them).
    external_table: u32,
    /// A switch's linear forwarding table: output port by destination LID; `0xFF` or a LID
    /// beyond the table means no route. Empty on hosts.
    pub lft: Vec<u8>,
}

impl Node {
    /// A node whose ports all use `arbitration` and whose SL-to-VL tables are all `sl2vl`; the
    /// caller then sets what differs.
    pub fn new(
        name: impl Into<String>,
        kind: NodeKind,
        num_ports: u8,
        arbitration: PortArbitration,
        sl2vl: Sl2VlTable,
    ) -> Node {
        let ports = usize::from(num_ports) + 1;
        Node {
            name: name.into(),
            kind,
            num_ports,
            lids: vec![0; ports],
            arbitration: vec![arbitration; ports],
            sl2vl_pairs: vec![0; ports * ports],
            sl2vl_tables: vec![sl2vl],
            external_pairs: vec![external_pair_count(num_ports)],
            external_table: 0,
            lft: Vec::new(),
        }
    }

    fn pair(&self, input: u8, output: u8) -> usize {
        usize::from(input) * (usize::from(self.num_ports) + 1) + usize::from(output)
    }

    /// The SL-to-VL table for packets from `input` to `output`.
    pub fn sl2vl(&self, input: u8, output: u8) -> &Sl2VlTable {
        let id = if is_external(input, output) && self.external_table != MIXED {
            self.external_table
        } else {
            self.sl2vl_pairs[self.pair(input, output)]
        };
        &self.sl2vl_tables[id as usize]
    }

    pub fn set_sl2vl(&mut self, input: u8, output: u8, table: Sl2VlTable) {
        let at = self.pair(input, output);
        let id = match self.sl2vl_tables.iter().position(|t| *t == table) {
            Some(id) => id,
            None => {
                self.sl2vl_tables.push(table);
                self.external_pairs.push(0);
                self.sl2vl_tables.len() - 1
            }
        };
        // At most one table per pair, and pairs number far below 2^32.
        let (id, old) = (id as u32, self.sl2vl_pairs[at]);
        self.sl2vl_pairs[at] = id;
        if is_external(input, output) && id != old {
            self.external_pairs[old as usize] -= 1;
            self.external_pairs[id as usize] += 1;
            let all = external_pair_count(self.num_ports);
            self.external_table = if self.external_pairs[id as usize] == all {
                id
            } else {
                MIXED
            };
        }
    }

    /// The output port for `dlid`, `None` when the table has no route.
    pub fn route(&self, dlid: u16) -> Option<u8> {
        self.lft
            .get(usize::from(dlid))
            .copied()
            .filter(|&p| p != 0xFF && p != 0 && p <= self.num_ports)
    }
}

/// A link between two ports.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub a: PortAddr,
    pub b: PortAddr,
    pub params: LinkParams,
}

/// The fabric as the simulator sees it.
#[derive(Debug, Clone, Default)]
pub struct Network {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// `Some`: every link is lossless Ethernet (PFC) with these settings, and the nodes' SL-to-VL
    /// and VL arbitration tables are not used; `None`: InfiniBand credit flow control.
    pub ethernet: Option<Ethernet>,
    /// `Some`: InfiniBand congestion control (IBA annex A10) at every switch port and host,
    /// with these settings; `None`: off.
    pub congestion_control: Option<CcParams>,
}

/// A lossless-Ethernet fabric's settings: one of each for every port, switch and host alike
/// (the buffer for every switch, the host QoS for every host).
#[derive(Debug, Clone, PartialEq)]
pub struct Ethernet {
    /// Every link's rate in bits per second.
    pub link_bps: u64,
    pub pfc: PfcConfig,
    pub buffer: BufferConfig,
    pub ets: EtsConfig,
    pub host: HostQos,
    pub storms: Vec<Storm>,
    /// DCQCN at every host (its notification and reaction points), if on.
    pub dcqcn: Option<DcqcnConfig>,
    /// ECN marking at every switch egress queue, if on.
    pub ecn: Option<EcnConfig>,
}

/// A host port that keeps priorities paused ([`crate::pfc::PauseStorm`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Storm {
    pub port: PortAddr,
    pub config: PauseStormConfig,
}

/// One traffic flow, resolved to ports and LIDs. Its names are shared, not copied, by the
/// reports that name it (and the destination's by every flow to that host): a run of hundreds
/// of thousands of flows names a few hundred hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub name: Arc<str>,
    /// The host port it leaves from.
    pub src: PortAddr,
    /// The destination LID.
    pub dlid: u16,
    /// The destination's name, for reports.
    pub dst_name: Arc<str>,
    /// The SL; on an Ethernet run, the priority (0-7) the source host gives the flow.
    pub sl: Sl,
    /// Payload bytes per packet, 1..=4096.
    pub payload: u32,
    /// Offered payload rate in bits per second; 0 = as fast as the fabric allows.
    pub rate_bps: u64,
    pub start_ps: u64,
    pub stop_ps: u64,
    /// Management traffic (SMPs): on VL15 at every hop, outranking the data VLs and without
    /// flow control; its SL is not used.
    pub management: bool,
}

/// Why a network cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error("link {index} names node {node}, but there are {nodes} nodes")]
    NoSuchNode {
        index: usize,
        node: usize,
        nodes: usize,
    },
    #[error("link {index} names port {port} of {name}, which has {num_ports} ports")]
    NoSuchPort {
        index: usize,
        name: String,
        port: u8,
        num_ports: u8,
    },
    #[error("{name}[{port}] is linked twice")]
    LinkedTwice { name: String, port: u8 },
    #[error(
        "the links have more than 65,536 different sets of parameters (speed, width, propagation, buffer, credit latency): the simulator takes 65,536 at most"
    )]
    TooManyLinkKinds,
    #[error(
        "a lossless-Ethernet run takes one thread: its pause frames and DCQCN are not split over threads"
    )]
    SplitEthernet,
    #[error("a run with congestion control takes one thread: its BECNs are not split over threads")]
    SplitCongestionControl,
    #[error(
        "InfiniBand congestion control runs on credit links: a lossless-Ethernet run has DCQCN"
    )]
    CongestionControlOnEthernet,
    #[error(
        "a run over several threads needs links whose packets and credits take time to cross (propagation, credit latency): here one takes none; run on one thread"
    )]
    NoLookahead,
    #[error("a run takes at most 255 partitions (threads times processes): {partitions} asked")]
    TooManyPartitions { partitions: usize },
    #[error(
        "process {rank} of the run was started on other inputs or options than process 0 (its fabric, flows, duration, seed or threads differ): every process must run the same command"
    )]
    RanksDisagree { rank: usize },
    #[error("node {name} does not have the per-port tables its {num_ports} ports need")]
    BadTables { name: String, num_ports: u8 },
    #[error(
        "flow {flow}: a {payload}-byte packet needs {needed} credits, but receive buffers hold {buffer} per VL: it could never be sent"
    )]
    BufferTooSmall {
        flow: String,
        payload: u32,
        needed: u32,
        buffer: u32,
    },
    #[error("flow {flow} leaves from {port}, which is not a linked host port")]
    BadSource { flow: String, port: String },
    #[error("flow {flow}: management traffic (VL15) is InfiniBand's; an Ethernet run has none")]
    ManagementOnEthernet { flow: String },
    #[error("pause storm at {port}: {reason}")]
    BadStorm { port: String, reason: String },
    #[error("Ethernet settings: {0}")]
    BadEthernet(String),
    #[error("per-port counters are InfiniBand's: an Ethernet run has no PMA to sample")]
    SampledEthernet,
}

/// One port of the network, as the engine indexes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortSlot {
    pub(crate) node: u32,
    pub(crate) num: u8,
    /// The port at the other end of the link, `None` for an unlinked port.
    pub(crate) peer: Option<u32>,
    pub(crate) link: LinkParams,
    /// The data VLs the link runs: VL0 up to one below this, the lower OperVLs of its ends.
    pub(crate) vls: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_qos::Vl;
    use proptest::prelude::*;

    /// The SL-to-VL table whose every SL is on `vl`.
    fn table(vl: u8) -> Sl2VlTable {
        Sl2VlTable([Vl::from_nibble(vl); 16])
    }

    /// The shortcut follows the external pairs: one table for all of them, then one pair
    /// apart, then all on one again (pairs with port 0 left as they were).
    #[test]
    fn external_pairs_on_one_table_are_found_by_the_shortcut() {
        let mut node = Node::new(
            "S",
            NodeKind::Switch,
            2,
            PortArbitration::default(),
            table(0),
        );
        assert_eq!(node.external_table, 0);
        for (i, o) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
            node.set_sl2vl(i, o, table(5));
        }
        assert_eq!(
            node.external_table, 1,
            "every external pair on table 1 (VL5)"
        );
        assert_eq!(*node.sl2vl(2, 1), table(5));
        assert_eq!(*node.sl2vl(0, 1), table(0));
        node.set_sl2vl(1, 2, table(6));
        assert_eq!(node.external_table, MIXED);
        assert_eq!(*node.sl2vl(1, 2), table(6));
        assert_eq!(*node.sl2vl(2, 2), table(5));
        node.set_sl2vl(1, 2, table(5));
        assert_eq!(node.external_table, 1);
        assert_eq!(*node.sl2vl(1, 2), table(5));
    }

    proptest! {
        /// Whatever pairs are set to whatever tables, in any order, every pair's lookup gives
        /// the table last set for it (the node's shortcut for external pairs that all share
        /// one table included).
        #[test]
        fn a_pair_gives_the_table_last_set_for_it(
            sets in proptest::collection::vec((0u8..=2, 0u8..=2, 0u8..2), 0..60),
        ) {
            let mut node = Node::new("S", NodeKind::Switch, 2, PortArbitration::default(), table(0));
            let mut model = [[0u8; 3]; 3];
            for (input, output, vl) in sets {
                node.set_sl2vl(input, output, table(vl));
                model[usize::from(input)][usize::from(output)] = vl;
                for i in 0..=2u8 {
                    for o in 0..=2u8 {
                        let want = table(model[usize::from(i)][usize::from(o)]);
                        prop_assert_eq!(*node.sl2vl(i, o), want, "pair ({}, {})", i, o);
                    }
                }
            }
        }
    }
}
