//! ServiceRecord (SA attribute 0x0031, IBA 15.2.5.14): a service a port registers with the SA
//! and others look up.

use super::{Record, SaAttributeId};
use crate::Result;
use crate::vocabulary::Gid;

layout! {
    /// A view of a ServiceRecord (176 bytes; bytes 26-27 are reserved).
    pub struct ServiceRecord[176];
    {
        /// ServiceID.
        id / set_id: u64 = 0, 64;
        /// ServiceGID: the port that offers the service.
        gid / set_gid: Gid = 64, 128;
        /// ServiceP_Key.
        p_key / set_p_key: u16 = 192, 16;
        /// ServiceLease in seconds; [`ServiceRecordRepr::INFINITE_LEASE`] never expires.
        lease / set_lease: u32 = 224, 32;
        /// ServiceKey.
        key / key_mut: bytes = 256, 128;
        /// ServiceName: text, NUL padded.
        name / name_mut: bytes = 384, 512;
        /// ServiceData8 entry `index`.
        data8 / set_data8: u8[16] = 896, 8, 8;
        /// ServiceData16 entry `index`.
        data16 / set_data16: u16[8] = 1024, 16, 16;
        /// ServiceData32 entry `index`.
        data32 / set_data32: u32[4] = 1152, 32, 32;
        /// ServiceData64 entry `index`.
        data64 / set_data64: u64[2] = 1280, 64, 64;
    }
}

/// A ServiceRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceRecordRepr {
    /// ServiceID.
    pub id: u64,
    /// ServiceGID.
    pub gid: Gid,
    /// ServiceP_Key.
    pub p_key: u16,
    /// ServiceLease in seconds.
    pub lease: u32,
    /// ServiceKey (zeroed in answers to untrusted requesters).
    pub key: [u8; 16],
    /// ServiceName.
    pub name: [u8; 64],
    /// ServiceData8.
    pub data8: [u8; 16],
    /// ServiceData16.
    pub data16: [u16; 8],
    /// ServiceData32.
    pub data32: [u32; 4],
    /// ServiceData64.
    pub data64: [u64; 2],
}

impl ServiceRecordRepr {
    /// The record's size in bytes.
    pub const SIZE: usize = 176;
    /// The AttributeID the SA sends it under.
    pub const ATTRIBUTE_ID: SaAttributeId = SaAttributeId::ServiceRecord;
    /// A ServiceLease that never expires.
    pub const INFINITE_LEASE: u32 = u32::MAX;

    /// Reads every field, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &ServiceRecord<T>) -> Result<Self> {
        view.check_len()?;
        let mut key = [0; 16];
        key.copy_from_slice(view.key());
        let mut name = [0; 64];
        name.copy_from_slice(view.name());
        Ok(Self {
            id: view.id(),
            gid: view.gid(),
            p_key: view.p_key(),
            lease: view.lease(),
            key,
            name,
            data8: core::array::from_fn(|i| view.data8(i)),
            data16: core::array::from_fn(|i| view.data16(i)),
            data32: core::array::from_fn(|i| view.data32(i)),
            data64: core::array::from_fn(|i| view.data64(i)),
        })
    }

    /// Writes all 176 bytes, reserved ones zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut ServiceRecord<T>) {
        view.clear();
        view.set_id(self.id);
        view.set_gid(self.gid);
        view.set_p_key(self.p_key);
        view.set_lease(self.lease);
        view.key_mut().copy_from_slice(&self.key);
        view.name_mut().copy_from_slice(&self.name);
        for (i, &value) in self.data8.iter().enumerate() {
            view.set_data8(i, value);
        }
        for (i, &value) in self.data16.iter().enumerate() {
            view.set_data16(i, value);
        }
        for (i, &value) in self.data32.iter().enumerate() {
            view.set_data32(i, value);
        }
        for (i, &value) in self.data64.iter().enumerate() {
            view.set_data64(i, value);
        }
    }
}

impl Record for ServiceRecordRepr {
    const ATTRIBUTE_ID: SaAttributeId = Self::ATTRIBUTE_ID;
    const SIZE: usize = Self::SIZE;

    fn parse_bytes(bytes: &[u8]) -> Result<Self> {
        Self::parse(&ServiceRecord::new_unchecked(bytes))
    }

    fn emit_bytes(&self, bytes: &mut [u8]) {
        self.emit(&mut ServiceRecord::new_unchecked(bytes));
    }
}

flags! {
    /// ServiceRecord ComponentMask bits (include/iba/ib_types.h:2651-2687); the data arrays'
    /// entries have one bit each, from [`data8`](Self::data8) and its siblings.
    pub struct ServiceRecordMask(u64) {
        /// ServiceID.
        const ID = 1 << 0;
        /// ServiceGID.
        const GID = 1 << 1;
        /// ServiceP_Key.
        const P_KEY = 1 << 2;
        /// ServiceLease.
        const LEASE = 1 << 4;
        /// ServiceKey.
        const KEY = 1 << 5;
        /// ServiceName.
        const NAME = 1 << 6;
    }
}

impl ServiceRecordMask {
    /// The bit of ServiceData8 entry `index` (0..16).
    pub const fn data8(index: u32) -> Self {
        Self(1 << (7 + index))
    }

    /// The bit of ServiceData16 entry `index` (0..8).
    pub const fn data16(index: u32) -> Self {
        Self(1 << (23 + index))
    }

    /// The bit of ServiceData32 entry `index` (0..4).
    pub const fn data32(index: u32) -> Self {
        Self(1 << (31 + index))
    }

    /// The bit of ServiceData64 entry `index` (0..2).
    pub const fn data64(index: u32) -> Self {
        Self(1 << (35 + index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// Every field distinct: ServiceData8 i = 0x80 + i, Data16 i = 0x1600 + i, Data32 i =
    /// 0x3200_0000 + i, Data64 i = 0x6400..00 + i.
    fn bytes() -> [u8; 176] {
        let mut b = [0; 176];
        b[..8].copy_from_slice(&0x0002_c903_0000_abcd_u64.to_be_bytes());
        b[8..24].copy_from_slice(&0xfe80_0000_0000_0000_0002_c903_0000_0001_u128.to_be_bytes());
        b[24..26].copy_from_slice(&[0xff, 0xff]);
        b[28..32].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        b[32..48].copy_from_slice(&[0x11; 16]);
        b[48..52].copy_from_slice(b"DAPL");
        for i in 0..16 {
            b[112 + i] = 0x80 + i as u8;
        }
        for i in 0..8 {
            b[128 + 2 * i..130 + 2 * i].copy_from_slice(&(0x1600 + i as u16).to_be_bytes());
        }
        for i in 0..4 {
            b[144 + 4 * i..148 + 4 * i].copy_from_slice(&(0x3200_0000 + i as u32).to_be_bytes());
        }
        for i in 0..2 {
            b[160 + 8 * i..168 + 8 * i]
                .copy_from_slice(&(0x6400_0000_0000_0000 + i as u64).to_be_bytes());
        }
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = ServiceRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!(v.id(), 0x0002_c903_0000_abcd);
        assert_eq!(v.gid().to_string(), "fe80::2:c903:0:1");
        assert_eq!(
            (v.p_key(), v.lease()),
            (0xffff, ServiceRecordRepr::INFINITE_LEASE)
        );
        assert_eq!(&v.name()[..5], b"DAPL\0");
        assert_eq!((v.data8(15), v.data16(7)), (0x8f, 0x1607));
        assert_eq!(
            (v.data32(3), v.data64(1)),
            (0x3200_0003, 0x6400_0000_0000_0001)
        );
        let mut name = [0; 64];
        name[..4].copy_from_slice(b"DAPL");
        let repr = ServiceRecordRepr {
            id: 0x0002_c903_0000_abcd,
            gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001),
            p_key: 0xffff,
            lease: ServiceRecordRepr::INFINITE_LEASE,
            key: [0x11; 16],
            name,
            data8: core::array::from_fn(|i| 0x80 + i as u8),
            data16: core::array::from_fn(|i| 0x1600 + i as u16),
            data32: core::array::from_fn(|i| 0x3200_0000 + i as u32),
            data64: core::array::from_fn(|i| 0x6400_0000_0000_0000 + i as u64),
        };
        assert_golden(&bytes, &repr);
    }

    #[test]
    fn mask_bits() {
        assert_eq!(ServiceRecordMask::NAME.0, 1 << 6);
        assert_eq!(ServiceRecordMask::data8(0).0, 1 << 7);
        assert_eq!(ServiceRecordMask::data8(15).0, 1 << 22);
        assert_eq!(ServiceRecordMask::data16(7).0, 1 << 30);
        assert_eq!(ServiceRecordMask::data32(3).0, 1 << 34);
        assert_eq!(ServiceRecordMask::data64(1).0, 1 << 36);
    }
}
