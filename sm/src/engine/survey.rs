//! A read-only survey of a fabric: discovery as a heavy sweep does it, then every port's SL2VL
//! and VLArb tables and every switch's LFT, by SubnGet alone. No Set ever leaves it, so it reads a fabric whatever SM
//! programmed it (`ibqos dump`), into the [`FabricDump`] an emulated fabric writes of itself.
//!
//! Which tables a port has, and the Gets that read them, are [`TableRead::of_port`]'s rule, the
//! one the emulated fabric's dump follows; the PortInfo fields are those discovery read.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use ibqos_exchange::Engine;
use ibqos_exchange::scheduler::{Completion, Scheduler, SchedulerConfig, SchedulerStats};
use ibqos_exchange::smp::parse_smp;
use ibqos_exchange::{OutgoingMad, Peer};
use ibqos_fabric::dump::{FabricDump, NodeDump, PortDump, SwitchShape, TableRead};
use ibqos_fabric::{Topology, TopologyError};
use ibqos_mad::{Attribute, AttributeId, CapabilityMask, Guid, Mad, SmpRepr};
use tracing::{debug, info, warn};

use super::discovery::{Discovery, Probe, WrongAnswer};
use super::routing::topology;
use super::subnet::{PortKey, Subnet};

/// What a survey Get was for.
#[derive(Debug, Clone)]
enum Op {
    Discover(Probe),
    Table {
        port: PortKey,
        read: TableRead,
    },
    /// One block of a switch's LFT.
    Lft {
        switch: u64,
        block: u32,
    },
}

impl From<Probe> for Op {
    fn from(probe: Probe) -> Op {
        Op::Discover(probe)
    }
}

/// A Get the survey could not complete, so the dump would lack what it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// The node (by GUID) and port it was for, or the route of a node not yet known.
    pub target: String,
    pub attribute: AttributeId,
    pub modifier: u32,
    /// No answer, an error status, a malformed or wrong answer.
    pub reason: String,
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:?} (modifier {:#x}): {}",
            self.target, self.attribute, self.modifier, self.reason
        )
    }
}

/// Where the survey is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Discovering,
    ReadingTables,
    Done,
}

/// One read-only survey.
#[derive(Debug)]
pub struct Survey {
    scheduler: Scheduler<Op>,
    discovery: Discovery,
    subnet: Subnet,
    phase: Phase,
    /// Each port's state as read so far: its PortInfo fields, then its tables.
    ports: BTreeMap<PortKey, PortDump>,
    /// Each switch's LFT as read so far, by switch GUID.
    lfts: BTreeMap<u64, BTreeMap<u16, u8>>,
    unread: Vec<Unread>,
}

impl Survey {
    /// A survey that starts by asking the local node who it is.
    pub fn start(config: SchedulerConfig) -> Survey {
        info!("surveying the fabric: discovery");
        let mut scheduler = Scheduler::new(config);
        let discovery = Discovery::start(&mut scheduler);
        Survey {
            scheduler,
            discovery,
            subnet: Subnet::default(),
            phase: Phase::Discovering,
            ports: BTreeMap::new(),
            lfts: BTreeMap::new(),
            unread: Vec::new(),
        }
    }

    /// Every Get sent and answered or given up.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The Gets that could not be completed, in the order they were given up: a dump taken
    /// with any lacks what they read.
    pub fn unread(&self) -> &[Unread] {
        &self.unread
    }

    pub fn stats(&self) -> &SchedulerStats {
        self.scheduler.stats()
    }

    /// What the survey read: every node discovery found, named by its NodeDescription, and
    /// every port of it that was read.
    pub fn dump(&self) -> FabricDump {
        let nodes = self
            .subnet
            .nodes
            .iter()
            .map(|(&guid, node)| {
                let ports = node
                    .ports
                    .keys()
                    .filter_map(|&n| Some((n, self.ports.get(&PortKey::new(guid, n))?.clone())))
                    .collect();
                let dump = NodeDump {
                    name: node.description.clone(),
                    kind: NodeDump::kind_name(node.info.node_type),
                    ports,
                    lft: self.lfts.get(&guid).cloned().unwrap_or_default(),
                };
                (FabricDump::node_key(guid), dump)
            })
            .collect();
        FabricDump { nodes }
    }

    /// The fabric discovery found, as a topology: its nodes (by NodeDescription), links, and
    /// every port's LID and LMC. With [`Survey::dump`]'s LFTs, what routes the fabric holds.
    pub fn topology(&self) -> Result<Topology, TopologyError> {
        topology(&self.subnet, None).map(|(topology, _)| topology)
    }

    fn complete(&mut self, done: Completion<Op>) {
        let (op, answer) = match done {
            Completion::Answered { context, response } => {
                match Attribute::parse(response.attribute_id, &response.data) {
                    Ok(answer) => (context, answer),
                    Err(error) => {
                        self.give_up(&context, &response, format!("malformed answer: {error}"));
                        return;
                    }
                }
            }
            Completion::Failed {
                context,
                request,
                failure,
            } => {
                self.give_up(&context, &request, failure.to_string());
                return;
            }
        };
        match op {
            Op::Discover(probe) => {
                let (subnet, scheduler) = (&mut self.subnet, &mut self.scheduler);
                if let Err(WrongAnswer { probe, answer }) =
                    self.discovery.answered(subnet, scheduler, probe, answer)
                {
                    self.unread.push(Unread {
                        target: target(&Op::Discover(probe)),
                        attribute: answer,
                        modifier: 0,
                        reason: "answered with another attribute".into(),
                    });
                }
            }
            Op::Lft { switch, block } => {
                let top = self.subnet.nodes.get(&switch).and_then(|n| n.switch);
                match (answer, top) {
                    (Attribute::LinearForwardingTable(table), Some(info)) => {
                        let routes = NodeDump::lft_routes(block, &table, info.linear_fdb_top);
                        self.lfts.entry(switch).or_default().extend(routes);
                    }
                    (answer, _) => self.unread.push(Unread {
                        target: target(&Op::Lft { switch, block }),
                        attribute: AttributeId::LinearForwardingTable,
                        modifier: block,
                        reason: format!("answered with {:?}", answer.id()),
                    }),
                }
            }
            Op::Table { port, read } => {
                let recorded = self
                    .ports
                    .get_mut(&port)
                    .is_some_and(|dump| dump.record(&read, &answer));
                if !recorded {
                    self.unread.push(Unread {
                        target: target(&Op::Table { port, read }),
                        attribute: read.attribute,
                        modifier: read.modifier,
                        reason: format!("answered with {:?}", answer.id()),
                    });
                }
            }
        }
    }

    fn give_up(&mut self, op: &Op, request: &SmpRepr, reason: String) {
        let unread = Unread {
            target: target(op),
            attribute: request.attribute_id,
            modifier: request.attribute_modifier,
            reason,
        };
        warn!(%unread, "survey Get given up");
        self.unread.push(unread);
    }

    /// When nothing is left on the wire, discovery is done and the tables are read; when they
    /// are in too, the survey is.
    fn advance(&mut self) {
        while self.scheduler.is_idle() && self.phase != Phase::Done {
            self.phase = match self.phase {
                Phase::Discovering => {
                    self.read_tables();
                    Phase::ReadingTables
                }
                Phase::ReadingTables | Phase::Done => {
                    info!(unread = self.unread.len(), "survey done");
                    Phase::Done
                }
            };
        }
    }

    /// Every table of every port discovery read.
    fn read_tables(&mut self) {
        let mut reads = 0;
        for (&guid, node) in &self.subnet.nodes {
            let switch = node.is_switch().then(|| SwitchShape {
                num_ports: node.info.num_ports,
                enhanced_port0: node.switch.is_some_and(|s| s.enhanced_port0),
                sl_mapping: node.ports.get(&0).is_some_and(|p| {
                    p.info
                        .capability_mask
                        .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED)
                }),
            });
            let top = node.switch.map_or(0, |info| info.linear_fdb_top);
            for block in NodeDump::lft_blocks(top) {
                let op = Op::Lft {
                    switch: guid,
                    block,
                };
                let attribute = AttributeId::LinearForwardingTable;
                self.scheduler
                    .get_directed(guid, &node.path, attribute, block, op);
                reads += 1;
            }
            for (&number, port) in &node.ports {
                let key = PortKey::new(guid, number);
                self.ports.insert(key, PortDump::new(&port.info));
                for read in TableRead::of_port(switch, number, &port.info) {
                    let op = Op::Table { port: key, read };
                    let (attribute, modifier) = (read.attribute, read.modifier);
                    self.scheduler
                        .get_directed(guid, &port.path, attribute, modifier, op);
                    reads += 1;
                }
            }
        }
        info!(
            nodes = self.subnet.nodes.len(),
            ports = self.ports.len(),
            reads,
            "discovery done; reading every port's tables"
        );
    }
}

/// Whom a Get was for, as an unread Get names it.
fn target(op: &Op) -> String {
    match op {
        Op::Discover(Probe::NodeInfo { path }) => {
            let route: Vec<String> = std::iter::once(0)
                .chain(path.iter().copied())
                .map(|p| p.to_string())
                .collect();
            format!("the node at directed route {}", route.join(","))
        }
        Op::Discover(Probe::NodeDescription { guid } | Probe::SwitchInfo { guid }) => {
            Guid(*guid).to_string()
        }
        Op::Discover(Probe::PortInfo { guid, port }) => format!("{}[{port}]", Guid(*guid)),
        Op::Table { port, .. } => format!("{}[{}]", Guid(port.node), port.port),
        Op::Lft { switch, .. } => Guid(*switch).to_string(),
    }
}

impl Engine for Survey {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.scheduler
            .poll_transmit(now)
            .map(|transmit| OutgoingMad::from(&transmit))
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.scheduler.next_deadline()
    }

    /// A response goes to the Get it answers; anything else (a trap, a request for an SM) is
    /// not for a survey, which answers nothing.
    fn on_mad(&mut self, _now: Instant, mad: &[u8], _from: Peer) {
        match parse_smp(mad) {
            Some(smp) if smp.method.is_response() => {
                if let Some(done) = self.scheduler.on_response(smp) {
                    self.complete(done);
                }
            }
            _ => debug!("not a response; a survey answers nothing"),
        }
        self.advance();
    }

    /// A Get handed back undelivered (whole, or only its header as the kernel returns it).
    fn on_dropped(&mut self, _now: Instant, mad: &[u8]) {
        let done = Mad::new_checked(mad)
            .ok()
            .and_then(|header| self.scheduler.on_dropped_header(&header));
        if let Some(done) = done {
            self.complete(done);
        }
        self.advance();
    }

    fn on_time(&mut self, now: Instant) {
        for done in self.scheduler.poll_timeouts(now) {
            self.complete(done);
        }
        self.advance();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ibqos_mad::{Method, Smp};

    use super::*;

    #[test]
    fn a_fabric_that_answers_nothing_ends_the_survey_with_its_get_unread() {
        let config = SchedulerConfig {
            max_outstanding: 4,
            timeout: Duration::from_millis(200),
            retries: 2,
        };
        let mut survey = Survey::start(config);
        let mut now = Instant::now();
        let mut sent = Vec::new();
        while !survey.is_done() {
            while let Some(out) = survey.poll_transmit(now) {
                sent.push(SmpRepr::parse(&Smp::new_checked(&out.mad[..]).unwrap()).unwrap());
            }
            now = survey.next_deadline().expect("a Get on the wire");
            survey.on_time(now);
        }
        assert_eq!(sent.len(), 3, "one Get and its two retries");
        assert!(sent.iter().all(|smp| smp.method == Method::Get));
        assert_eq!(
            survey
                .unread()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["the node at directed route 0: NodeInfo (modifier 0x0): no answer after 3 attempts"]
        );
        assert!(survey.dump().nodes.is_empty());
    }
}
