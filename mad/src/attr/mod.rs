//! SMP attributes: one module per attribute, each a `layout!` view plus a `Repr` value, and
//! [`Attribute`], which picks the right one by AttributeID.

pub(crate) mod guid_info;
pub(crate) mod linear_forwarding_table;
pub(crate) mod multicast_forwarding_table;
pub(crate) mod node_description;
pub(crate) mod node_info;
pub(crate) mod notice;
pub(crate) mod p_key_table;
pub(crate) mod port_info;
pub(crate) mod sl_to_vl_mapping_table;
pub(crate) mod sm_info;
pub(crate) mod switch_info;
pub(crate) mod vl_arbitration_table;

use crate::Result;
use crate::header::AttributeId;
use guid_info::{GuidInfo, GuidInfoRepr};
use linear_forwarding_table::{LinearForwardingTable, LinearForwardingTableRepr};
use multicast_forwarding_table::{MulticastForwardingTable, MulticastForwardingTableRepr};
use node_description::{NodeDescription, NodeDescriptionRepr};
use node_info::{NodeInfo, NodeInfoRepr};
use notice::{Notice, NoticeRepr};
use p_key_table::{PKeyTable, PKeyTableRepr};
use port_info::{PortInfo, PortInfoRepr};
use sl_to_vl_mapping_table::{SlToVlMappingTable, SlToVlMappingTableRepr};
use sm_info::{SmInfo, SmInfoRepr};
use switch_info::{SwitchInfo, SwitchInfoRepr};
use vl_arbitration_table::{VlArbitrationTable, VlArbitrationTableRepr};

/// The decoded data area of an SMP, by AttributeID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attribute {
    /// Notice (0x0002).
    Notice(NoticeRepr),
    /// NodeDescription (0x0010).
    NodeDescription(NodeDescriptionRepr),
    /// NodeInfo (0x0011).
    NodeInfo(NodeInfoRepr),
    /// SwitchInfo (0x0012).
    SwitchInfo(SwitchInfoRepr),
    /// GUIDInfo (0x0014).
    GuidInfo(GuidInfoRepr),
    /// PortInfo (0x0015).
    PortInfo(PortInfoRepr),
    /// P_KeyTable (0x0016).
    PKeyTable(PKeyTableRepr),
    /// SLtoVLMappingTable (0x0017).
    SlToVlMappingTable(SlToVlMappingTableRepr),
    /// VLArbitrationTable (0x0018).
    VlArbitrationTable(VlArbitrationTableRepr),
    /// LinearForwardingTable (0x0019).
    LinearForwardingTable(LinearForwardingTableRepr),
    /// MulticastForwardingTable (0x001B).
    MulticastForwardingTable(MulticastForwardingTableRepr),
    /// SMInfo (0x0020).
    SmInfo(SmInfoRepr),
    /// Any attribute this crate does not decode, kept raw so that it can still be logged or
    /// forwarded.
    Other {
        /// Its AttributeID.
        id: AttributeId,
        /// The 64-byte SMP data area as received.
        data: [u8; 64],
    },
}

impl Attribute {
    /// Decodes `data` (an SMP data area) as attribute `id`.
    ///
    /// Fails only if `data` is shorter than the attribute; an ID without a decoder gives
    /// [`Attribute::Other`], which needs 64 bytes.
    pub fn parse(id: AttributeId, data: &[u8]) -> Result<Self> {
        Ok(match id {
            AttributeId::Notice => Self::Notice(NoticeRepr::parse(&Notice::new_unchecked(data))?),
            AttributeId::NodeDescription => Self::NodeDescription(NodeDescriptionRepr::parse(
                &NodeDescription::new_unchecked(data),
            )?),
            AttributeId::NodeInfo => {
                Self::NodeInfo(NodeInfoRepr::parse(&NodeInfo::new_unchecked(data))?)
            }
            AttributeId::SwitchInfo => {
                Self::SwitchInfo(SwitchInfoRepr::parse(&SwitchInfo::new_unchecked(data))?)
            }
            AttributeId::GuidInfo => {
                Self::GuidInfo(GuidInfoRepr::parse(&GuidInfo::new_unchecked(data))?)
            }
            AttributeId::PortInfo => {
                Self::PortInfo(PortInfoRepr::parse(&PortInfo::new_unchecked(data))?)
            }
            AttributeId::PKeyTable => {
                Self::PKeyTable(PKeyTableRepr::parse(&PKeyTable::new_unchecked(data))?)
            }
            AttributeId::SlToVlMappingTable => Self::SlToVlMappingTable(
                SlToVlMappingTableRepr::parse(&SlToVlMappingTable::new_unchecked(data))?,
            ),
            AttributeId::VlArbitrationTable => Self::VlArbitrationTable(
                VlArbitrationTableRepr::parse(&VlArbitrationTable::new_unchecked(data))?,
            ),
            AttributeId::LinearForwardingTable => Self::LinearForwardingTable(
                LinearForwardingTableRepr::parse(&LinearForwardingTable::new_unchecked(data))?,
            ),
            AttributeId::MulticastForwardingTable => {
                Self::MulticastForwardingTable(MulticastForwardingTableRepr::parse(
                    &MulticastForwardingTable::new_unchecked(data),
                )?)
            }
            AttributeId::SmInfo => Self::SmInfo(SmInfoRepr::parse(&SmInfo::new_unchecked(data))?),
            id => {
                let raw = data.get(..64).ok_or(crate::Error::Truncated {
                    len: data.len(),
                    needed: 64,
                })?;
                let mut data = [0; 64];
                data.copy_from_slice(raw);
                Self::Other { id, data }
            }
        })
    }

    /// The AttributeID this value is sent under.
    pub fn id(&self) -> AttributeId {
        match self {
            Self::Notice(_) => AttributeId::Notice,
            Self::NodeDescription(_) => AttributeId::NodeDescription,
            Self::NodeInfo(_) => AttributeId::NodeInfo,
            Self::SwitchInfo(_) => AttributeId::SwitchInfo,
            Self::GuidInfo(_) => AttributeId::GuidInfo,
            Self::PortInfo(_) => AttributeId::PortInfo,
            Self::PKeyTable(_) => AttributeId::PKeyTable,
            Self::SlToVlMappingTable(_) => AttributeId::SlToVlMappingTable,
            Self::VlArbitrationTable(_) => AttributeId::VlArbitrationTable,
            Self::LinearForwardingTable(_) => AttributeId::LinearForwardingTable,
            Self::MulticastForwardingTable(_) => AttributeId::MulticastForwardingTable,
            Self::SmInfo(_) => AttributeId::SmInfo,
            Self::Other { id, .. } => *id,
        }
    }

    /// The 64-byte SMP data area carrying this attribute, zero past the attribute's own length.
    pub fn to_data(&self) -> [u8; 64] {
        let mut data = [0; 64];
        let buf = &mut data[..];
        match self {
            Self::Notice(r) => r.emit(&mut Notice::new_unchecked(buf)),
            Self::NodeDescription(r) => r.emit(&mut NodeDescription::new_unchecked(buf)),
            Self::NodeInfo(r) => r.emit(&mut NodeInfo::new_unchecked(buf)),
            Self::SwitchInfo(r) => r.emit(&mut SwitchInfo::new_unchecked(buf)),
            Self::GuidInfo(r) => r.emit(&mut GuidInfo::new_unchecked(buf)),
            Self::PortInfo(r) => r.emit(&mut PortInfo::new_unchecked(buf)),
            Self::PKeyTable(r) => r.emit(&mut PKeyTable::new_unchecked(buf)),
            Self::SlToVlMappingTable(r) => r.emit(&mut SlToVlMappingTable::new_unchecked(buf)),
            Self::VlArbitrationTable(r) => r.emit(&mut VlArbitrationTable::new_unchecked(buf)),
            Self::LinearForwardingTable(r) => {
                r.emit(&mut LinearForwardingTable::new_unchecked(buf))
            }
            Self::MulticastForwardingTable(r) => {
                r.emit(&mut MulticastForwardingTable::new_unchecked(buf))
            }
            Self::SmInfo(r) => r.emit(&mut SmInfo::new_unchecked(buf)),
            Self::Other { data: raw, .. } => buf.copy_from_slice(raw),
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;

    /// Every decoded attribute, given more than enough bytes, parses; given one byte fewer than
    /// it needs, fails with Truncated instead of panicking.
    #[test]
    fn parse_checks_each_attribute_length() {
        let cases = [
            (AttributeId::Notice, 64),
            (AttributeId::NodeDescription, 64),
            (AttributeId::NodeInfo, 40),
            (AttributeId::SwitchInfo, 20),
            (AttributeId::GuidInfo, 64),
            (AttributeId::PortInfo, 64),
            (AttributeId::PKeyTable, 64),
            (AttributeId::SlToVlMappingTable, 8),
            (AttributeId::VlArbitrationTable, 64),
            (AttributeId::LinearForwardingTable, 64),
            (AttributeId::MulticastForwardingTable, 64),
            (AttributeId::SmInfo, 21),
            (AttributeId::LedInfo, 64),
        ];
        let data = [0x5a; 64];
        for (id, needed) in cases {
            let attribute = Attribute::parse(id, &data[..needed]).unwrap();
            assert_eq!(attribute.id(), id);
            assert_eq!(
                Attribute::parse(id, &data[..needed - 1]),
                Err(Error::Truncated {
                    len: needed - 1,
                    needed
                })
            );
        }
    }

    #[test]
    fn unknown_attribute_is_kept_raw() {
        let data: [u8; 64] = core::array::from_fn(|i| i as u8);
        let attribute = Attribute::parse(AttributeId::Unknown(0xbeef), &data).unwrap();
        assert_eq!(
            attribute,
            Attribute::Other {
                id: AttributeId::Unknown(0xbeef),
                data
            }
        );
        assert_eq!(attribute.to_data(), data);
    }

    #[test]
    fn short_attributes_pad_the_data_area_with_zeros() {
        let attribute = Attribute::parse(AttributeId::SlToVlMappingTable, &[0xff; 64]).unwrap();
        let mut expected = [0; 64];
        expected[..8].fill(0xff);
        assert_eq!(attribute.to_data(), expected);
    }

    proptest! {
        /// For every decoded attribute, the bytes it emits parse back to it.
        #[test]
        fn round_trip_through_the_data_area(
            id in proptest::sample::select(
                &[0x02u16, 0x10, 0x11, 0x12, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1b, 0x20, 0x31][..],
            ),
            data in proptest::collection::vec(any::<u8>(), 64),
        ) {
            let attribute = Attribute::parse(id.into(), &data).unwrap();
            prop_assert_eq!(Attribute::parse(id.into(), &attribute.to_data()), Ok(attribute));
        }
    }
}
