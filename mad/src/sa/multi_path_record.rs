//! MultiPathRecord (SA attribute 0x003A, IBA 15.2.5.20): a GetMulti request for the paths
//! between several source and several destination GIDs. The answer is PathRecords.

use super::SaAttributeId;
use super::path_record::{Mtu, Rate, Selector};
use crate::vocabulary::Gid;
use crate::{Error, Result};

layout! {
    /// A view of a MultiPathRecord's fixed part (24 bytes); SGIDCount source GIDs and then
    /// DGIDCount destination GIDs follow it, 16 bytes each.
    pub struct MultiPathRecord[24];
    {
        /// RawTraffic.
        raw_traffic / set_raw_traffic: bool = 0, 1;
        /// FlowLabel.
        flow_label / set_flow_label: u32 = 4, 20;
        /// HopLimit.
        hop_limit / set_hop_limit: u8 = 24, 8;
        /// TClass.
        tclass / set_tclass: u8 = 32, 8;
        /// Reversible.
        reversible / set_reversible: bool = 40, 1;
        /// NumbPath: how many paths at most.
        numb_path / set_numb_path: u8 = 41, 7;
        /// P_Key.
        p_key / set_p_key: u16 = 48, 16;
        /// QoSClass.
        qos_class / set_qos_class: u16 = 64, 12;
        /// SL.
        sl / set_sl: u8 = 76, 4;
        /// MTUSelector.
        mtu_selector / set_mtu_selector: Selector = 80, 2;
        /// MTU.
        mtu / set_mtu: Mtu = 82, 6;
        /// RateSelector.
        rate_selector / set_rate_selector: Selector = 88, 2;
        /// Rate.
        rate / set_rate: Rate = 90, 6;
        /// PacketLifeTimeSelector.
        packet_life_selector / set_packet_life_selector: Selector = 96, 2;
        /// PacketLifeTime.
        packet_life / set_packet_life: u8 = 98, 6;
        /// ServiceID bits 63:56.
        service_id_msb / set_service_id_msb: u8 = 104, 8;
        /// IndependenceSelector: how independent of each other the paths must be.
        independence_selector / set_independence_selector: u8 = 112, 2;
        /// SGIDCount.
        sgid_count / set_sgid_count: u8 = 120, 8;
        /// DGIDCount.
        dgid_count / set_dgid_count: u8 = 128, 8;
        /// ServiceID bits 55:0.
        service_id_lsb / set_service_id_lsb: u64 = 136, 56;
    }
}

/// A MultiPathRecord: the fixed fields, then the source and destination GIDs (whose numbers are
/// SGIDCount and DGIDCount on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MultiPathRecordRepr {
    /// RawTraffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible.
    pub reversible: bool,
    /// NumbPath (7 bits).
    pub numb_path: u8,
    /// P_Key.
    pub p_key: u16,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU.
    pub mtu: Mtu,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate.
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life: u8,
    /// ServiceID, both halves.
    pub service_id: u64,
    /// IndependenceSelector (2 bits).
    pub independence_selector: u8,
    /// The source GIDs.
    pub sgids: Vec<Gid>,
    /// The destination GIDs.
    pub dgids: Vec<Gid>,
}

impl MultiPathRecordRepr {
    /// The AttributeID of the request (the answer's PathRecords carry PathRecord's).
    pub const ATTRIBUTE_ID: SaAttributeId = SaAttributeId::MultiPathRecord;
    /// The fixed part's size in bytes.
    pub const HEADER_LEN: usize = 24;
    /// How many GIDs fit in one MAD after the fixed part: (200 - 24) / 16.
    pub const MAX_GIDS_IN_ONE_MAD: usize = 11;

    /// The size in bytes of the record as [`emit_bytes`](Self::emit_bytes) writes it.
    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + 16 * (self.sgids.len() + self.dgids.len())
    }

    /// Reads the fixed part and the SGIDCount + DGIDCount GIDs after it, failing with
    /// [`Error::Truncated`] if `bytes` does not hold them all.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Self> {
        let view = MultiPathRecord::new_checked(bytes)?;
        let (sgid_count, dgid_count) = (
            usize::from(view.sgid_count()),
            usize::from(view.dgid_count()),
        );
        let needed = Self::HEADER_LEN + 16 * (sgid_count + dgid_count);
        let gid_bytes = bytes
            .get(Self::HEADER_LEN..needed)
            .ok_or(Error::Truncated {
                len: bytes.len(),
                needed,
            })?;
        let mut gids = gid_bytes.chunks_exact(16).map(|chunk| {
            let mut raw = [0; 16];
            raw.copy_from_slice(chunk);
            Gid::from_bytes(raw)
        });
        let sgids = gids.by_ref().take(sgid_count).collect();
        let dgids = gids.collect();
        Ok(Self {
            raw_traffic: view.raw_traffic(),
            flow_label: view.flow_label(),
            hop_limit: view.hop_limit(),
            tclass: view.tclass(),
            reversible: view.reversible(),
            numb_path: view.numb_path(),
            p_key: view.p_key(),
            qos_class: view.qos_class(),
            sl: view.sl(),
            mtu_selector: view.mtu_selector(),
            mtu: view.mtu(),
            rate_selector: view.rate_selector(),
            rate: view.rate(),
            packet_life_selector: view.packet_life_selector(),
            packet_life: view.packet_life(),
            service_id: u64::from(view.service_id_msb()) << 56 | view.service_id_lsb(),
            independence_selector: view.independence_selector(),
            sgids,
            dgids,
        })
    }

    /// Writes the fixed part, SGIDCount and DGIDCount from the GID lists, and the GIDs:
    /// [`len`](Self::wire_len) bytes.
    ///
    /// # Panics
    ///
    /// If `bytes` is shorter than [`len`](Self::wire_len), or either list has more than 255 GIDs.
    pub fn emit_bytes(&self, bytes: &mut [u8]) {
        let count = |gids: &[Gid]| u8::try_from(gids.len()).expect("at most 255 GIDs");
        let mut view = MultiPathRecord::new_unchecked(&mut *bytes);
        view.clear();
        view.set_raw_traffic(self.raw_traffic);
        view.set_flow_label(self.flow_label);
        view.set_hop_limit(self.hop_limit);
        view.set_tclass(self.tclass);
        view.set_reversible(self.reversible);
        view.set_numb_path(self.numb_path);
        view.set_p_key(self.p_key);
        view.set_qos_class(self.qos_class);
        view.set_sl(self.sl);
        view.set_mtu_selector(self.mtu_selector);
        view.set_mtu(self.mtu);
        view.set_rate_selector(self.rate_selector);
        view.set_rate(self.rate);
        view.set_packet_life_selector(self.packet_life_selector);
        view.set_packet_life(self.packet_life);
        view.set_service_id_msb((self.service_id >> 56) as u8);
        view.set_independence_selector(self.independence_selector);
        view.set_sgid_count(count(&self.sgids));
        view.set_dgid_count(count(&self.dgids));
        view.set_service_id_lsb(self.service_id);
        let gids = self.sgids.iter().chain(&self.dgids);
        for (chunk, gid) in bytes[Self::HEADER_LEN..self.wire_len()]
            .chunks_exact_mut(16)
            .zip(gids)
        {
            chunk.copy_from_slice(&gid.to_bytes());
        }
    }
}

flags! {
    /// MultiPathRecord ComponentMask bits (include/iba/ib_types.h:2785-2809).
    pub struct MultiPathRecordMask(u64) {
        /// RawTraffic.
        const RAW_TRAFFIC = 1 << 0;
        /// FlowLabel.
        const FLOW_LABEL = 1 << 2;
        /// HopLimit.
        const HOP_LIMIT = 1 << 3;
        /// TClass.
        const TCLASS = 1 << 4;
        /// Reversible.
        const REVERSIBLE = 1 << 5;
        /// NumbPath.
        const NUMB_PATH = 1 << 6;
        /// P_Key.
        const P_KEY = 1 << 7;
        /// QoSClass.
        const QOS_CLASS = 1 << 8;
        /// SL.
        const SL = 1 << 9;
        /// MTUSelector.
        const MTU_SELECTOR = 1 << 10;
        /// MTU.
        const MTU = 1 << 11;
        /// RateSelector.
        const RATE_SELECTOR = 1 << 12;
        /// Rate.
        const RATE = 1 << 13;
        /// PacketLifeTimeSelector.
        const PACKET_LIFE_SELECTOR = 1 << 14;
        /// PacketLifeTime.
        const PACKET_LIFE = 1 << 15;
        /// ServiceID bits 63:56.
        const SERVICE_ID_MSB = 1 << 16;
        /// IndependenceSelector.
        const INDEPENDENCE_SELECTOR = 1 << 17;
        /// SGIDCount.
        const SGID_COUNT = 1 << 19;
        /// DGIDCount.
        const DGID_COUNT = 1 << 20;
        /// ServiceID bits 55:0.
        const SERVICE_ID_LSB = 1 << 21;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One source, two destinations, NumbPath 2, P_Key 0xffff, ServiceID 0x1122..88.
    fn bytes() -> Vec<u8> {
        let mut b = vec![0; 24 + 3 * 16];
        b[..8].copy_from_slice(&[0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0xff]);
        b[8..24].copy_from_slice(&[
            0x00, 0x00, 0x84, 0x00, 0x00, 0x11, 0x00, 0x01, 0x02, 0x22, 0x33, 0x44, 0x55, 0x66,
            0x77, 0x88,
        ]);
        for (i, guid) in [1u64, 2, 3].into_iter().enumerate() {
            let gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, guid);
            b[24 + 16 * i..40 + 16 * i].copy_from_slice(&gid.to_bytes());
        }
        b
    }

    fn repr() -> MultiPathRecordRepr {
        let gid = |guid| Gid::new(Gid::DEFAULT_SUBNET_PREFIX, guid);
        MultiPathRecordRepr {
            raw_traffic: false,
            flow_label: 0,
            hop_limit: 0,
            tclass: 0,
            reversible: false,
            numb_path: 2,
            p_key: 0xffff,
            qos_class: 0,
            sl: 0,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            rate_selector: Selector::GreaterThan,
            rate: Rate::from(0),
            packet_life_selector: Selector::GreaterThan,
            packet_life: 0,
            service_id: 0x1122_3344_5566_7788,
            independence_selector: 0,
            sgids: vec![gid(1)],
            dgids: vec![gid(2), gid(3)],
        }
    }

    #[test]
    fn deconstruct() {
        let bytes = bytes();
        let v = MultiPathRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.numb_path(), v.p_key()), (2, 0xffff));
        assert_eq!((v.sgid_count(), v.dgid_count()), (1, 2));
        assert_eq!(
            (v.service_id_msb(), v.service_id_lsb()),
            (0x11, 0x22_3344_5566_7788)
        );
        assert_eq!(MultiPathRecordRepr::parse_bytes(&bytes), Ok(repr()));
    }

    #[test]
    fn construct() {
        let repr = repr();
        let mut out = vec![0xa5; repr.wire_len()];
        repr.emit_bytes(&mut out);
        assert_eq!(out, bytes());
    }

    #[test]
    fn truncated() {
        let bytes = bytes();
        assert_eq!(
            MultiPathRecordRepr::parse_bytes(&bytes[..71]),
            Err(Error::Truncated {
                len: 71,
                needed: 72
            })
        );
        assert_eq!(
            MultiPathRecordRepr::parse_bytes(&bytes[..23]),
            Err(Error::Truncated {
                len: 23,
                needed: 24
            })
        );
    }

    #[test]
    fn eleven_gids_fill_one_mad() {
        assert_eq!(
            MultiPathRecordRepr::HEADER_LEN + 16 * MultiPathRecordRepr::MAX_GIDS_IN_ONE_MAD,
            200
        );
        assert_eq!(MultiPathRecordMask::SERVICE_ID_LSB.0, 1 << 21);
    }
}
