//! Congestion control (class 0x21, class version 2, IBA annex A10): the CC MAD and the
//! attributes of a port's congestion control agent (CCA).
//!
//! A CC MAD is a GMP with a layout of its own ([`CcMad`]): the common header, the 64-bit CC_Key
//! at byte 24, 32 bytes of log data from byte 32, and 192 bytes of attribute data from byte 64.
//! Only CongestionLog uses the log data; it runs on into the attribute data
//! ([`CcMad::log_and_data`]).
//!
//! The settings a congestion control manager programs are in `settings`: what a switch marks
//! (SwitchCongestionSetting, per port SwitchPortCongestionSetting), how a CA reacts per SL
//! (CACongestionSetting) and the injection delays it steps through (CongestionControlTable).

pub(crate) mod info;
pub(crate) mod log;
pub(crate) mod settings;

use crate::header::Mad;

/// The class version of every congestion control MAD.
pub const CC_CLASS_VERSION: u8 = 2;

open_enum! {
    /// AttributeID of a congestion control MAD (IBA A10.4.3, table 547).
    pub enum CcAttributeId(u16) {
        /// ClassPortInfo: what the CCA supports.
        ClassPortInfo = 0x0001,
        /// Notice: a congestion control trap.
        Notice = 0x0002,
        /// CongestionInfo: the CCA's capabilities and the CCT blocks a CA keeps.
        CongestionInfo = 0x0011,
        /// CongestionKeyInfo: the CC_Key and its protection.
        CongestionKeyInfo = 0x0012,
        /// CongestionLog: recent congestion events.
        CongestionLog = 0x0013,
        /// SwitchCongestionSetting: how a switch marks FECN.
        SwitchCongestionSetting = 0x0014,
        /// SwitchPortCongestionSetting: per-port overrides, 32 ports a block.
        SwitchPortCongestionSetting = 0x0015,
        /// CACongestionSetting: how a CA reacts to BECN, per SL.
        CaCongestionSetting = 0x0016,
        /// CongestionControlTable: 64 injection delays a block.
        CongestionControlTable = 0x0017,
        /// TimeStamp: the CCA's free-running clock.
        TimeStamp = 0x0018,
    }
}

layout! {
    /// A view of a 256-byte congestion control MAD. The common header is reached through
    /// [`header`](Self::header).
    pub struct CcMad[256];
    {
        /// CC_Key: the key a CCA with a protected key checks.
        cc_key / set_cc_key: u64 = 192, 64;
        /// The 32 bytes of log data (CongestionLog's first 32 bytes; reserved otherwise).
        log_data / log_data_mut: bytes = 256, 256;
        /// The 192-byte attribute data.
        data / data_mut: bytes = 512, 1536;
        /// Log data and attribute data as one 224-byte area: where CongestionLog lies.
        log_and_data / log_and_data_mut: bytes = 256, 1792;
    }
}

impl<T: AsRef<[u8]>> CcMad<T> {
    /// The common MAD header in the first 24 bytes.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> CcMad<T> {
    /// The common MAD header, writable.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{Method, MgmtClass};

    /// The header of a CACongestionSetting Set as OpenSM sends it: class 0x21, version 2, its
    /// first TID 0x7A93, CC_Key 0x0102030405060708.
    #[rustfmt::skip]
    const SET_HEADER: [u8; 32] = [
        0x01, 0x21, 0x02, 0x02,                         // BaseVersion, class, version, Set
        0x00, 0x00, 0x00, 0x00,                         // status, class specific
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7a, 0x93, // TID
        0x00, 0x16, 0x00, 0x00,                         // CACongestionSetting, reserved
        0x00, 0x00, 0x00, 0x00,                         // attribute modifier
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // CC_Key at byte 24
    ];

    #[test]
    fn the_key_sits_at_byte_24_the_log_at_32_and_the_data_at_64() {
        let mut bytes = [0u8; 256];
        bytes[..32].copy_from_slice(&SET_HEADER);
        bytes[32] = 0x11;
        bytes[63] = 0x22;
        bytes[64] = 0xaa;
        bytes[255] = 0xbb;
        let mad = CcMad::new_checked(&bytes[..]).unwrap();
        let header = mad.header();
        assert_eq!(header.mgmt_class(), MgmtClass::CongestionControl);
        assert_eq!(
            (header.class_version(), header.method()),
            (CC_CLASS_VERSION, Method::Set)
        );
        assert_eq!(
            CcAttributeId::from(u16::from(header.attribute_id())),
            CcAttributeId::CaCongestionSetting
        );
        assert_eq!(mad.cc_key(), 0x0102_0304_0506_0708);
        assert_eq!(mad.log_data().len(), 32);
        assert_eq!((mad.log_data()[0], mad.log_data()[31]), (0x11, 0x22));
        assert_eq!(mad.data().len(), 192);
        assert_eq!((mad.data()[0], mad.data()[191]), (0xaa, 0xbb));
        assert_eq!(mad.log_and_data().len(), 224);
        assert_eq!(
            (mad.log_and_data()[0], mad.log_and_data()[32]),
            (0x11, 0xaa)
        );
        assert!(CcMad::new_checked(&bytes[..255]).is_err());

        let mut out = [0u8; 256];
        let mut mad = CcMad::new_unchecked(&mut out[..]);
        mad.set_cc_key(0x0102_0304_0506_0708);
        assert_eq!(out[24..32], SET_HEADER[24..32]);
    }
}
