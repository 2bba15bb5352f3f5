//! The common MAD header (IBA 13.4.2), shared by every management class, and the values in it.

use crate::bits::FieldValue;

open_enum! {
    /// Management class (header byte 1): which agent a MAD is for and, for SMPs, how it is routed.
    pub enum MgmtClass(u8) {
        /// LID-routed SMP.
        SubnLid = 0x01,
        /// Subnet administration (SA) GMP.
        SubnAdm = 0x03,
        /// Performance management GMP.
        PerfMgt = 0x04,
        /// Congestion control GMP.
        CongestionControl = 0x21,
        /// Directed-route SMP.
        SubnDirectedRoute = 0x81,
    }
}

open_enum! {
    /// Method (header byte 3), R bit included, so a response is its request value `| 0x80`.
    ///
    /// The values are shared across classes, so the variants carry the class-neutral IBA names:
    /// in an SMP, `Get` is SubnGet, `GetResp` SubnGetResp, `Trap` SubnTrap and `TrapRepress`
    /// SubnTrapRepress; in SA, `Get` is SubnAdmGet and so on. The `GetTable` family exists only
    /// in SA.
    pub enum Method(u8) {
        /// SubnGet / SubnAdmGet.
        Get = 0x01,
        /// SubnSet / SubnAdmSet.
        Set = 0x02,
        /// Send (unacknowledged datagram).
        Send = 0x03,
        /// SubnTrap: an unsolicited notice from an SMA.
        Trap = 0x05,
        /// SubnAdmReport: SA forwards an event to a subscriber.
        Report = 0x06,
        /// SubnTrapRepress: the SM tells an SMA to stop repeating a trap.
        TrapRepress = 0x07,
        /// SubnAdmGetTable.
        GetTable = 0x12,
        /// SubnAdmGetTraceTable.
        GetTraceTable = 0x13,
        /// SubnAdmGetMulti.
        GetMulti = 0x14,
        /// SubnAdmDelete.
        Delete = 0x15,
        /// SubnGetResp / SubnAdmGetResp (also the answer to a Set).
        GetResp = 0x81,
        /// SubnAdmReportResp.
        ReportResp = 0x86,
        /// SubnAdmGetTableResp.
        GetTableResp = 0x92,
        /// SubnAdmGetMultiResp.
        GetMultiResp = 0x94,
        /// SubnAdmDeleteResp.
        DeleteResp = 0x95,
    }
}

impl Method {
    /// Whether the R (response) bit, the most significant bit of the method byte, is set.
    pub fn is_response(self) -> bool {
        u8::from(self) & 0x80 != 0
    }

    /// The method of the response to a request with this method (IBA 13.4.5, 15.2.5): Get and
    /// Set are answered with GetResp, GetTraceTable with GetTableResp, any other with its own
    /// value and the R bit set (as OpenSM's `osm_sa_send_error` builds it).
    pub fn response(self) -> Method {
        match self {
            Method::Get | Method::Set => Method::GetResp,
            Method::GetTraceTable => Method::GetTableResp,
            other => Method::from(u8::from(other) | 0x80),
        }
    }
}

open_enum! {
    /// Attribute ID (header bytes 16-17): what the MAD's data area holds.
    pub enum AttributeId(u16) {
        /// ClassPortInfo (every class).
        ClassPortInfo = 0x0001,
        /// Notice: the payload of a trap.
        Notice = 0x0002,
        /// NodeDescription: 64 bytes of text.
        NodeDescription = 0x0010,
        /// NodeInfo.
        NodeInfo = 0x0011,
        /// SwitchInfo.
        SwitchInfo = 0x0012,
        /// GUIDInfo: a block of 8 port GUIDs.
        GuidInfo = 0x0014,
        /// PortInfo.
        PortInfo = 0x0015,
        /// P_KeyTable: a block of 32 partition keys.
        PKeyTable = 0x0016,
        /// SLtoVLMappingTable.
        SlToVlMappingTable = 0x0017,
        /// VLArbitrationTable: a block of 32 entries.
        VlArbitrationTable = 0x0018,
        /// LinearForwardingTable: a block of 64 egress ports.
        LinearForwardingTable = 0x0019,
        /// RandomForwardingTable.
        RandomForwardingTable = 0x001a,
        /// MulticastForwardingTable.
        MulticastForwardingTable = 0x001b,
        /// LinkSpeedWidthPairsTable.
        LinkSpeedWidthPairsTable = 0x001c,
        /// VendorMADsTable.
        VendorMadsTable = 0x001d,
        /// SMInfo.
        SmInfo = 0x0020,
        /// VendorDiag.
        VendorDiag = 0x0030,
        /// LedInfo.
        LedInfo = 0x0031,
        /// PortInfoExtended.
        PortInfoExtended = 0x0033,
        /// Mellanox ExtendedPortInfo (vendor range).
        MlnxExtendedPortInfo = 0xff90,
    }
}

/// The 16-bit MAD status word (IBA 13.4.7; bit 0 is the least significant bit).
///
/// In a directed-route SMP the top bit is the D (direction) bit, not status: a successful DR
/// response carries 0x8000. [`SmpRepr`](crate::SmpRepr) and the [`Smp`](crate::Smp) view's
/// `dr_status` already leave it out; for a raw word, use [`Status::without_direction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Status(pub u16);

impl Status {
    /// No error.
    pub const OK: Self = Self(0);
    /// Invalid field 1: the class version is not supported.
    pub const BAD_VERSION: Self = Self(1 << Self::INVALID_FIELD_SHIFT);
    /// Invalid field 2: the method is not supported (e.g. Set NodeInfo).
    pub const METHOD_UNSUPPORTED: Self = Self(2 << Self::INVALID_FIELD_SHIFT);
    /// Invalid field 3: the method/attribute combination is not supported (an attribute the
    /// agent does not implement).
    pub const METHOD_ATTRIBUTE_UNSUPPORTED: Self = Self(3 << Self::INVALID_FIELD_SHIFT);
    /// Invalid field 7: a bad attribute modifier or field value.
    pub const INVALID_VALUE: Self = Self(7 << Self::INVALID_FIELD_SHIFT);
    const BUSY: u16 = 1 << 0;
    const REDIRECT: u16 = 1 << 1;
    const INVALID_FIELD_SHIFT: u32 = 2;
    const INVALID_FIELD_MASK: u16 = 0b111 << Self::INVALID_FIELD_SHIFT;
    const DIRECTION: u16 = 1 << 15;

    /// Busy (GMPs only): the agent could not take the request now.
    pub fn is_busy(self) -> bool {
        self.0 & Self::BUSY != 0
    }

    /// Redirect required (GMPs only).
    pub fn is_redirect(self) -> bool {
        self.0 & Self::REDIRECT != 0
    }

    /// Bits 4:2, the invalid-field code: why the responder rejected the request.
    pub fn invalid_field(self) -> InvalidField {
        InvalidField::from(((self.0 & Self::INVALID_FIELD_MASK) >> Self::INVALID_FIELD_SHIFT) as u8)
    }

    /// Bits 15:8, class specific (the SA status code; the D bit in a DR SMP).
    pub fn class_specific(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// The word with the DR SMP direction bit (bit 15) cleared: `status & 0x7fff`.
    pub fn without_direction(self) -> Self {
        Self(self.0 & !Self::DIRECTION)
    }

    /// What a non-zero status means, in a few words for a person (IBA 13.4.7, table 113): the
    /// invalid-field code if there is one, else busy, else the class-specific bits.
    pub fn describe(self) -> &'static str {
        match self.invalid_field() {
            InvalidField::None if self.is_busy() => "busy",
            InvalidField::None => "class-specific error",
            InvalidField::BadVersion => "bad base or class version",
            InvalidField::MethodUnsupported => "method not supported",
            InvalidField::MethodAttributeUnsupported => {
                "method/attribute combination not supported"
            }
            InvalidField::InvalidValue => "invalid attribute or modifier value",
            InvalidField::Unknown(_) => "reserved invalid-field code",
        }
    }
}

impl FieldValue for Status {
    const BITS: usize = 16;
    fn from_bits(bits: u128) -> Self {
        Self(bits as u16)
    }
    fn to_bits(self) -> u128 {
        self.0.into()
    }
}

open_enum! {
    /// The invalid-field code in status bits 4:2.
    pub enum InvalidField(u8) {
        /// No invalid field.
        None = 0,
        /// Bad BaseVersion or ClassVersion (status 0x0004).
        BadVersion = 1,
        /// Method not supported (0x0008).
        MethodUnsupported = 2,
        /// Method/attribute combination not supported (0x000C).
        MethodAttributeUnsupported = 3,
        /// Invalid value in the attribute or its modifier (0x001C).
        InvalidValue = 7,
    }
}

layout! {
    /// A view of the common MAD header: the first 24 bytes of every MAD (bytes 18-19 are
    /// reserved).
    ///
    /// On its own it reads a MAD of any class, or the bare 24-byte header the kernel hands back
    /// for a request that timed out. Inside an SMP, reach it with
    /// [`Smp::header`](crate::Smp::header).
    pub struct Mad[24];
    {
        /// BaseVersion: 1 for every IB MAD.
        base_version / set_base_version: u8 = 0, 8;
        /// MgmtClass.
        mgmt_class / set_mgmt_class: MgmtClass = 8, 8;
        /// ClassVersion: 1 for SMPs.
        class_version / set_class_version: u8 = 16, 8;
        /// Method, R bit included.
        method / set_method: Method = 24, 8;
        /// Status, all 16 bits (a DR SMP's D bit included).
        status / set_status: Status = 32, 16;
        /// ClassSpecific (reserved in a LID-routed SMP; HopPointer and HopCount in a DR SMP).
        class_specific / set_class_specific: u16 = 48, 16;
        /// TransactionID.
        transaction_id / set_transaction_id: u64 = 64, 64;
        /// AttributeID.
        attribute_id / set_attribute_id: AttributeId = 128, 16;
        /// AttributeModifier.
        attribute_modifier / set_attribute_modifier: u32 = 160, 32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GMP header with every field distinct; the class is PerfMgt to show that the view does not
    /// care.
    #[rustfmt::skip]
    static HEADER: [u8; 24] = [
        0x01,                                           // BaseVersion
        0x04,                                           // MgmtClass: PerfMgt
        0x02,                                           // ClassVersion
        0x92,                                           // R=1, method 0x12: GetTableResp
        0x03, 0x1c,                                     // Status
        0x5a, 0x6b,                                     // ClassSpecific
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // TransactionID
        0x00, 0x19,                                     // AttributeID: LinearForwardingTable
        0x00, 0x00,                                     // reserved
        0x80, 0x00, 0x01, 0x2c,                         // AttributeModifier
    ];

    #[test]
    fn deconstruct() {
        let mad = Mad::new_checked(&HEADER[..]).unwrap();
        assert_eq!(mad.base_version(), 1);
        assert_eq!(mad.mgmt_class(), MgmtClass::PerfMgt);
        assert_eq!(mad.class_version(), 2);
        assert_eq!(mad.method(), Method::GetTableResp);
        assert!(mad.method().is_response());
        assert_eq!(mad.status(), Status(0x031c));
        assert_eq!(mad.class_specific(), 0x5a6b);
        assert_eq!(mad.transaction_id(), 0x0102_0304_0506_0708);
        assert_eq!(mad.attribute_id(), AttributeId::LinearForwardingTable);
        assert_eq!(mad.attribute_modifier(), 0x8000_012c);
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 24];
        let mut mad = Mad::new_unchecked(&mut bytes[..]);
        mad.clear();
        mad.set_base_version(1);
        mad.set_mgmt_class(MgmtClass::PerfMgt);
        mad.set_class_version(2);
        mad.set_method(Method::GetTableResp);
        mad.set_status(Status(0x031c));
        mad.set_class_specific(0x5a6b);
        mad.set_transaction_id(0x0102_0304_0506_0708);
        mad.set_attribute_id(AttributeId::LinearForwardingTable);
        mad.set_attribute_modifier(0x8000_012c);
        assert_eq!(bytes, HEADER);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Mad::new_checked(&HEADER[..23]),
            Err(crate::Error::Truncated {
                len: 23,
                needed: 24
            })
        );
    }

    #[test]
    fn response_methods() {
        let answers = [
            (Method::Get, Method::GetResp),
            (Method::Set, Method::GetResp),
            (Method::Report, Method::ReportResp),
            (Method::GetTable, Method::GetTableResp),
            (Method::GetTraceTable, Method::GetTableResp),
            (Method::GetMulti, Method::GetMultiResp),
            (Method::Delete, Method::DeleteResp),
        ];
        for (request, response) in answers {
            assert_eq!(request.response(), response, "{request:?}");
            assert!(response.is_response());
        }
    }

    #[test]
    fn status_codes() {
        // The four codes ibsim returns, and a DR response's D bit.
        assert_eq!(Status(0x0000).invalid_field(), InvalidField::None);
        assert_eq!(
            Status(0x0008).invalid_field(),
            InvalidField::MethodUnsupported
        );
        assert_eq!(
            Status(0x000c).invalid_field(),
            InvalidField::MethodAttributeUnsupported
        );
        assert_eq!(Status(0x001c).invalid_field(), InvalidField::InvalidValue);
        let named = [
            (Status::BAD_VERSION, 0x0004, InvalidField::BadVersion),
            (
                Status::METHOD_UNSUPPORTED,
                0x0008,
                InvalidField::MethodUnsupported,
            ),
            (
                Status::METHOD_ATTRIBUTE_UNSUPPORTED,
                0x000c,
                InvalidField::MethodAttributeUnsupported,
            ),
            (Status::INVALID_VALUE, 0x001c, InvalidField::InvalidValue),
        ];
        for (status, raw, field) in named {
            assert_eq!((status, status.invalid_field()), (Status(raw), field));
        }
        assert_eq!(Status(0x0010).invalid_field(), InvalidField::Unknown(4));
        assert_eq!(Status(0x801c).without_direction(), Status(0x001c));
        assert_eq!(Status(0x8000).without_direction(), Status::OK);
        assert_eq!(Status(0x8000).class_specific(), 0x80);
        assert_eq!(Status(0x0300).class_specific(), 3);
        assert!(Status(0x0001).is_busy() && !Status(0x0001).is_redirect());
        assert!(Status(0x0002).is_redirect() && !Status(0x0002).is_busy());
    }

    #[test]
    fn status_descriptions() {
        let described = [0x0001, 0x0100, 0x0004, 0x0008, 0x000c, 0x001c, 0x0014]
            .map(|raw| Status(raw).describe());
        assert_eq!(
            described,
            [
                "busy",
                "class-specific error",
                "bad base or class version",
                "method not supported",
                "method/attribute combination not supported",
                "invalid attribute or modifier value",
                "reserved invalid-field code",
            ]
        );
    }

    #[test]
    fn unknown_values_are_kept() {
        assert_eq!(Method::from(0x7f), Method::Unknown(0x7f));
        assert_eq!(u8::from(Method::Unknown(0x7f)), 0x7f);
        assert_eq!(AttributeId::from(0x1234), AttributeId::Unknown(0x1234));
        assert_eq!(MgmtClass::from(0x0a), MgmtClass::Unknown(0x0a));
        assert!(!Method::Set.is_response());
    }

    #[test]
    fn names_are_the_variants_and_unknown_values_are_hex() {
        assert_eq!(
            AttributeId::SlToVlMappingTable.to_string(),
            "SlToVlMappingTable"
        );
        assert_eq!(AttributeId::Unknown(0xff12).to_string(), "0xff12");
        assert_eq!(Method::GetResp.to_string(), "GetResp");
        assert_eq!(Method::Unknown(0x7f).to_string(), "0x7f");
        assert_eq!(MgmtClass::Unknown(0x0a).to_string(), "0x0a");
    }

    #[test]
    fn order_and_equality_are_the_raw_values() {
        assert_eq!(Method::Unknown(0x01), Method::Get);
        let mut ids = [
            AttributeId::Unknown(0x0013),
            AttributeId::PortInfo,
            AttributeId::Unknown(0x0003),
            AttributeId::NodeInfo,
        ];
        ids.sort();
        assert_eq!(
            ids.map(u16::from),
            [0x0003, 0x0011, 0x0013, 0x0015],
            "Unknown sorts by value, not last"
        );
    }
}
