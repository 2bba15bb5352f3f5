//! A whole SA message as values: [`SaHeaderRepr`] for the 56-byte header, [`SaRecord`] for any
//! record by AttributeID, [`parse_sa`] and [`emit_sa`] between them and bytes.

use super::{
    GuidInfoRecordRepr, InformInfoRecordRepr, InformInfoRepr, LftRecordRepr, LinkRecordRepr,
    McMemberRecordRepr, MftRecordRepr, MultiPathRecordRepr, NodeRecordRepr, PKeyTableRecordRepr,
    PathRecordRepr, PortInfoRecordRepr, Record, RmppFlags, RmppType, SA_CLASS_VERSION, SA_DATA_LEN,
    SA_HEADER_LEN, SaAttributeId, SaMad, SaNoticeRepr, ServiceRecordRepr, SlToVlTableRecordRepr,
    SmInfoRecordRepr, SwitchInfoRecordRepr, VlArbTableRecordRepr,
};
use crate::header::{AttributeId, Method, MgmtClass, Status};
use crate::perf::class_port_info::ClassPortInfoRepr;
use crate::{Error, Result};

/// The 56-byte header of an SA message, every field as a value. BaseVersion (1), MgmtClass
/// (SubnAdm) and ClassVersion (2) are checked by [`parse`](Self::parse) and written by
/// [`emit`](Self::emit) rather than stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHeaderRepr {
    /// Method, R bit included.
    pub method: Method,
    /// Status.
    pub status: Status,
    /// TransactionID.
    pub transaction_id: u64,
    /// AttributeID.
    pub attribute_id: SaAttributeId,
    /// AttributeModifier.
    pub attribute_modifier: u32,
    /// RMPPVersion.
    pub rmpp_version: u8,
    /// RMPPType.
    pub rmpp_type: RmppType,
    /// RRespTime (5 bits).
    pub rmpp_resp_time: u8,
    /// RMPPFlags (3 bits).
    pub rmpp_flags: RmppFlags,
    /// RMPPStatus.
    pub rmpp_status: u8,
    /// SegmentNumber (RMPP Data1).
    pub segment_number: u32,
    /// PayloadLength or NewWindowLast (RMPP Data2).
    pub payload_length: u32,
    /// SM_Key.
    pub sm_key: u64,
    /// AttributeOffset, in 8-byte words.
    pub attribute_offset: u16,
    /// ComponentMask.
    pub component_mask: u64,
}

impl SaHeaderRepr {
    /// Reads the header, checking the length, BaseVersion 1, MgmtClass SubnAdm and
    /// ClassVersion 2. Reserved bytes are ignored.
    pub fn parse<T: AsRef<[u8]>>(mad: &SaMad<T>) -> Result<Self> {
        mad.check_len()?;
        let header = mad.header();
        let expect = |field, found: u8, wanted: u8| {
            if found == wanted {
                Ok(())
            } else {
                Err(Error::BadValue {
                    field,
                    value: found.into(),
                })
            }
        };
        expect("base_version", header.base_version(), 1)?;
        expect(
            "mgmt_class",
            header.mgmt_class().into(),
            MgmtClass::SubnAdm.into(),
        )?;
        expect("class_version", header.class_version(), SA_CLASS_VERSION)?;
        Ok(Self {
            method: header.method(),
            status: header.status(),
            transaction_id: header.transaction_id(),
            attribute_id: mad.sa_attribute_id(),
            attribute_modifier: header.attribute_modifier(),
            rmpp_version: mad.rmpp_version(),
            rmpp_type: mad.rmpp_type(),
            rmpp_resp_time: mad.rmpp_resp_time(),
            rmpp_flags: mad.rmpp_flags(),
            rmpp_status: mad.rmpp_status(),
            segment_number: mad.segment_number(),
            payload_length: mad.payload_length(),
            sm_key: mad.sm_key(),
            attribute_offset: mad.attribute_offset(),
            component_mask: mad.component_mask(),
        })
    }

    /// Writes all 56 bytes of the header, reserved ones zero.
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than 56 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, mad: &mut SaMad<T>) {
        mad.clear();
        let mut header = mad.header_mut();
        header.set_base_version(1);
        header.set_mgmt_class(MgmtClass::SubnAdm);
        header.set_class_version(SA_CLASS_VERSION);
        header.set_method(self.method);
        header.set_status(self.status);
        header.set_transaction_id(self.transaction_id);
        header.set_attribute_id(AttributeId::from(u16::from(self.attribute_id)));
        header.set_attribute_modifier(self.attribute_modifier);
        mad.set_rmpp_version(self.rmpp_version);
        mad.set_rmpp_type(self.rmpp_type);
        mad.set_rmpp_resp_time(self.rmpp_resp_time);
        mad.set_rmpp_flags(self.rmpp_flags);
        mad.set_rmpp_status(self.rmpp_status);
        mad.set_segment_number(self.segment_number);
        mad.set_payload_length(self.payload_length);
        mad.set_sm_key(self.sm_key);
        mad.set_attribute_offset(self.attribute_offset);
        mad.set_component_mask(self.component_mask);
    }
}

/// One (fixed size) record type per variant of [`SaRecord`]: its parse, emit and size.
macro_rules! sa_record_enum {
    ($( $(#[$meta:meta])* $variant:ident($repr:ty), )+) => {
        /// Any SA record, decoded by the AttributeID it came under.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum SaRecord {
            $( $(#[$meta])* $variant($repr), )+
            /// MultiPathRecord (0x003A), the one record without a fixed size.
            MultiPathRecord(MultiPathRecordRepr),
            /// A record this crate does not decode (RandomForwardingTableRecord, TraceRecord, ...),
            /// kept raw.
            Other {
                /// Its AttributeID.
                id: SaAttributeId,
                /// Its bytes as received.
                data: Vec<u8>,
            },
        }

        impl SaRecord {
            /// Decodes `bytes` as the record `id` names. Fails only if `bytes` is shorter than
            /// that record; an AttributeID without a decoder gives [`SaRecord::Other`].
            pub fn parse(id: SaAttributeId, bytes: &[u8]) -> Result<Self> {
                $(
                    if id == <$repr as Record>::ATTRIBUTE_ID {
                        return Ok(Self::$variant(<$repr as Record>::parse_bytes(bytes)?));
                    }
                )+
                if id == MultiPathRecordRepr::ATTRIBUTE_ID {
                    return Ok(Self::MultiPathRecord(MultiPathRecordRepr::parse_bytes(bytes)?));
                }
                Ok(Self::Other { id, data: bytes.to_vec() })
            }

            /// The AttributeID the record is sent under.
            pub fn id(&self) -> SaAttributeId {
                match self {
                    $( Self::$variant(_) => <$repr as Record>::ATTRIBUTE_ID, )+
                    Self::MultiPathRecord(_) => MultiPathRecordRepr::ATTRIBUTE_ID,
                    Self::Other { id, .. } => *id,
                }
            }

            /// How many bytes [`emit`](Self::emit) writes: the record's size, padding included.
            pub fn wire_len(&self) -> usize {
                match self {
                    $( Self::$variant(_) => <$repr as Record>::SIZE, )+
                    Self::MultiPathRecord(record) => record.wire_len(),
                    Self::Other { data, .. } => data.len(),
                }
            }

            /// Writes the record into the first [`wire_len`](Self::wire_len) bytes of `bytes`.
            ///
            /// # Panics
            ///
            /// If `bytes` is shorter than [`wire_len`](Self::wire_len).
            pub fn emit(&self, bytes: &mut [u8]) {
                match self {
                    $( Self::$variant(record) => record.emit_bytes(bytes), )+
                    Self::MultiPathRecord(record) => record.emit_bytes(bytes),
                    Self::Other { data, .. } => bytes[..data.len()].copy_from_slice(data),
                }
            }
        }
    };
}

sa_record_enum! {
    /// ClassPortInfo (0x0001).
    ClassPortInfo(ClassPortInfoRepr),
    /// Notice (0x0002), as a Report carries it.
    Notice(SaNoticeRepr),
    /// InformInfo (0x0003).
    InformInfo(InformInfoRepr),
    /// NodeRecord (0x0011).
    NodeRecord(NodeRecordRepr),
    /// PortInfoRecord (0x0012).
    PortInfoRecord(PortInfoRecordRepr),
    /// SLtoVLMappingTableRecord (0x0013).
    SlToVlTableRecord(SlToVlTableRecordRepr),
    /// SwitchInfoRecord (0x0014).
    SwitchInfoRecord(SwitchInfoRecordRepr),
    /// LinearForwardingTableRecord (0x0015).
    LftRecord(LftRecordRepr),
    /// MulticastForwardingTableRecord (0x0017).
    MftRecord(MftRecordRepr),
    /// SMInfoRecord (0x0018).
    SmInfoRecord(SmInfoRecordRepr),
    /// LinkRecord (0x0020).
    LinkRecord(LinkRecordRepr),
    /// GUIDInfoRecord (0x0030).
    GuidInfoRecord(GuidInfoRecordRepr),
    /// ServiceRecord (0x0031).
    ServiceRecord(ServiceRecordRepr),
    /// P_KeyTableRecord (0x0033).
    PKeyTableRecord(PKeyTableRecordRepr),
    /// PathRecord (0x0035).
    PathRecord(PathRecordRepr),
    /// VLArbitrationTableRecord (0x0036).
    VlArbTableRecord(VlArbTableRecordRepr),
    /// MCMemberRecord (0x0038).
    McMemberRecord(McMemberRecordRepr),
    /// InformInfoRecord (0x00F3).
    InformInfoRecord(InformInfoRecordRepr),
}

/// Parses a whole SA message, one MAD or a reassembled RMPP answer: the header, and the
/// records of the data as the header's AttributeID names them.
///
/// A GetTableResp or GetMultiResp holds the records at a stride of AttributeOffset 8-byte words
/// (none when it is 0, a short tail dropped, as [`SaMad::records`]); any other method holds one
/// record (a request's template, a Get answer, a Report's Notice) at the start of the data.
///
/// Total: for any input it returns, without panicking; the entry point for a fuzz target.
pub fn parse_sa(bytes: &[u8]) -> Result<(SaHeaderRepr, Vec<SaRecord>)> {
    let mad = SaMad::new_checked(bytes)?;
    let header = SaHeaderRepr::parse(&mad)?;
    let records = match header.method {
        Method::GetTableResp | Method::GetMultiResp => mad
            .records()
            .map(|record| SaRecord::parse(header.attribute_id, record))
            .collect::<Result<_>>()?,
        _ => vec![SaRecord::parse(header.attribute_id, mad.data())?],
    };
    Ok((header, records))
}

/// Builds an SA message: `header`, then `records` one after another, each at a stride of the
/// header's AttributeOffset 8-byte words or of its own size if that is longer (a request or a
/// Get answer: one record, whatever AttributeOffset says). The message is at least one MAD (256
/// bytes), zero past the records.
pub fn emit_sa(header: &SaHeaderRepr, records: &[SaRecord]) -> Vec<u8> {
    let stride = usize::from(header.attribute_offset) * 8;
    let step = |record: &SaRecord| record.wire_len().max(stride);
    let data_len: usize = records.iter().map(step).sum();
    let mut bytes = vec![0; SA_HEADER_LEN + data_len.max(SA_DATA_LEN)];
    header.emit(&mut SaMad::new_unchecked(&mut bytes[..]));
    let mut at = SA_HEADER_LEN;
    for record in records {
        record.emit(&mut bytes[at..at + record.wire_len()]);
        at += step(record);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every AttributeID with a fixed-size decoder, and its size.
    const FIXED: [(u16, usize); 18] = [
        (0x01, 72),
        (0x02, 80),
        (0x03, 36),
        (0x11, 112),
        (0x12, 72),
        (0x13, 16),
        (0x14, 24),
        (0x15, 72),
        (0x17, 72),
        (0x18, 32),
        (0x20, 8),
        (0x30, 72),
        (0x31, 176),
        (0x33, 72),
        (0x35, 64),
        (0x36, 72),
        (0x38, 56),
        (0xf3, 64),
    ];

    fn get_table_resp(attribute_id: SaAttributeId, attribute_offset: u16) -> SaHeaderRepr {
        SaHeaderRepr {
            method: Method::GetTableResp,
            status: Status::OK,
            transaction_id: 0x1234_0000_dead_beef,
            attribute_id,
            attribute_modifier: 0,
            rmpp_version: 1,
            rmpp_type: RmppType::Data,
            rmpp_resp_time: 14,
            rmpp_flags: RmppFlags::ACTIVE,
            rmpp_status: 0,
            segment_number: 1,
            payload_length: 36,
            sm_key: 0,
            attribute_offset,
            component_mask: 0xf,
        }
    }

    #[test]
    fn every_record_parses_at_its_size_and_not_one_byte_less() {
        let bytes = [0u8; 200];
        for (id, size) in FIXED {
            let record = SaRecord::parse(id.into(), &bytes[..size]).unwrap();
            assert_eq!((record.id(), record.wire_len()), (id.into(), size));
            assert!(!matches!(record, SaRecord::Other { .. }), "{id:#x}");
            assert_eq!(
                SaRecord::parse(id.into(), &bytes[..size - 1]),
                Err(Error::Truncated {
                    len: size - 1,
                    needed: size
                })
            );
        }
        let other = SaRecord::parse(SaAttributeId::TraceRecord, &bytes[..48]).unwrap();
        assert!(matches!(other, SaRecord::Other { .. }));
        assert_eq!(other.wire_len(), 48);
    }

    /// The golden LinkRecord table of the SaMad tests, through the values both ways.
    #[test]
    fn link_table_both_ways() {
        let links = [
            LinkRecordRepr {
                from_lid: 2,
                from_port: 1,
                to_port: 3,
                to_lid: 5,
            },
            LinkRecordRepr {
                from_lid: 5,
                from_port: 3,
                to_port: 1,
                to_lid: 2,
            },
        ];
        let records: Vec<_> = links.into_iter().map(SaRecord::LinkRecord).collect();
        let header = get_table_resp(SaAttributeId::LinkRecord, 1);
        let bytes = emit_sa(&header, &records);
        assert_eq!(bytes.len(), 256);
        #[rustfmt::skip]
        assert_eq!(bytes[..72], [
            0x01, 0x03, 0x02, 0x92, 0x00, 0x00, 0x00, 0x00,
            0x12, 0x34, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
            0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x01, 0x01, 0x71, 0x00, 0x00, 0x00, 0x00, 0x01,
            0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f,
            0x00, 0x02, 0x01, 0x03, 0x00, 0x05, 0x00, 0x00,
            0x00, 0x05, 0x03, 0x01, 0x00, 0x02, 0x00, 0x00,
        ]);
        // The zero tail of the MAD reads as 23 more all-zero LinkRecords.
        let (parsed, table) = parse_sa(&bytes).unwrap();
        assert_eq!(parsed, header);
        assert_eq!(table.len(), 25);
        assert_eq!(table[..2], records[..]);
        // Reassembled to exactly 56 + 2 * 8 bytes, as the kernel hands it over.
        assert_eq!(parse_sa(&bytes[..72]).unwrap().1, records);
    }

    #[test]
    fn empty_get_table_answer_has_no_records() {
        let bytes = emit_sa(&get_table_resp(SaAttributeId::NodeRecord, 0), &[]);
        assert_eq!(parse_sa(&bytes[..56]).unwrap().1, []);
    }

    #[test]
    fn a_request_carries_one_template() {
        let mut header = get_table_resp(SaAttributeId::PathRecord, 0);
        header.method = Method::Get;
        let template = PathRecordRepr::parse_bytes(&[0; 64]).unwrap();
        let bytes = emit_sa(&header, &[SaRecord::PathRecord(template)]);
        assert_eq!(bytes.len(), 256);
        assert_eq!(
            parse_sa(&bytes),
            Ok((header, vec![SaRecord::PathRecord(template)]))
        );
    }

    #[test]
    fn header_checks_versions_and_class() {
        let good = emit_sa(&get_table_resp(SaAttributeId::LinkRecord, 1), &[]);
        for (at, value, field) in [
            (0, 2, "base_version"),
            (1, 0x01, "mgmt_class"),
            (2, 1, "class_version"),
        ] {
            let mut bad = good.clone();
            bad[at] = value;
            assert_eq!(
                parse_sa(&bad),
                Err(Error::BadValue {
                    field,
                    value: value.into()
                })
            );
        }
        assert_eq!(
            parse_sa(&good[..55]),
            Err(Error::Truncated {
                len: 55,
                needed: 56
            })
        );
    }

    proptest! {
        /// Any bytes at all: an answer, never a panic.
        #[test]
        fn parse_sa_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let _ = parse_sa(&bytes);
        }

        /// Valid SA framing with random contents: always parses, and what it parses to emits
        /// bytes that parse to the same header and records (a table padded to a whole MAD
        /// gains zero records after them).
        #[test]
        fn parse_sa_accepts_valid_framing(
            mut bytes in proptest::collection::vec(any::<u8>(), 56..700),
            table: bool,
            id_index in 0..=FIXED.len(),
        ) {
            // Past FIXED: a MultiPathRecord request, without GIDs so that any length fits.
            let multi_path = id_index == FIXED.len();
            let (id, size) = FIXED.get(id_index).copied().unwrap_or((0x3a, 24));
            let table = table && !multi_path;
            prop_assume!(table || bytes.len() >= 56 + size);
            bytes[..4].copy_from_slice(&[1, 3, 2, if table { 0x92 } else { 0x01 }]);
            bytes[16..18].copy_from_slice(&id.to_be_bytes());
            bytes[44..46].copy_from_slice(&(size as u16).div_ceil(8).to_be_bytes());
            if multi_path {
                bytes[56 + 15..56 + 17].fill(0);
            }
            let (header, records) = parse_sa(&bytes).unwrap();
            let expected = if table { (bytes.len() - 56) / size.next_multiple_of(8) } else { 1 };
            prop_assert_eq!(records.len(), expected);
            let (header_again, records_again) = parse_sa(&emit_sa(&header, &records)).unwrap();
            prop_assert_eq!(header_again, header);
            prop_assert_eq!(&records_again[..records.len()], &records[..]);
        }
    }
}
