//! Subnet management packets (IBA 14.2.1): the LID-routed and directed-route SMP layouts, and
//! the validated [`SmpRepr`].

use crate::attr::Attribute;
use crate::bits::FieldValue;
use crate::header::{AttributeId, Mad, Method, MgmtClass, Status};
use crate::{Error, Result};

/// The D bit of a directed-route SMP: which way it travels along its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// D = 0: a request, walking InitialPath away from the requester.
    #[default]
    Outbound,
    /// D = 1: a response, walking ReturnPath back.
    Returning,
}

impl FieldValue for Direction {
    const BITS: usize = 1;
    fn from_bits(bits: u128) -> Self {
        if bits == 0 {
            Self::Outbound
        } else {
            Self::Returning
        }
    }
    fn to_bits(self) -> u128 {
        match self {
            Self::Outbound => 0,
            Self::Returning => 1,
        }
    }
}

layout! {
    /// A view of a 256-byte SMP, either kind.
    ///
    /// The common header is reached through [`header`](Self::header); the rows here are the
    /// SMP-specific ones. The directed-route rows (D bit, 15-bit status, HopPointer, HopCount,
    /// DrSLID, DrDLID, both paths) overlay bytes that a LID-routed SMP reserves; which reading
    /// applies is the header's MgmtClass, which [`SmpRepr::parse`] checks.
    pub struct Smp[256];
    {
        /// DR: the D bit (status bit 15).
        direction / set_direction: Direction = 32, 1;
        /// DR: the status word without the D bit.
        dr_status / set_dr_status: Status = 33, 15;
        /// DR: HopPointer, the index of the current hop in the paths.
        hop_pointer / set_hop_pointer: u8 = 48, 8;
        /// DR: HopCount, the number of directed hops (0..=63).
        hop_count / set_hop_count: u8 = 56, 8;
        /// M_Key.
        m_key / set_m_key: u64 = 192, 64;
        /// DR: DrSLID, 0xFFFF unless the route starts with a LID-routed leg.
        dr_slid / set_dr_slid: u16 = 256, 16;
        /// DR: DrDLID, 0xFFFF unless the route ends with a LID-routed leg.
        dr_dlid / set_dr_dlid: u16 = 272, 16;
        /// The 64-byte SMP data area: the attribute.
        data / data_mut: bytes = 512, 512;
        /// DR: InitialPath, the egress port at each hop (entry 0 unused).
        initial_path / initial_path_mut: bytes = 1024, 512;
        /// DR: ReturnPath, the ingress port at each hop, filled in on the way out.
        return_path / return_path_mut: bytes = 1536, 512;
    }
}

impl<T: AsRef<[u8]>> Smp<T> {
    /// The common MAD header in the first 24 bytes.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    /// The common MAD header, writable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
}

/// How an SMP is routed: the part of an SMP that differs between its two classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Routing {
    /// LID-routed (class 0x01). The destination LID is in the transport header, not the MAD.
    Lid,
    /// Directed route (class 0x81).
    Directed(DrPath),
}

/// The directed-route fields of an SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrPath {
    /// The D bit.
    pub direction: Direction,
    /// HopPointer.
    pub hop_pointer: u8,
    /// HopCount, at most [`DrPath::MAX_HOPS`]; [`SmpRepr::parse`] rejects more.
    pub hop_count: u8,
    /// DrSLID.
    pub dr_slid: u16,
    /// DrDLID.
    pub dr_dlid: u16,
    /// InitialPath: entry `i` is the egress port at hop `i`; entry 0 is unused.
    pub initial_path: [u8; 64],
    /// ReturnPath: entry `i` is the ingress port at hop `i`, written by the switches.
    pub return_path: [u8; 64],
}

impl DrPath {
    /// The most hops a path can have: the paths have 64 entries and entry 0 is unused.
    pub const MAX_HOPS: u8 = 63;

    /// The permissive LID, DrSLID and DrDLID of a purely directed route.
    pub const PERMISSIVE_LID: u16 = 0xffff;

    /// The path of a request that leaves through `egress_ports[0]` at the first hop,
    /// `egress_ports[1]` at the second, and so on: D = 0, HopPointer 0, HopCount the number of
    /// ports, DrSLID = DrDLID = 0xFFFF, InitialPath\[0\] unused.
    ///
    /// An empty slice addresses the requester's own node. When the SM runs on a CA, the Linux
    /// kernel requires `egress_ports[0]` to be the SM's own port number.
    pub fn request(egress_ports: &[u8]) -> Result<Self> {
        let hops = egress_ports.len();
        if hops > usize::from(Self::MAX_HOPS) {
            return Err(Error::BadValue {
                field: "hop_count",
                value: hops as u64,
            });
        }
        let mut initial_path = [0; 64];
        initial_path[1..=hops].copy_from_slice(egress_ports);
        Ok(Self {
            direction: Direction::Outbound,
            hop_pointer: 0,
            hop_count: hops as u8,
            dr_slid: Self::PERMISSIVE_LID,
            dr_dlid: Self::PERMISSIVE_LID,
            initial_path,
            return_path: [0; 64],
        })
    }

    /// The egress ports of the route, `initial_path[1..=hop_count]` (the inverse of
    /// [`DrPath::request`]).
    pub fn egress_ports(&self) -> &[u8] {
        &self.initial_path[1..=usize::from(self.hop_count.min(Self::MAX_HOPS))]
    }
}

/// A validated SMP: every meaningful field of the 256 bytes, as values.
///
/// BaseVersion and ClassVersion are always 1 and MgmtClass follows from [`Routing`], so they are
/// checked by [`parse`](Self::parse) and written by [`emit`](Self::emit) rather than stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmpRepr {
    /// Method, R bit included.
    pub method: Method,
    /// Status. For a directed-route SMP, without the D bit (which is [`DrPath::direction`]):
    /// only its low 15 bits are sent.
    pub status: Status,
    /// TransactionID.
    pub transaction_id: u64,
    /// AttributeID.
    pub attribute_id: AttributeId,
    /// AttributeModifier; see the crate's modifier types for the typed forms.
    pub attribute_modifier: u32,
    /// M_Key.
    pub m_key: u64,
    /// LID-routed or directed route, with the DR fields.
    pub routing: Routing,
    /// The SMP data area; [`Attribute::parse`] decodes it.
    pub data: [u8; 64],
}

impl SmpRepr {
    /// A SubnGet request with zero status, M_Key and data.
    pub fn get(
        attribute_id: AttributeId,
        attribute_modifier: u32,
        transaction_id: u64,
        routing: Routing,
    ) -> Self {
        Self {
            method: Method::Get,
            status: Status::OK,
            transaction_id,
            attribute_id,
            attribute_modifier,
            m_key: 0,
            routing,
            data: [0; 64],
        }
    }

    /// A SubnSet request carrying `attribute`, with zero status and M_Key.
    pub fn set(
        attribute: &Attribute,
        attribute_modifier: u32,
        transaction_id: u64,
        routing: Routing,
    ) -> Self {
        Self {
            method: Method::Set,
            data: attribute.to_data(),
            ..Self::get(attribute.id(), attribute_modifier, transaction_id, routing)
        }
    }

    /// Reads an SMP from the bytes of a MAD: [`Smp::new_checked`], then [`SmpRepr::parse`].
    pub fn parse_bytes(mad: &[u8]) -> Result<Self> {
        Self::parse(&Smp::new_checked(mad)?)
    }

    /// Reads an SMP, checking the buffer length, BaseVersion = ClassVersion = 1, that MgmtClass
    /// is 0x01 or 0x81 and, for a directed route, that HopCount is at most 63. Unknown methods
    /// and attributes are kept, not rejected; reserved bytes are ignored.
    pub fn parse<T: AsRef<[u8]>>(smp: &Smp<T>) -> Result<Self> {
        smp.check_len()?;
        let header = smp.header();
        if header.base_version() != 1 {
            return Err(Error::BadValue {
                field: "base_version",
                value: header.base_version().into(),
            });
        }
        if header.class_version() != 1 {
            return Err(Error::BadValue {
                field: "class_version",
                value: header.class_version().into(),
            });
        }
        let (status, routing) = match header.mgmt_class() {
            MgmtClass::SubnLid => (header.status(), Routing::Lid),
            MgmtClass::SubnDirectedRoute => {
                if smp.hop_count() > DrPath::MAX_HOPS {
                    return Err(Error::BadValue {
                        field: "hop_count",
                        value: smp.hop_count().into(),
                    });
                }
                let mut path = DrPath {
                    direction: smp.direction(),
                    hop_pointer: smp.hop_pointer(),
                    hop_count: smp.hop_count(),
                    dr_slid: smp.dr_slid(),
                    dr_dlid: smp.dr_dlid(),
                    initial_path: [0; 64],
                    return_path: [0; 64],
                };
                path.initial_path.copy_from_slice(smp.initial_path());
                path.return_path.copy_from_slice(smp.return_path());
                (smp.dr_status(), Routing::Directed(path))
            }
            other => {
                return Err(Error::BadValue {
                    field: "mgmt_class",
                    value: u8::from(other).into(),
                });
            }
        };
        let mut data = [0; 64];
        data.copy_from_slice(smp.data());
        Ok(Self {
            method: header.method(),
            status,
            transaction_id: header.transaction_id(),
            attribute_id: header.attribute_id(),
            attribute_modifier: header.attribute_modifier(),
            m_key: smp.m_key(),
            routing,
            data,
        })
    }

    /// Writes all 256 bytes of an SMP: every field, and zero in every reserved byte (for a
    /// LID-routed SMP, bytes 32-63 and 128-255 too).
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than 256 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, smp: &mut Smp<T>) {
        smp.clear();
        let mut header = smp.header_mut();
        header.set_base_version(1);
        header.set_class_version(1);
        header.set_method(self.method);
        header.set_transaction_id(self.transaction_id);
        header.set_attribute_id(self.attribute_id);
        header.set_attribute_modifier(self.attribute_modifier);
        match &self.routing {
            Routing::Lid => {
                header.set_mgmt_class(MgmtClass::SubnLid);
                header.set_status(self.status);
            }
            Routing::Directed(path) => {
                header.set_mgmt_class(MgmtClass::SubnDirectedRoute);
                smp.set_direction(path.direction);
                smp.set_dr_status(self.status);
                smp.set_hop_pointer(path.hop_pointer);
                smp.set_hop_count(path.hop_count);
                smp.set_dr_slid(path.dr_slid);
                smp.set_dr_dlid(path.dr_dlid);
                smp.initial_path_mut().copy_from_slice(&path.initial_path);
                smp.return_path_mut().copy_from_slice(&path.return_path);
            }
        }
        smp.set_m_key(self.m_key);
        smp.data_mut().copy_from_slice(&self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A LID-routed SubnGetResp(PortInfo) with every field distinct.
    #[rustfmt::skip]
    static LID_BYTES: [u8; 256] = [
        // 0: BaseVersion 1, MgmtClass 0x01, ClassVersion 1, R=1 method 0x01 (GetResp)
        0x01, 0x01, 0x01, 0x81,
        // 4: Status 0x001c, ClassSpecific (reserved) 0
        0x00, 0x1c, 0x00, 0x00,
        // 8: TransactionID 0x0102030405060708
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        // 16: AttributeID 0x0015 (PortInfo), reserved, AttributeModifier 0x80000005
        0x00, 0x15, 0x00, 0x00, 0x80, 0x00, 0x00, 0x05,
        // 24: M_Key 0x1122334455667788
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
        // 32..64: reserved
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // 64..128: data, 0x40 + i
        0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
        0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
        0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
        0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
        0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67,
        0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f,
        0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77,
        0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f,
        // 128..256: reserved
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    /// A directed-route SubnGetResp(NodeInfo) with every field distinct.
    #[rustfmt::skip]
    static DR_BYTES: [u8; 256] = [
        // 0: BaseVersion 1, MgmtClass 0x81, ClassVersion 1, R=1 method 0x01 (GetResp)
        0x01, 0x81, 0x01, 0x81,
        // 4: D=1 + status 0x001c, HopPointer 2, HopCount 3
        0x80, 0x1c, 0x02, 0x03,
        // 8: TransactionID 0xa1a2a3a4a5a6a7a8
        0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8,
        // 16: AttributeID 0x0011 (NodeInfo), reserved, AttributeModifier 0x00000007
        0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
        // 24: M_Key 0x0807060504030201
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
        // 32: DrSLID 0x1234, DrDLID 0x5678, then reserved to 64
        0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // 64..128: data, 0xc0 + i
        0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
        0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
        0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7,
        0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf,
        0xe0, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7,
        0xe8, 0xe9, 0xea, 0xeb, 0xec, 0xed, 0xee, 0xef,
        0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
        0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
        // 128..192: InitialPath: [0] unused, egress ports 1, 5, 7, rest 0
        0x00, 0x01, 0x05, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // 192..256: ReturnPath: as ibsim fills it, [requester port, ingress at hops 1..3]
        0x01, 0x02, 0x01, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3f,
    ];

    fn pattern(start: u8) -> [u8; 64] {
        core::array::from_fn(|i| start + i as u8)
    }

    fn lid_repr() -> SmpRepr {
        SmpRepr {
            method: Method::GetResp,
            status: Status(0x001c),
            transaction_id: 0x0102_0304_0506_0708,
            attribute_id: AttributeId::PortInfo,
            attribute_modifier: 0x8000_0005,
            m_key: 0x1122_3344_5566_7788,
            routing: Routing::Lid,
            data: pattern(0x40),
        }
    }

    fn dr_repr() -> SmpRepr {
        let mut initial_path = [0; 64];
        initial_path[1..4].copy_from_slice(&[1, 5, 7]);
        let mut return_path = [0; 64];
        return_path[..4].copy_from_slice(&[1, 2, 1, 9]);
        return_path[63] = 0x3f;
        SmpRepr {
            method: Method::GetResp,
            status: Status(0x001c),
            transaction_id: 0xa1a2_a3a4_a5a6_a7a8,
            attribute_id: AttributeId::NodeInfo,
            attribute_modifier: 7,
            m_key: 0x0807_0605_0403_0201,
            routing: Routing::Directed(DrPath {
                direction: Direction::Returning,
                hop_pointer: 2,
                hop_count: 3,
                dr_slid: 0x1234,
                dr_dlid: 0x5678,
                initial_path,
                return_path,
            }),
            data: pattern(0xc0),
        }
    }

    #[test]
    fn deconstruct_lid_routed() {
        let smp = Smp::new_checked(&LID_BYTES[..]).unwrap();
        let header = smp.header();
        assert_eq!(header.base_version(), 1);
        assert_eq!(header.mgmt_class(), MgmtClass::SubnLid);
        assert_eq!(header.class_version(), 1);
        assert_eq!(header.method(), Method::GetResp);
        assert_eq!(header.status(), Status(0x001c));
        assert_eq!(header.class_specific(), 0);
        assert_eq!(header.transaction_id(), 0x0102_0304_0506_0708);
        assert_eq!(header.attribute_id(), AttributeId::PortInfo);
        assert_eq!(header.attribute_modifier(), 0x8000_0005);
        assert_eq!(smp.m_key(), 0x1122_3344_5566_7788);
        assert_eq!(smp.data(), &pattern(0x40));
    }

    #[test]
    fn deconstruct_directed_route() {
        let smp = Smp::new_checked(&DR_BYTES[..]).unwrap();
        let header = smp.header();
        assert_eq!(header.mgmt_class(), MgmtClass::SubnDirectedRoute);
        assert_eq!(header.method(), Method::GetResp);
        assert_eq!(header.status(), Status(0x801c));
        assert_eq!(smp.direction(), Direction::Returning);
        assert_eq!(smp.dr_status(), Status(0x001c));
        assert_eq!(smp.hop_pointer(), 2);
        assert_eq!(smp.hop_count(), 3);
        assert_eq!(header.transaction_id(), 0xa1a2_a3a4_a5a6_a7a8);
        assert_eq!(header.attribute_id(), AttributeId::NodeInfo);
        assert_eq!(header.attribute_modifier(), 7);
        assert_eq!(smp.m_key(), 0x0807_0605_0403_0201);
        assert_eq!(smp.dr_slid(), 0x1234);
        assert_eq!(smp.dr_dlid(), 0x5678);
        assert_eq!(smp.data(), &pattern(0xc0));
        assert_eq!(&smp.initial_path()[..5], &[0, 1, 5, 7, 0]);
        assert_eq!(&smp.return_path()[..5], &[1, 2, 1, 9, 0]);
        assert_eq!(smp.return_path()[63], 0x3f);
    }

    #[test]
    fn construct_directed_route_with_setters() {
        let mut bytes = [0xa5; 256];
        let mut smp = Smp::new_unchecked(&mut bytes[..]);
        smp.clear();
        let mut header = smp.header_mut();
        header.set_base_version(1);
        header.set_mgmt_class(MgmtClass::SubnDirectedRoute);
        header.set_class_version(1);
        header.set_method(Method::GetResp);
        header.set_transaction_id(0xa1a2_a3a4_a5a6_a7a8);
        header.set_attribute_id(AttributeId::NodeInfo);
        header.set_attribute_modifier(7);
        smp.set_direction(Direction::Returning);
        smp.set_dr_status(Status(0x001c));
        smp.set_hop_pointer(2);
        smp.set_hop_count(3);
        smp.set_m_key(0x0807_0605_0403_0201);
        smp.set_dr_slid(0x1234);
        smp.set_dr_dlid(0x5678);
        smp.data_mut().copy_from_slice(&pattern(0xc0));
        smp.initial_path_mut()[1..4].copy_from_slice(&[1, 5, 7]);
        smp.return_path_mut()[..4].copy_from_slice(&[1, 2, 1, 9]);
        smp.return_path_mut()[63] = 0x3f;
        assert_eq!(bytes, DR_BYTES);
    }

    #[test]
    fn parse_lid_routed() {
        let smp = Smp::new_checked(&LID_BYTES[..]).unwrap();
        assert_eq!(SmpRepr::parse(&smp), Ok(lid_repr()));
    }

    #[test]
    fn parse_directed_route() {
        let smp = Smp::new_checked(&DR_BYTES[..]).unwrap();
        assert_eq!(SmpRepr::parse(&smp), Ok(dr_repr()));
    }

    #[test]
    fn emit_lid_routed() {
        let mut bytes = [0xa5; 256];
        lid_repr().emit(&mut Smp::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, LID_BYTES);
    }

    #[test]
    fn emit_directed_route() {
        let mut bytes = [0xa5; 256];
        dr_repr().emit(&mut Smp::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, DR_BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Smp::new_checked(&DR_BYTES[..255]),
            Err(Error::Truncated {
                len: 255,
                needed: 256
            })
        );
        assert_eq!(
            SmpRepr::parse(&Smp::new_unchecked(&DR_BYTES[..24])),
            Err(Error::Truncated {
                len: 24,
                needed: 256
            })
        );
        // A longer buffer (a receive buffer with room to spare) is fine.
        let mut long = DR_BYTES.to_vec();
        long.extend_from_slice(&[0xee; 8]);
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&long[..]).unwrap()),
            Ok(dr_repr())
        );
    }

    #[test]
    fn rejects_more_than_63_hops() {
        let mut bytes = DR_BYTES;
        bytes[7] = 64;
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()),
            Err(Error::BadValue {
                field: "hop_count",
                value: 64
            })
        );
        bytes[7] = 63;
        assert!(SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()).is_ok());
        assert_eq!(
            DrPath::request(&[1; 64]),
            Err(Error::BadValue {
                field: "hop_count",
                value: 64
            })
        );
    }

    #[test]
    fn rejects_other_classes_and_versions() {
        let mut bytes = LID_BYTES;
        bytes[1] = 0x03;
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()),
            Err(Error::BadValue {
                field: "mgmt_class",
                value: 3
            })
        );
        let mut bytes = LID_BYTES;
        bytes[0] = 2;
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()),
            Err(Error::BadValue {
                field: "base_version",
                value: 2
            })
        );
        let mut bytes = LID_BYTES;
        bytes[2] = 2;
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()),
            Err(Error::BadValue {
                field: "class_version",
                value: 2
            })
        );
    }

    #[test]
    fn keeps_unknown_method_and_attribute() {
        let mut bytes = LID_BYTES;
        bytes[3] = 0x7e;
        bytes[16..18].copy_from_slice(&[0xbe, 0xef]);
        let repr = SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.method, Method::Unknown(0x7e));
        assert_eq!(repr.attribute_id, AttributeId::Unknown(0xbeef));
        let mut out = [0; 256];
        repr.emit(&mut Smp::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
    }

    #[test]
    fn lid_routed_parse_ignores_reserved_bytes() {
        let mut bytes = LID_BYTES;
        bytes[6] = 0xff;
        bytes[18] = 0xff;
        bytes[40] = 0xff;
        bytes[200] = 0xff;
        assert_eq!(
            SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()),
            Ok(lid_repr())
        );
    }

    /// The bytes IBA 14.2.2 prescribes for a DR request: SubnGet(NodeInfo) along 0,1,5
    /// (egress port 1 then 5), D = 0, HopPointer 0, DrSLID = DrDLID = 0xFFFF.
    #[test]
    fn directed_get_request() {
        let route = Routing::Directed(DrPath::request(&[1, 5]).unwrap());
        let repr = SmpRepr::get(AttributeId::NodeInfo, 0, 0x0000_0000_1122_3344, route);
        let mut bytes = [0xa5; 256];
        repr.emit(&mut Smp::new_unchecked(&mut bytes[..]));
        let mut expected = [0; 256];
        #[rustfmt::skip]
        expected[..36].copy_from_slice(&[
            0x01, 0x81, 0x01, 0x01,                         // v1, DR, v1, SubnGet
            0x00, 0x00, 0x00, 0x02,                         // D=0 status 0, HopPtr 0, HopCount 2
            0x00, 0x00, 0x00, 0x00, 0x11, 0x22, 0x33, 0x44, // TransactionID
            0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // NodeInfo, modifier 0
            0, 0, 0, 0, 0, 0, 0, 0,                         // M_Key
            0xff, 0xff, 0xff, 0xff,                         // DrSLID, DrDLID
        ]);
        expected[128..131].copy_from_slice(&[0, 1, 5]);
        assert_eq!(bytes, expected);
        let Routing::Directed(path) = repr.routing else {
            unreachable!()
        };
        assert_eq!(path.egress_ports(), &[1, 5]);
    }

    #[test]
    fn lid_routed_set_request_carries_the_attribute() {
        let attribute = Attribute::SlToVlMappingTable(crate::SlToVlMappingTableRepr {
            vls: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 15],
        });
        let repr = SmpRepr::set(&attribute, 0x0305, 9, Routing::Lid);
        assert_eq!(repr.method, Method::Set);
        assert_eq!(repr.attribute_id, AttributeId::SlToVlMappingTable);
        assert_eq!(repr.attribute_modifier, 0x0305);
        assert_eq!(
            &repr.data[..9],
            &[0x01, 0x23, 0x01, 0x23, 0x01, 0x23, 0x01, 0x2f, 0]
        );
        assert_eq!(repr.data[8..], [0; 56]);
    }

    fn any_path() -> impl Strategy<Value = DrPath> {
        (
            any::<bool>(),
            any::<u8>(),
            0..=DrPath::MAX_HOPS,
            any::<u16>(),
            any::<u16>(),
            proptest::collection::vec(any::<u8>(), 128),
        )
            .prop_map(
                |(returning, hop_pointer, hop_count, dr_slid, dr_dlid, paths)| {
                    let mut path = DrPath {
                        direction: if returning {
                            Direction::Returning
                        } else {
                            Direction::Outbound
                        },
                        hop_pointer,
                        hop_count,
                        dr_slid,
                        dr_dlid,
                        initial_path: [0; 64],
                        return_path: [0; 64],
                    };
                    path.initial_path.copy_from_slice(&paths[..64]);
                    path.return_path.copy_from_slice(&paths[64..]);
                    path
                },
            )
    }

    prop_compose! {
        fn any_smp()(
            method: u8,
            status: u16,
            transaction_id: u64,
            attribute_id: u16,
            attribute_modifier: u32,
            m_key: u64,
            path in proptest::option::of(any_path()),
            data in proptest::collection::vec(any::<u8>(), 64),
        ) -> SmpRepr {
            let routing = path.map_or(Routing::Lid, Routing::Directed);
            let status = match routing {
                Routing::Lid => Status(status),
                Routing::Directed(_) => Status(status).without_direction(),
            };
            let mut repr =
                SmpRepr::get(attribute_id.into(), attribute_modifier, transaction_id, routing);
            repr.method = method.into();
            repr.status = status;
            repr.m_key = m_key;
            repr.data.copy_from_slice(&data);
            repr
        }
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_smp()) {
            let mut bytes = [0xa5; 256];
            repr.emit(&mut Smp::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()), Ok(repr));
        }

        #[test]
        fn request_path_round_trip(ports in proptest::collection::vec(any::<u8>(), 0..=63)) {
            let path = DrPath::request(&ports).unwrap();
            prop_assert_eq!(path.egress_ports(), &ports[..]);
            let repr = SmpRepr::get(AttributeId::PortInfo, 0, 1, Routing::Directed(path));
            let mut bytes = [0; 256];
            repr.emit(&mut Smp::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(SmpRepr::parse(&Smp::new_checked(&bytes[..]).unwrap()), Ok(repr));
        }
    }
}
