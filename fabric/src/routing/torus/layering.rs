//! What torus-2QoS decides beside the LFTs: the SL of each path (`torus_path_sl`), the SL2VL
//! tables that turn it into VLs hop by hop (`sl2vl_entry`), and the VLArb tables of the links
//! to end ports (`torus_update_osm_vlarb`).
//!
//! The SL carries the path's history the switches cannot see: bit `d` says the path crosses
//! the dateline of dimension `d`, bit 3 is the QoS level. On a link between switches the VL
//! is the dateline bit of the output's dimension (with 2 data VLs or more), a bit for a turn
//! from a higher dimension to a lower one (with 4 or more), and the QoS bit (with 8). On a link
//! to an end port the VL is the QoS bit alone.

use std::collections::HashMap;

use ibqos_qos::{Sl2VlTable, Vl, VlArbTable, VlCount};

use super::build::{Coord, ENDPORT_GROUP, Torus};
use super::route::{Dest, crosses_dateline};
use super::setup::DataVls;

/// The SL bit of the QoS level; the VL bit of the QoS level on a link between switches.
const QOS_SL_BIT: u8 = 3;
const QOS_VL_BIT: u8 = 2;
/// The dimension OpenSM gives a port outside the three (an end port, port 0, a port not in the
/// torus): `TORUS_MAX_DIM`.
const NO_DIMENSION: usize = 3;
/// VLArb tables go to the switch by blocks of this many entries, and OpenSM rewrites each
/// block on its own.
const VLARB_BLOCK: usize = 32;

/// The routing's answers, kept from the torus it routed.
#[derive(Debug)]
pub(super) struct TorusLayering {
    radix: Coord,
    /// The coordinates of the switch behind each LID of a torus end port.
    by_lid: HashMap<u16, Coord>,
    /// Per torus switch (by NodeGUID), the group of each port, `None` outside the torus.
    groups: HashMap<u64, Vec<Option<usize>>>,
    vls: DataVls,
}

impl TorusLayering {
    pub fn new(torus: &Torus, dests: &[Dest], vls: DataVls) -> TorusLayering {
        let by_lid = dests
            .iter()
            .flat_map(|d| {
                let coord = torus.switches[d.switch].coord;
                (d.base..=d.base + (d.count - 1)).map(move |lid| (lid, coord))
            })
            .collect();
        let groups = torus
            .switches
            .iter()
            .map(|sw| {
                let ports = (0..=u8::MAX).map(|p| sw.group_of(p)).collect();
                (sw.guid, ports)
            })
            .collect();
        TorusLayering {
            radix: torus.radix,
            by_lid,
            groups,
            vls,
        }
    }

    /// The dimension of `port` on a switch with port groups `groups`.
    fn dimension(groups: &[Option<usize>], port: u8) -> usize {
        groups
            .get(usize::from(port))
            .copied()
            .flatten()
            .map_or(NO_DIMENSION, |g| g / 2)
    }

    /// The VL of `sl` from `input` to `output` of a torus switch with port groups `groups`, or
    /// of a CA port (`None`), as OpenSM's `sl2vl_entry`.
    fn vl(&self, groups: Option<&[Option<usize>]>, input: u8, output: u8, sl: u8) -> u8 {
        let qos = (sl >> QOS_SL_BIT) & 1;
        let Some(groups) = groups else {
            return if self.vls.endport >= 2 { qos } else { 0 };
        };
        let (into, out) = (
            Self::dimension(groups, input),
            Self::dimension(groups, output),
        );
        let data = self.vls.switchport;
        if out == NO_DIMENSION {
            return if data >= 2 { qos } else { 0 };
        }
        let mut vl = 0;
        if data >= 2 {
            vl |= (sl >> out) & 1;
        }
        if data >= 4 && into != NO_DIMENSION && into > out {
            vl |= 1 << 1;
        }
        if data >= 8 {
            vl |= qos << QOS_VL_BIT;
        }
        vl
    }
}

/// The answers of [`super::super::Layering`], which the engine's module implements with them.
impl TorusLayering {
    /// The dateline bits of the path's ends, and the QoS level of `hint`; 0 for a LID outside
    /// the torus.
    pub fn sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        let (Some(from), Some(to)) = (self.by_lid.get(&slid), self.by_lid.get(&dlid)) else {
            return 0;
        };
        let loops = (0..3).fold(0, |sl, d| {
            sl | u8::from(crosses_dateline(from[d], to[d], self.radix[d])) << d
        });
        loops | (hint & (1 << QOS_SL_BIT))
    }

    /// The fewest data VLs the ports run, as the routing counted them.
    pub fn data_vls(&self) -> DataVls {
        self.vls
    }

    /// Up to 8: two per QoS level for the datelines, doubled for the turns a failure forces.
    pub fn vls(&self) -> VlCount {
        match self.vls.switchport {
            8.. => VlCount::Eight,
            4..=7 => VlCount::Four,
            _ => VlCount::Two,
        }
    }

    /// The VL of each SL from `input` to `output` of the node with NodeGUID `node`.
    pub fn sl2vl(&self, node: u64, input: u8, output: u8, table: &mut Sl2VlTable) {
        let groups = self.groups.get(&node).map(Vec::as_slice);
        for (sl, vl) in table.0.iter_mut().enumerate() {
            *vl = Vl::from_nibble(self.vl(groups, input, output, sl as u8));
        }
    }

    /// On a switch port to an end port only VL0 and VL1 carry data: VL0 stays, VL4 (the second
    /// QoS level between switches) becomes VL1, the rest is dropped and the table compacted,
    /// block by block.
    pub fn vlarb(&self, node: u64, port: u8, table: &mut VlArbTable) {
        let Some(groups) = self.groups.get(&node) else {
            return;
        };
        if port == 0 || groups.get(usize::from(port)).copied().flatten() != Some(ENDPORT_GROUP) {
            return;
        }
        for block in table.0.chunks_mut(VLARB_BLOCK) {
            let mut next = 0;
            for i in 0..block.len() {
                let entry = block[i];
                let vl = match entry.vl {
                    0 => 0,
                    4 => 1,
                    _ => {
                        block[i].vl = 0;
                        block[i].weight = 0;
                        continue;
                    }
                };
                block[next].vl = vl;
                block[next].weight = entry.weight;
                next += 1;
                if next <= i {
                    block[i].vl = 0;
                    block[i].weight = 0;
                }
            }
        }
    }
}
