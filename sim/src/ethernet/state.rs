//! The Ethernet side of a run: per port and per node, what the Ethernet link mode keeps apart
//! from what an InfiniBand hop reads.

use std::collections::BTreeMap;

use crate::ethernet::dcqcn::{
    DcqcnConfig, EcnMarker, NotificationPoint, NpParams, ReactionPoint, RpParams,
};
use crate::ethernet::ets::Scheduler;
use crate::ethernet::frame::ethernet_wire_ps;
use crate::ethernet::host_qos::HostQos;
use crate::ethernet::pfc::{
    PAUSE_FRAME_BYTES, PRIORITIES, PauseFrame, PauseGenerator, PauseResponder, PauseStorm,
    PfcConfig,
};
use crate::ethernet::shared_buffer::{
    BufferConfig, Direction, POOLS, Place, PoolId, Region, RegionName, SwitchBuffer,
};
use crate::network::{Ethernet, Network, NetworkError, NodeKind, PortSlot};
use crate::report::Sent;

/// Keeps ECN's random words apart from the flows' phases, which use the run's seed as it is.
pub(super) const ECN_STREAM: u64 = 0xec4e_c4e0_ec4e_c4e0;

/// The lanes of an Ethernet port: its eight traffic classes (egress queues).
pub(crate) const TRAFFIC_CLASSES: u8 = 8;

/// Where a switch may store a packet, by code: the code rides as three bits beside the
/// packet's priority in [`Packet`]'s `in_vl` (`priority | code << 3`), so that the end
/// of its transmission can free it. One table both ways, so that the two cannot disagree.
const PLACES: [Place; 6] = [
    Place::Shared,
    Place::Reserved(Region::IPortPg),
    Place::Reserved(Region::IPort),
    Place::Reserved(Region::EPortTc),
    Place::Reserved(Region::EPort),
    Place::Headroom,
];

pub(super) fn place_code(place: Place) -> u8 {
    PLACES
        .iter()
        .position(|p| *p == place)
        .expect("every place has a code") as u8
}

pub(super) fn place_of(code: u8) -> Place {
    PLACES[usize::from(code)]
}

/// The bits of `mask`, lowest first.
pub(super) fn mask_bits(mask: u8) -> impl Iterator<Item = u8> {
    (0..8).filter(move |b| mask >> b & 1 != 0)
}

/// The Ethernet side of a run.
#[derive(Debug)]
pub(crate) struct EthernetState {
    pub(super) link_bps: u64,
    /// The traffic class (lane) of each priority, by the ETS dot1p map.
    pub(super) tc_of: [u8; PRIORITIES],
    /// A pause frame's own time on the wire (64 bytes, preamble and gap).
    pub(super) pause_wire_ps: u64,
    /// Per port: the end that obeys pauses, the end that sends them (used on switch ports,
    /// whose buffers ask), the egress scheduler, and the time of the wake it has asked for.
    pub(super) responders: Vec<PauseResponder>,
    pub(super) generators: Vec<PauseGenerator>,
    pub(super) schedulers: Vec<Scheduler>,
    pub(super) wake_at: Vec<u64>,
    /// Per port and priority, the frames whose transmission ended and their bytes.
    pub(super) sent: Vec<[Sent; PRIORITIES]>,
    /// Per node, its shared buffer (used on switches; a host receives without limit), and the
    /// peak shared bytes of each pool, ingress then egress.
    pub(super) buffers: Vec<SwitchBuffer>,
    pub(super) pool_peaks: Vec<[[u64; POOLS]; 2]>,
    /// The ingress and egress pool of each priority.
    pub(super) pools_of: [(u8, u8); PRIORITIES],
    /// The pools the configuration defines, for the report.
    pub(super) pools: Vec<PoolId>,
    /// Pause frames between leaving and taking hold, by index; the free indices.
    pub(super) frames: Vec<PauseFrame>,
    pub(super) free_frames: Vec<u32>,
    /// The pause storms and their ports.
    pub(super) storms: Vec<(u32, PauseStorm)>,
    /// ECN marking at switch egress queues (`[ecn]`), the marks drawn so far (the counter of
    /// the random words), and per port the bytes queued on each traffic class and the frames
    /// marked per priority.
    pub(super) marker: Option<EcnMarker>,
    pub(super) draws: u64,
    pub(super) egress_bytes: Vec<[u64; TRAFFIC_CLASSES as usize]>,
    pub(super) marks: Vec<[u64; PRIORITIES]>,
    /// DCQCN at the hosts (`[dcqcn]`), set up once the flows are known.
    pub(super) dcqcn_config: Option<DcqcnConfig>,
    pub(super) dcqcn: Option<Dcqcn>,
    pub(super) host: HostQos,
    /// The switch buffers at the end of each timeline interval, by series: pools always,
    /// regions once they held anything (zero before).
    pub(super) occupancy: BTreeMap<OccupancyKey, Vec<u64>>,
}

/// One occupancy series: switch node, port (0 for a pool), what, and its PG, TC or pool
/// number. Ordered as the report lists them: by switch, pools first, then by port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct OccupancyKey {
    pub(super) node: u32,
    pub(super) port: u8,
    pub(super) what: Sampled,
    pub(super) index: u8,
}

/// What an occupancy series counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Sampled {
    /// A pool's shared bytes; ingress pools before egress ones, as the report lists pools.
    IngressPool,
    EgressPool,
    PortPg,
    PortTc,
}

impl Sampled {
    /// The series' name for pool, PG or TC `index`: `iPool0`, `iPort.pg3`, `ePort.tc3`.
    pub(super) fn name(self, index: u8) -> String {
        let pool = |direction| PoolId { direction, index }.to_string();
        let region = |region| RegionName { region, index }.to_string();
        match self {
            Sampled::IngressPool => pool(Direction::Ingress),
            Sampled::EgressPool => pool(Direction::Egress),
            Sampled::PortPg => region(Region::IPortPg),
            Sampled::PortTc => region(Region::EPortTc),
        }
    }
}

/// DCQCN's parameters and every flow's notification and reaction point.
#[derive(Debug)]
pub(super) struct Dcqcn {
    pub(super) rp: RpParams,
    pub(super) np: NpParams,
    pub(super) flows: Vec<FlowDcqcn>,
}

/// One flow under DCQCN.
#[derive(Debug)]
pub(super) struct FlowDcqcn {
    /// `None` for a flow whose priority has no reaction point, or with a rate of its own.
    pub(super) rp: Option<ReactionPoint>,
    pub(super) np: NotificationPoint,
    /// The LID of the flow's source, where its CNPs go.
    pub(super) source_lid: u16,
    pub(super) cnps_sent: u64,
    pub(super) cnps_received: u64,
    pub(super) cuts: u64,
    pub(super) min_rate_bps: u64,
    /// The time of the last timer event queued for the reaction point.
    pub(super) timer_at: u64,
    /// Out of its lane's rotation, sent at the reaction point's rate; a pacing event is queued.
    pub(super) paced: bool,
    pub(super) pacing: bool,
    /// The rate at the end of each timeline interval up to `sampled`, and the rate since.
    pub(super) rates: Vec<u64>,
    pub(super) sampled: usize,
    pub(super) rate_bps: u64,
}

/// The pool index of the region of `index` (a PG or TC) in a configuration's `regions`.
fn pool_of<R>(regions: &[R], index: u8, key: impl Fn(&R) -> (u8, PoolId)) -> u8 {
    regions
        .iter()
        .map(key)
        .find(|&(i, _)| i == index)
        .map_or(0, |(_, pool)| pool.index)
}

fn pools_of(buffer: &BufferConfig) -> [(u8, u8); PRIORITIES] {
    std::array::from_fn(|p| {
        let pg = pool_of(&buffer.pg, buffer.priority_pg[p], |r| (r.pg, r.pool));
        let tc = pool_of(&buffer.tc, buffer.priority_tc[p], |r| (r.tc, r.pool));
        (pg, tc)
    })
}

impl EthernetState {
    /// The state of `network`'s ports (numbered from each node's `node_base`) and nodes with
    /// `config`, every setting checked.
    pub(crate) fn new(
        network: &Network,
        ports: &[PortSlot],
        node_base: &[u32],
        config: &Ethernet,
    ) -> Result<Self, NetworkError> {
        let bad = |e: &dyn std::fmt::Display| NetworkError::BadEthernet(e.to_string());
        config.pfc.validate().map_err(|e| bad(&e))?;
        config.ets.validate().map_err(|e| bad(&e))?;
        config.host.validate().map_err(|e| bad(&e))?;
        config.buffer.validate().map_err(|e| bad(&e))?;
        if let Some(dcqcn) = &config.dcqcn {
            dcqcn.validate().map_err(|e| bad(&e))?;
        }
        if let Some(ecn) = &config.ecn {
            ecn.validate().map_err(|e| bad(&e))?;
        }
        if config.link_bps == 0 {
            return Err(bad(&"a link of 0 b/s"));
        }
        let bps = config.link_bps;
        let port_count = ports.len();
        let buffers = network
            .nodes
            .iter()
            .map(|node| SwitchBuffer::new(&config.buffer, u16::from(node.num_ports) + 1))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        let mut storms = Vec::new();
        for storm in &config.storms {
            let name = format!("node {} port {}", storm.port.node, storm.port.port);
            let node = network.nodes.get(storm.port.node);
            let port = node
                .filter(|n| {
                    n.kind == NodeKind::Host
                        && storm.port.port >= 1
                        && storm.port.port <= n.num_ports
                })
                .map(|_| node_base[storm.port.node] + u32::from(storm.port.port))
                .filter(|&p| ports[p as usize].peer.is_some())
                .ok_or_else(|| NetworkError::BadStorm {
                    port: name.clone(),
                    reason: "not a linked host port".into(),
                })?;
            let running =
                storm
                    .config
                    .storm(config.pfc.mode, bps)
                    .map_err(|e| NetworkError::BadStorm {
                        port: name,
                        reason: e.to_string(),
                    })?;
            storms.push((port, running));
        }
        // The PFC delay is the sending end station's (the SONiC plan's tester port): a switch
        // port obeys a pause within its own response time.
        let switch_responder = PauseResponder::new(
            &PfcConfig {
                pfc_delay: 0,
                ..config.pfc.clone()
            },
            bps,
        );
        let mut pools: Vec<PoolId> = config.buffer.pool.iter().map(|p| p.name).collect();
        pools.sort_by_key(|p| (p.direction as u8, p.index));
        Ok(EthernetState {
            link_bps: bps,
            tc_of: std::array::from_fn(|p| config.ets.traffic_class(p as u8)),
            pause_wire_ps: ethernet_wire_ps(PAUSE_FRAME_BYTES, bps),
            responders: ports
                .iter()
                .map(|port| match network.nodes[port.node as usize].kind {
                    NodeKind::Host => PauseResponder::new(&config.pfc, bps),
                    NodeKind::Switch => switch_responder.clone(),
                })
                .collect(),
            generators: vec![PauseGenerator::new(&config.pfc, bps); port_count],
            schedulers: vec![Scheduler::new(&config.ets, bps); port_count],
            wake_at: vec![0; port_count],
            sent: vec![[Sent::default(); PRIORITIES]; port_count],
            pool_peaks: vec![[[0; POOLS]; 2]; buffers.len()],
            buffers,
            pools_of: pools_of(&config.buffer),
            pools,
            frames: Vec::new(),
            free_frames: Vec::new(),
            storms,
            marker: config.ecn.map(|ecn| ecn.marker()),
            draws: 0,
            egress_bytes: vec![[0; TRAFFIC_CLASSES as usize]; port_count],
            marks: vec![[0; PRIORITIES]; port_count],
            dcqcn_config: config.dcqcn,
            dcqcn: None,
            host: config.host,
            occupancy: BTreeMap::new(),
        })
    }

    /// The traffic class (lane) of `priority`.
    pub(crate) fn traffic_class(&self, priority: u8) -> u8 {
        self.tc_of[usize::from(priority & 7)]
    }

    /// The link rate in Gb/s.
    pub(crate) fn gbps(&self) -> f64 {
        self.link_bps as f64 / 1e9
    }

    /// The traffic classes of `port` paused at `now`: a class is paused while any priority
    /// mapped to it is (the pause stops the queue).
    pub(super) fn paused_classes(&self, port: usize, now: u64) -> (u8, u8) {
        let priorities = self.responders[port].paused_mask(now);
        let classes = mask_bits(priorities).fold(0, |m, p| m | 1 << self.tc_of[usize::from(p)]);
        (priorities, classes)
    }

    pub(super) fn store(&mut self, frame: PauseFrame) -> u32 {
        match self.free_frames.pop() {
            Some(id) => {
                self.frames[id as usize] = frame;
                id
            }
            None => {
                self.frames.push(frame);
                (self.frames.len() - 1) as u32
            }
        }
    }
}

impl FlowDcqcn {
    /// The intervals before `interval` end at the rate held since the last change.
    pub(super) fn sample(&mut self, interval: usize) {
        let end = interval.min(self.rates.len());
        if self.sampled < end {
            self.rates[self.sampled..end].fill(self.rate_bps);
            self.sampled = end;
        }
    }
}
