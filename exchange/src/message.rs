//! What the scheduler carries: a MAD whose common header it reads and writes, an SMP or a
//! GMP of any class. What the data means is the caller's business.

use std::fmt;

use ibqos_mad::{AttributeId, Mad, Method, MgmtClass, Status};
use tracing::debug;

use crate::class::Channel;

/// A MAD the scheduler can put on the wire and match an answer to.
pub trait Message: Copy + fmt::Debug {
    /// Its management class: an answer matches a request of the same class.
    fn class(&self) -> MgmtClass;
    fn method(&self) -> Method;
    /// The MAD status, without a directed-route SMP's D bit.
    fn status(&self) -> Status;
    fn transaction_id(&self) -> u64;
    fn set_transaction_id(&mut self, tid: u64);
    fn attribute_id(&self) -> AttributeId;
    fn attribute_modifier(&self) -> u32;
    /// The message in received bytes, or `None` when they hold no such message.
    fn from_bytes(mad: &[u8]) -> Option<Self>;
    /// The 256 bytes on the wire.
    fn to_bytes(&self) -> Vec<u8>;
}

/// The [`Message`] accessors of the common header fields that [`SmpRepr`] and [`Gmp`] both
/// keep under the header's names.
macro_rules! common_header_fields {
    () => {
        fn method(&self) -> Method {
            self.method
        }
        fn status(&self) -> Status {
            self.status
        }
        fn transaction_id(&self) -> u64 {
            self.transaction_id
        }
        fn set_transaction_id(&mut self, tid: u64) {
            self.transaction_id = tid;
        }
        fn attribute_id(&self) -> AttributeId {
            self.attribute_id
        }
        fn attribute_modifier(&self) -> u32 {
            self.attribute_modifier
        }
    };
}

/// A GMP: a MAD of a class on QP1 (SA, PerfMgt, congestion control, a vendor's). The common
/// header as values; the class's own header and data as the bytes after it, laid out by the
/// class (a PerfMgt attribute starts 40 bytes in, at byte 64 of the MAD).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Gmp {
    pub class: MgmtClass,
    pub class_version: u8,
    pub method: Method,
    pub status: Status,
    /// The common header's ClassSpecific field.
    pub class_specific: u16,
    pub transaction_id: u64,
    pub attribute_id: AttributeId,
    pub attribute_modifier: u32,
    /// Bytes 24 to 255 of the MAD.
    pub payload: [u8; Gmp::PAYLOAD_LEN],
}

impl Gmp {
    /// The length of a MAD.
    pub const LEN: usize = 256;
    /// What follows the common header.
    pub const PAYLOAD_LEN: usize = Gmp::LEN - Mad::<&[u8]>::LEN;

    /// A Get of `attribute` with `modifier`, its payload zero, its TID the scheduler's.
    pub fn get(
        class: MgmtClass,
        class_version: u8,
        attribute_id: AttributeId,
        attribute_modifier: u32,
    ) -> Gmp {
        Gmp {
            class,
            class_version,
            method: Method::Get,
            status: Status::OK,
            class_specific: 0,
            transaction_id: 0,
            attribute_id,
            attribute_modifier,
            payload: [0; Gmp::PAYLOAD_LEN],
        }
    }
}

// By hand: the payload is long and mostly zero, so it is left out.
impl fmt::Debug for Gmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gmp")
            .field("class", &self.class)
            .field("class_version", &self.class_version)
            .field("method", &self.method)
            .field("status", &self.status)
            .field("transaction_id", &self.transaction_id)
            .field("attribute_id", &self.attribute_id)
            .field("attribute_modifier", &self.attribute_modifier)
            .finish_non_exhaustive()
    }
}

impl Message for Gmp {
    fn class(&self) -> MgmtClass {
        self.class
    }
    common_header_fields!();

    /// A whole MAD of BaseVersion 1 in a class that travels on QP1; an SMP is no GMP.
    fn from_bytes(mad: &[u8]) -> Option<Gmp> {
        let header = Mad::new_checked(mad).ok()?;
        let class = header.mgmt_class();
        if mad.len() != Gmp::LEN || header.base_version() != 1 || Channel::of(class).qp != 1 {
            debug!(len = mad.len(), ?class, "not a GMP; dropped");
            return None;
        }
        let mut payload = [0; Gmp::PAYLOAD_LEN];
        payload.copy_from_slice(&mad[Mad::<&[u8]>::LEN..]);
        Some(Gmp {
            class,
            class_version: header.class_version(),
            method: header.method(),
            status: header.status(),
            class_specific: header.class_specific(),
            transaction_id: header.transaction_id(),
            attribute_id: header.attribute_id(),
            attribute_modifier: header.attribute_modifier(),
            payload,
        })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut mad = vec![0u8; Gmp::LEN];
        let mut header = Mad::new_unchecked(&mut mad[..]);
        header.set_base_version(1);
        header.set_mgmt_class(self.class);
        header.set_class_version(self.class_version);
        header.set_method(self.method);
        header.set_status(self.status);
        header.set_class_specific(self.class_specific);
        header.set_transaction_id(self.transaction_id);
        header.set_attribute_id(self.attribute_id);
        header.set_attribute_modifier(self.attribute_modifier);
        mad[Mad::<&[u8]>::LEN..].copy_from_slice(&self.payload);
        mad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::{DrPath, PerfAttributeId, PerfMgtMad, Routing, SmpRepr};

    #[test]
    fn a_gmp_round_trips_through_its_bytes() {
        let mut gmp = Gmp::get(
            MgmtClass::PerfMgt,
            1,
            AttributeId::from(u16::from(PerfAttributeId::ClassPortInfo)),
            0x0102_0304,
        );
        gmp.set_transaction_id(0x1122_3344_5566_7788);
        gmp.payload[40] = 0xaa;
        gmp.payload[231] = 0xbb;
        let bytes = gmp.to_bytes();
        let view = PerfMgtMad::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.header().mgmt_class(), MgmtClass::PerfMgt);
        assert_eq!(view.header().transaction_id(), 0x1122_3344_5566_7788);
        assert_eq!((view.data()[0], bytes[255]), (0xaa, 0xbb));
        assert_eq!(Gmp::from_bytes(&bytes), Some(gmp));
    }

    #[test]
    fn an_smp_or_a_short_datagram_is_no_gmp() {
        let smp = SmpRepr::get(
            AttributeId::NodeInfo,
            0,
            7,
            Routing::Directed(DrPath::request(&[1]).unwrap()),
        );
        let bytes = smp.to_bytes();
        assert_eq!(Gmp::from_bytes(&bytes), None);
        assert_eq!(SmpRepr::from_bytes(&bytes), Some(smp));
        assert_eq!(smp.class(), MgmtClass::SubnDirectedRoute);
        let gmp = Gmp::get(MgmtClass::PerfMgt, 1, AttributeId::from(1), 0).to_bytes();
        assert_eq!(Gmp::from_bytes(&gmp[..100]), None);
        assert_eq!(SmpRepr::from_bytes(&gmp), None);
    }
}
