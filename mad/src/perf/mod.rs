//! Performance management (class 0x04, IBA chapter 16.1): the PerfMgt MAD and the attributes a
//! port's performance management agent (PMA) answers.
//!
//! A PerfMgt MAD is a GMP: the common header, 40 reserved bytes and 192 bytes of data from byte
//! 64 ([`PerfMgtMad`]). Its attribute IDs overlap the SMP ones with other meanings (0x0012 is
//! PortCounters here and SwitchInfo in an SMP), hence [`PerfAttributeId`].
//!
//! Every port-counter attribute starts with the same four bytes ([`CounterHeader`]): PortSelect
//! names the port (0xFF: all of a switch's ports, if the PMA says
//! [`PerfCapabilityMask::ALL_PORT_SELECT`]), and in a Set each CounterSelect bit clears one
//! counter. The counters follow from byte [`COUNTERS_OFFSET`].

pub(crate) mod class_port_info;
pub(crate) mod congestion_counters;
pub(crate) mod optional_counters;
pub(crate) mod port_counters;
pub(crate) mod port_counters_extended;

use crate::header::Mad;

open_enum! {
    /// AttributeID of a PerfMgt MAD (IBA 16.1.2, table 200).
    pub enum PerfAttributeId(u16) {
        /// ClassPortInfo: what the PMA supports.
        ClassPortInfo = 0x0001,
        /// PortSamplesControl.
        PortSamplesControl = 0x0010,
        /// PortSamplesResult.
        PortSamplesResult = 0x0011,
        /// PortCounters: the 32-bit and narrower counters every PMA keeps.
        PortCounters = 0x0012,
        /// PortRcvErrorDetails.
        PortRcvErrorDetails = 0x0015,
        /// PortXmitDiscardDetails.
        PortXmitDiscardDetails = 0x0016,
        /// PortOpRcvCounters.
        PortOpRcvCounters = 0x0017,
        /// PortFlowCtlCounters.
        PortFlowCtlCounters = 0x0018,
        /// PortVLOpPackets.
        PortVlOpPackets = 0x0019,
        /// PortVLOpData.
        PortVlOpData = 0x001a,
        /// PortVLXmitFlowCtlUpdateErrors.
        PortVlXmitFlowCtlUpdateErrors = 0x001b,
        /// PortVLXmitWaitCounters.
        PortVlXmitWaitCounters = 0x001c,
        /// PortCountersExtended: 64-bit data and packet counters.
        PortCountersExtended = 0x001d,
        /// SwPortVLCongestion (switches only).
        SwPortVlCongestion = 0x0030,
        /// PortRcvConCtrl: packets received with FECN or BECN.
        PortRcvConCtrl = 0x0031,
        /// PortSLRcvFECN.
        PortSlRcvFecn = 0x0032,
        /// PortSLRcvBECN.
        PortSlRcvBecn = 0x0033,
        /// PortXmitConCtrl.
        PortXmitConCtrl = 0x0034,
        /// PortVLXmitTimeCong.
        PortVlXmitTimeCong = 0x0035,
        /// PortXmitDataSL: data sent per SL.
        PortXmitDataSl = 0x0036,
        /// PortRcvDataSL: data received per SL.
        PortRcvDataSl = 0x0037,
    }
}

flags! {
    /// The PerfMgt ClassPortInfo CapabilityMask (IBA 16.1.3.1, table 201): optional PMA features.
    /// Bits 0-7 are the ones every class shares.
    pub struct PerfCapabilityMask(u16) {
        /// AllPortSelect: a switch's PMA takes PortSelect 0xFF for all its ports.
        const ALL_PORT_SELECT = 1 << 8;
        /// IsExtendedWidthSupported: PortCountersExtended with every counter.
        const EXTENDED_WIDTH = 1 << 9;
        /// IsExtendedWidthSupportedNoIETF: PortCountersExtended without the unicast and
        /// multicast counters.
        const EXTENDED_WIDTH_NO_IETF = 1 << 10;
        /// IsSamplesOnlySupported.
        const SAMPLES_ONLY = 1 << 11;
        /// PortCounters.PortXmitWait is kept.
        const PORT_XMIT_WAIT = 1 << 12;
        /// IsInhibitLimitedPkeyMulticastConstraintErrors.
        const INHIBIT_LIMITED_PKEY_MULTICAST_CONSTRAINT_ERRORS = 1 << 13;
        /// IsRSFECCountersSupported.
        const RS_FEC_COUNTERS = 1 << 14;
        /// PortCounters.QP1Dropped is kept.
        const QP1_DROPPED = 1 << 15;
    }
}

/// Where the counters of a port-counter attribute start, after PortSelect and CounterSelect.
pub const COUNTERS_OFFSET: usize = 4;

layout! {
    /// A view of a 256-byte PerfMgt MAD. The common header is reached through
    /// [`header`](Self::header); bytes 24-63 are reserved.
    pub struct PerfMgtMad[256];
    {
        /// The 192-byte data area: the attribute.
        data / data_mut: bytes = 512, 1536;
    }
}

impl<T: AsRef<[u8]>> PerfMgtMad<T> {
    /// The common MAD header in the first 24 bytes.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PerfMgtMad<T> {
    /// The common MAD header, writable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
}

layout! {
    /// A view of the four bytes every port-counter attribute starts with (IBA 16.1.4): which
    /// port, and which counters a Set clears. Byte 0 is reserved, or an OpCode in the
    /// per-opcode attributes.
    pub struct CounterHeader[4];
    {
        /// PortSelect: the port whose counters the attribute holds; 0xFF for all of a switch's.
        port_select / set_port_select: u8 = 8, 8;
        /// CounterSelect: in a Set, bit `i` clears counter `i` of the attribute.
        counter_select / set_counter_select: u16 = 16, 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{AttributeId, Method, MgmtClass};

    #[test]
    fn the_data_area_starts_at_byte_64() {
        let mut bytes = [0u8; 256];
        bytes[1] = 0x04;
        bytes[16..18].copy_from_slice(&[0x00, 0x12]);
        bytes[64] = 0xaa;
        bytes[255] = 0xbb;
        let mad = PerfMgtMad::new_checked(&bytes[..]).unwrap();
        assert_eq!(mad.header().mgmt_class(), MgmtClass::PerfMgt);
        assert_eq!(
            PerfAttributeId::from(u16::from(mad.header().attribute_id())),
            PerfAttributeId::PortCounters
        );
        assert_eq!(mad.data().len(), 192);
        assert_eq!((mad.data()[0], mad.data()[191]), (0xaa, 0xbb));
        assert!(PerfMgtMad::new_checked(&bytes[..255]).is_err());

        let mut out = [0u8; 256];
        let mut mad = PerfMgtMad::new_unchecked(&mut out[..]);
        mad.header_mut().set_method(Method::GetResp);
        mad.header_mut()
            .set_attribute_id(AttributeId::from(u16::from(PerfAttributeId::ClassPortInfo)));
        mad.data_mut()[0] = 1;
        assert_eq!((out[3], out[17], out[64]), (0x81, 0x01, 1));
    }

    #[test]
    fn counter_header_is_port_select_and_counter_select() {
        let bytes = [0x5a, 0x07, 0xf0, 0x0f];
        let view = CounterHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!((view.port_select(), view.counter_select()), (7, 0xf00f));
        let mut out = [0x5a, 0, 0, 0];
        let mut view = CounterHeader::new_unchecked(&mut out[..]);
        view.set_port_select(0xff);
        view.set_counter_select(0x1234);
        assert_eq!(out, [0x5a, 0xff, 0x12, 0x34]);
    }

    #[test]
    fn capability_bits_are_named_as_perfquery_prints_them() {
        // ibsim: 0x1200 on a CA, 0x1300 on a switch.
        let ca = PerfCapabilityMask::EXTENDED_WIDTH | PerfCapabilityMask::PORT_XMIT_WAIT;
        assert_eq!(ca.0, 0x1200);
        assert_eq!((ca | PerfCapabilityMask::ALL_PORT_SELECT).0, 0x1300);
        assert_eq!(
            format!("{ca:?}"),
            "PerfCapabilityMask(0x1200: EXTENDED_WIDTH | PORT_XMIT_WAIT)"
        );
    }
}
