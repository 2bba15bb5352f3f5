//! Subnet administration (class 0x03, IBA chapter 15): the SA MAD, its RMPP header, the SA
//! status codes, and the records the SA answers with.
//!
//! An SA MAD is a GMP of 256 bytes on the wire: the common header (24 bytes), the RMPP header
//! (12 bytes, IBA 13.6.2.1), the SM_Key, the AttributeOffset and the ComponentMask (IBA
//! 15.2.1.1), then 200 bytes of data. A GetTable answer holds one SA header and any number of
//! records at a stride of AttributeOffset 8-byte words; when it is longer than one MAD, RMPP
//! (IBA 13.6) carries it as segments that each repeat the header. [`SaMad`] views a whole
//! message of any length, so the same code reads a single MAD and a reassembled answer.
//!
//! SA attribute IDs overlap the SMP ones with other meanings (0x0011 is NodeRecord here and
//! NodeInfo in an SMP), hence [`SaAttributeId`].

#[macro_use]
mod record;
mod class_port_info;
mod guid_info_record;
mod inform_info;
mod inform_info_record;
mod lft_record;
mod link_record;
mod mc_member_record;
mod message;
mod mft_record;
mod multi_path_record;
mod node_record;
mod notice;
mod p_key_table_record;
mod path_record;
mod port_info_record;
mod service_record;
mod sl_to_vl_table_record;
mod sm_info_record;
mod switch_info_record;
mod vl_arb_table_record;

pub use class_port_info::{SaCapabilityMask, SaCapabilityMask2};
pub use guid_info_record::{GuidInfoRecord, GuidInfoRecordMask, GuidInfoRecordRepr};
pub use inform_info::{InformInfo, InformInfoRepr};
pub use inform_info_record::{InformInfoRecord, InformInfoRecordMask, InformInfoRecordRepr};
pub use lft_record::{LftRecord, LftRecordMask, LftRecordRepr};
pub use link_record::{LinkRecord, LinkRecordMask, LinkRecordRepr};
pub use mc_member_record::{JoinState, McMemberRecord, McMemberRecordMask, McMemberRecordRepr};
pub use message::{SaHeaderRepr, SaRecord, emit_sa, parse_sa};
pub use mft_record::{MftRecord, MftRecordMask, MftRecordRepr};
pub use multi_path_record::{MultiPathRecord, MultiPathRecordMask, MultiPathRecordRepr};
pub use node_record::{NodeRecord, NodeRecordMask, NodeRecordRepr};
pub use notice::{SaNotice, SaNoticeRepr};
pub use p_key_table_record::{PKeyTableRecord, PKeyTableRecordMask, PKeyTableRecordRepr};
pub use path_record::{Mtu, PathRecord, PathRecordMask, PathRecordRepr, Rate, Selector};
pub use port_info_record::{PortInfoRecord, PortInfoRecordMask, PortInfoRecordRepr};
pub use record::Record;
pub use service_record::{ServiceRecord, ServiceRecordMask, ServiceRecordRepr};
pub use sl_to_vl_table_record::{SlToVlTableRecord, SlToVlTableRecordMask, SlToVlTableRecordRepr};
pub use sm_info_record::{SmInfoRecord, SmInfoRecordMask, SmInfoRecordRepr};
pub use switch_info_record::{SwitchInfoRecord, SwitchInfoRecordMask, SwitchInfoRecordRepr};
pub use vl_arb_table_record::{VlArbTableRecord, VlArbTableRecordMask, VlArbTableRecordRepr};

use crate::header::{Mad, Status};

open_enum! {
    /// AttributeID of an SA MAD (IBA 15.2.5, table 207).
    pub enum SaAttributeId(u16) {
        /// ClassPortInfo: what the SA supports.
        ClassPortInfo = 0x0001,
        /// Notice: the payload of a Report.
        Notice = 0x0002,
        /// InformInfo: an event subscription.
        InformInfo = 0x0003,
        /// NodeRecord.
        NodeRecord = 0x0011,
        /// PortInfoRecord.
        PortInfoRecord = 0x0012,
        /// SLtoVLMappingTableRecord.
        SlToVlMappingTableRecord = 0x0013,
        /// SwitchInfoRecord.
        SwitchInfoRecord = 0x0014,
        /// LinearForwardingTableRecord.
        LinearForwardingTableRecord = 0x0015,
        /// RandomForwardingTableRecord.
        RandomForwardingTableRecord = 0x0016,
        /// MulticastForwardingTableRecord.
        MulticastForwardingTableRecord = 0x0017,
        /// SMInfoRecord.
        SmInfoRecord = 0x0018,
        /// LinkRecord.
        LinkRecord = 0x0020,
        /// GUIDInfoRecord.
        GuidInfoRecord = 0x0030,
        /// ServiceRecord.
        ServiceRecord = 0x0031,
        /// P_KeyTableRecord.
        PKeyTableRecord = 0x0033,
        /// PathRecord.
        PathRecord = 0x0035,
        /// VLArbitrationTableRecord.
        VlArbitrationTableRecord = 0x0036,
        /// MCMemberRecord.
        McMemberRecord = 0x0038,
        /// TraceRecord.
        TraceRecord = 0x0039,
        /// MultiPathRecord.
        MultiPathRecord = 0x003a,
        /// ServiceAssociationRecord.
        ServiceAssociationRecord = 0x003b,
        /// InformInfoRecord.
        InformInfoRecord = 0x00f3,
    }
}

/// SA status codes: the class-specific bits 15:8 of the status word (IBA 15.2.1.1, table 205).
impl Status {
    /// ERR_NO_RESOURCES: the SA has no room for the request (a new subscription, service...).
    pub const SA_NO_RESOURCES: Self = Self(0x0100);
    /// ERR_REQ_INVALID: the request is inconsistent or names something it may not.
    pub const SA_REQ_INVALID: Self = Self(0x0200);
    /// ERR_NO_RECORDS: a Get matched no record.
    pub const SA_NO_RECORDS: Self = Self(0x0300);
    /// ERR_TOO_MANY_RECORDS: a Get matched more than one record.
    pub const SA_TOO_MANY_RECORDS: Self = Self(0x0400);
    /// ERR_REQ_INVALID_GID: a GID in the request is not on this subnet.
    pub const SA_REQ_INVALID_GID: Self = Self(0x0500);
    /// ERR_REQ_INSUFFICIENT_COMPONENTS: the ComponentMask lacks a component the request needs.
    pub const SA_REQ_INSUFFICIENT_COMPONENTS: Self = Self(0x0600);
    /// ERR_REQ_DENIED: the SA refuses (an alias GUID still in a multicast group).
    pub const SA_REQ_DENIED: Self = Self(0x0700);
}

open_enum! {
    /// RMPPType (IBA 13.6.2.1).
    pub enum RmppType(u8) {
        /// No RMPP: a single MAD outside any transfer.
        None = 0,
        /// DATA: a segment of the message.
        Data = 1,
        /// ACK: the receiver has every segment up to SegmentNumber and opens a window.
        Ack = 2,
        /// STOP: the receiver asks the sender to stop.
        Stop = 3,
        /// ABORT: either side ends the transfer.
        Abort = 4,
    }
}

flags! {
    /// RMPPFlags (IBA 13.6.2.1), the low three bits of byte 26.
    pub struct RmppFlags(u8) {
        /// Active: this MAD is part of an RMPP transfer.
        const ACTIVE = 1 << 0;
        /// First: the first segment.
        const FIRST = 1 << 1;
        /// Last: the last segment.
        const LAST = 1 << 2;
    }
}

/// Where an SA MAD's data starts: after the common, RMPP and SA headers.
pub const SA_HEADER_LEN: usize = 56;
/// The data an SA MAD carries on the wire: 256 - 56 bytes.
pub const SA_DATA_LEN: usize = 200;
/// The SA class version every SA MAD carries.
pub const SA_CLASS_VERSION: u8 = 2;

layout! {
    /// A view of an SA message: the 56-byte header and the data that follows it. The buffer may
    /// be one 256-byte MAD or a whole reassembled RMPP message; the data is everything after the
    /// header ([`data`](Self::data)).
    pub struct SaMad[56];
    {
        /// RMPPVersion: 1 when RMPP is in use, else 0.
        rmpp_version / set_rmpp_version: u8 = 192, 8;
        /// RMPPType.
        rmpp_type / set_rmpp_type: RmppType = 200, 8;
        /// RRespTime (5 bits): the receiver's response time, 0x1f for none.
        rmpp_resp_time / set_rmpp_resp_time: u8 = 208, 5;
        /// RMPPFlags.
        rmpp_flags / set_rmpp_flags: RmppFlags = 213, 3;
        /// RMPPStatus.
        rmpp_status / set_rmpp_status: u8 = 216, 8;
        /// Data1: SegmentNumber in DATA and ACK.
        segment_number / set_segment_number: u32 = 224, 32;
        /// Data2: PayloadLength in DATA, NewWindowLast in ACK.
        payload_length / set_payload_length: u32 = 256, 32;
        /// SM_Key: 0 from an untrusted requester, else the SA's key; 0 in every answer.
        sm_key / set_sm_key: u64 = 288, 64;
        /// AttributeOffset: the stride of the records in the data, in 8-byte words.
        attribute_offset / set_attribute_offset: u16 = 352, 16;
        /// ComponentMask: bit n set = the record's n-th component must match the template.
        component_mask / set_component_mask: u64 = 384, 64;
    }
}

impl<T: AsRef<[u8]>> SaMad<T> {
    /// The common MAD header in the first 24 bytes.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }

    /// SA AttributeID, read from the common header.
    pub fn sa_attribute_id(&self) -> SaAttributeId {
        SaAttributeId::from(u16::from(self.header().attribute_id()))
    }

    /// The data after the header: a request's template record, an answer's records.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[SA_HEADER_LEN..]
    }

    /// The records of an answer: `data` cut at AttributeOffset 8-byte words each, a trailing
    /// part shorter than one stride dropped (as libibumad's `umad_sa` readers count them).
    /// Nothing when AttributeOffset is 0.
    pub fn records(&self) -> impl Iterator<Item = &[u8]> {
        let stride = usize::from(self.attribute_offset()) * 8;
        let data = self.data();
        let count = data.len().checked_div(stride).unwrap_or(0);
        (0..count).map(move |i| &data[i * stride..(i + 1) * stride])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMad<T> {
    /// The common MAD header, writable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }

    /// The data after the header, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[SA_HEADER_LEN..]
    }
}

/// A message as a transport without RMPP carries it (ibsim, umad2sim): at most one MAD. An SA
/// message keeps the whole records that fit in 200 bytes and, where RMPP was Active, gets a
/// valid single-segment RMPP header (version 1, DATA, Active|First|Last, segment 1,
/// PayloadLength 20 + the data kept). Its length stays exact, since clients count the records
/// by it. Any other MAD comes back as it is, cut to 256 bytes.
pub fn single_mad(message: &[u8]) -> Vec<u8> {
    let mut mad = message[..message.len().min(256)].to_vec();
    if mad.len() < SA_HEADER_LEN || mad[1] != u8::from(crate::MgmtClass::SubnAdm) {
        return mad;
    }
    let stride = usize::from(SaMad::new_unchecked(&mad[..]).attribute_offset()) * 8;
    let data = mad.len() - SA_HEADER_LEN;
    let kept = data.checked_div(stride).map_or(data, |n| n * stride);
    if message.len() > 256 {
        mad.truncate(SA_HEADER_LEN + kept);
    }
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    if view.rmpp_flags().contains(RmppFlags::ACTIVE) {
        view.set_rmpp_version(1);
        view.set_rmpp_type(RmppType::Data);
        view.set_rmpp_flags(RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST);
        view.set_segment_number(1);
        view.set_payload_length((SA_DATA_LEN_RMPP_EXTRA + view.data().len()) as u32);
    }
    mad
}

/// What an RMPP PayloadLength counts beyond the SA data: it starts at byte 36, so the SM_Key,
/// AttributeOffset, reserved and ComponentMask bytes (IBA 15.2.1.1) count too.
const SA_DATA_LEN_RMPP_EXTRA: usize = SA_HEADER_LEN - 36;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{AttributeId, Method, MgmtClass};

    /// A GetTableResp of two 8-byte LinkRecords as OpenSM sends it before the kernel's RMPP
    /// rewrites bytes 24-35: Active only, SM_Key 0, AttributeOffset 1.
    #[rustfmt::skip]
    static LINK_TABLE: [u8; 72] = [
        0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00, 0x00, // 0: versions, GetTableResp, status 0
        0x12, 0x34, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, // 8: TID
        0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 16: LinkRecord, modifier 0
        0x01, 0x01, 0x71, 0x00, 0x00, 0x00, 0x00, 0x01, // 24: RMPP v1 DATA, time 14, Active; seg 1
        0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00, // 32: PayloadLength 36; SM_Key
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, // 40: SM_Key; AttributeOffset 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, // 48: ComponentMask 0xf
        0x00, 0x02, 0x01, 0x03, 0x00, 0x05, 0x00, 0x00, // 56: LID 2 port 1 -> port 3 LID 5
        0x00, 0x05, 0x03, 0x01, 0x00, 0x02, 0x00, 0x00, // 64: LID 5 port 3 -> port 1 LID 2
    ];

    #[test]
    fn deconstruct() {
        let mad = SaMad::new_checked(&LINK_TABLE[..]).unwrap();
        assert_eq!(mad.header().mgmt_class(), MgmtClass::SubnAdm);
        assert_eq!(mad.header().method(), Method::GetTableResp);
        assert_eq!(mad.sa_attribute_id(), SaAttributeId::LinkRecord);
        assert_eq!(
            (mad.rmpp_version(), mad.rmpp_type(), mad.rmpp_resp_time()),
            (1, RmppType::Data, 14)
        );
        assert_eq!(mad.rmpp_flags(), RmppFlags::ACTIVE);
        assert_eq!((mad.segment_number(), mad.payload_length()), (1, 36));
        assert_eq!((mad.sm_key(), mad.attribute_offset()), (0, 1));
        assert_eq!(mad.component_mask(), 0xf);
        let records: Vec<_> = mad.records().collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[1], &LINK_TABLE[64..72]);
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 72];
        let mut mad = SaMad::new_unchecked(&mut bytes[..]);
        let mut header = mad.header_mut();
        header.set_base_version(1);
        header.set_mgmt_class(MgmtClass::SubnAdm);
        header.set_class_version(SA_CLASS_VERSION);
        header.set_method(Method::GetTableResp);
        header.set_transaction_id(0x1234_0000_dead_beef);
        header.set_attribute_id(AttributeId::from(u16::from(SaAttributeId::LinkRecord)));
        mad.set_rmpp_version(1);
        mad.set_rmpp_type(RmppType::Data);
        mad.set_rmpp_resp_time(14);
        mad.set_rmpp_flags(RmppFlags::ACTIVE);
        mad.set_segment_number(1);
        mad.set_payload_length(36);
        mad.set_attribute_offset(1);
        mad.set_component_mask(0xf);
        mad.data_mut().copy_from_slice(&LINK_TABLE[56..]);
        assert_eq!(bytes, LINK_TABLE);
    }

    #[test]
    fn records_need_a_stride_and_drop_a_short_tail() {
        let mut bytes = LINK_TABLE.to_vec();
        bytes.extend_from_slice(&[0xff; 7]);
        let mad = SaMad::new_checked(&bytes[..]).unwrap();
        assert_eq!(mad.records().count(), 2);
        bytes[45] = 0;
        let mad = SaMad::new_checked(&bytes[..]).unwrap();
        assert_eq!(mad.records().count(), 0);
        assert!(SaMad::new_checked(&bytes[..55]).is_err());
    }

    #[test]
    fn a_long_answer_is_cut_to_whole_records_with_a_single_segment_header() {
        // Three 72-byte records: two fit in 200 bytes.
        let mut message = vec![0u8; SA_HEADER_LEN + 3 * 72];
        message[..56].copy_from_slice(&LINK_TABLE[..56]);
        message[45] = 9;
        message[56..].fill(0xab);
        let mad = single_mad(&message);
        assert_eq!(mad.len(), SA_HEADER_LEN + 144);
        let view = SaMad::new_checked(&mad[..]).unwrap();
        assert_eq!(
            view.rmpp_flags(),
            RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST
        );
        assert_eq!(
            (view.segment_number(), view.payload_length()),
            (1, 20 + 144)
        );
        assert!(view.data().iter().all(|&b| b == 0xab));
        // One MAD or less keeps its length; Active alone becomes a single whole segment.
        let mut single = LINK_TABLE.to_vec();
        single[26] = 0x77;
        assert_eq!(single_mad(&LINK_TABLE), single);
        // Not SA: untouched but for the cut.
        let mut smp = vec![0x5a; 300];
        smp[1] = 0x81;
        assert_eq!(single_mad(&smp), smp[..256].to_vec());
    }

    #[test]
    fn sa_status_codes_are_the_class_specific_byte() {
        assert_eq!(Status::SA_NO_RECORDS.class_specific(), 3);
        assert_eq!(Status::SA_REQ_INSUFFICIENT_COMPONENTS.0, 0x0600);
        assert!(!Status::SA_TOO_MANY_RECORDS.is_busy());
    }
}
