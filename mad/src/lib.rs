//! InfiniBand MAD wire formats: the subnet management packets (SMPs) an SM sends and receives,
//! and their attributes, the performance management (PerfMgt) MADs and counter attributes a
//! port's PMA answers, the subnet administration ([`sa`]) MADs and records, and [`rmpp`], which
//! carries the long ones. No I/O, no `unsafe`.
//!
//! The crate follows smoltcp's `wire` module. Each layout has two forms:
//!
//! - a **view** (`Smp<T>`, `PortInfo<T>`, ...) over any `T: AsRef<[u8]>`, with a getter and a
//!   setter per field, generated from one table of (name, IBA bit offset, width) rows that
//!   mirrors libibmad's `fields.c`, so every offset is written once and checked against the
//!   layout length at compile time;
//! - a **`Repr`** (`SmpRepr`, `PortInfoRepr`, ...): a plain value with `parse` (view to value,
//!   validating) and `emit` (value to view, writing every byte of the layout, reserved bits zero).
//!
//! The contract for untrusted bytes: `new_checked` (or `check_len`) fails with
//! [`Error::Truncated`] on a short buffer, and after it no accessor panics; every `parse` checks
//! the length itself and returns a [`Result`]. [`parse_any`] is the whole pipeline for fuzzing.
//!
//! Enumerated fields (methods, attribute IDs, port states, ...) are open enums: a value without a
//! name is kept as `Unknown(raw)`, never rejected, so an SM can log and answer a MAD from a newer
//! or vendor-extended peer. Setters keep only a field's width of bits, as libibmad does; values
//! from `parse` always fit.
//!
//! Bit offsets are IBA style: bit 0 is the most significant bit of byte 0, fields are big-endian.

#![warn(missing_docs)]

#[macro_use]
mod macros;

mod attr;
mod bits;
mod cc;
mod damage;
mod error;
mod header;
pub mod ibsim;
mod modifier;
mod perf;
pub mod rmpp;
pub mod sa;
mod smp;
mod vocabulary;

pub use attr::Attribute;
pub use attr::guid_info::{GuidInfo, GuidInfoRepr};
pub use attr::linear_forwarding_table::{LinearForwardingTable, LinearForwardingTableRepr};
pub use attr::multicast_forwarding_table::{
    MulticastForwardingTable, MulticastForwardingTableRepr,
};
pub use attr::node_description::{NodeDescription, NodeDescriptionRepr};
pub use attr::node_info::{NodeInfo, NodeInfoRepr, NodeType};
pub use attr::notice::{Notice, NoticeRepr, NoticeType};
pub use attr::p_key_table::{PKeyTable, PKeyTableRepr};
pub use attr::port_info::{
    CapabilityMask, CapabilityMask2, PhysPortState, PortInfo, PortInfoRepr, PortState,
};
pub use attr::sl_to_vl_mapping_table::{SlToVlMappingTable, SlToVlMappingTableRepr};
pub use attr::sm_info::{SmInfo, SmInfoRepr, SmState};
pub use attr::switch_info::{SwitchInfo, SwitchInfoRepr};
pub use attr::vl_arbitration_table::{VlArbEntry, VlArbitrationTable, VlArbitrationTableRepr};
pub use cc::info::{
    CongestionInfo, CongestionInfoRepr, CongestionKeyInfo, CongestionKeyInfoRepr, TimeStamp,
    TimeStampRepr,
};
pub use cc::log::{CaCongestionLog, LOG_TYPE_CA, LOG_TYPE_SWITCH, SwitchCongestionLog};
pub use cc::settings::{
    CaCongestionEntry, CaCongestionSetting, CaCongestionSettingRepr, CctEntry,
    CongestionControlTable, CongestionControlTableRepr, SwitchCongestionSetting,
    SwitchCongestionSettingRepr, SwitchControlMap, SwitchPortCongestionElement,
    SwitchPortCongestionSetting,
};
pub use cc::{CC_CLASS_VERSION, CcAttributeId, CcMad};
pub use damage::damage;
pub use error::{Error, Result};
pub use header::{AttributeId, InvalidField, Mad, Method, MgmtClass, Status};
pub use modifier::{
    GuidInfoModifier, LftModifier, MftModifier, PKeyTableModifier, PortInfoModifier,
    SlToVlModifier, SmInfoModifier, VlArbBlock, VlArbModifier,
};
pub use perf::class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use perf::congestion_counters::{
    PortRcvConCtrl, PortRcvDataSl, PortSlRcvBecn, PortSlRcvFecn, PortVlXmitTimeCong,
    PortXmitConCtrl, PortXmitDataSl, SwPortVlCongestion,
};
pub use perf::optional_counters::{
    PortFlowCtlCounters, PortOpRcvCounters, PortRcvErrorDetails, PortVlOpData, PortVlOpPackets,
    PortVlXmitFlowCtlUpdateErrors, PortVlXmitWaitCounters, PortXmitDiscardDetails,
};
pub use perf::port_counters::{PortCounters, PortCountersRepr};
pub use perf::port_counters_extended::{
    PortCountersExtended, PortCountersExtendedErrors, PortCountersExtendedErrorsRepr,
    PortCountersExtendedRepr,
};
pub use perf::{COUNTERS_OFFSET, CounterHeader, PerfAttributeId, PerfCapabilityMask, PerfMgtMad};
pub use smp::{Direction, DrPath, Routing, Smp, SmpRepr};
pub use vocabulary::{Gid, Guid, Lid, PortNum, Priority};

/// Parses `bytes` as an SMP and its data area as the attribute its AttributeID names.
///
/// Total: for any input of any length it returns, without panicking, overflowing or reading past
/// the end; the entry point for a fuzz target and for logging raw MADs.
pub fn parse_any(bytes: &[u8]) -> Result<(SmpRepr, Attribute)> {
    let smp = SmpRepr::parse_bytes(bytes)?;
    let attribute = Attribute::parse(smp.attribute_id, &smp.data)?;
    Ok((smp, attribute))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A trap 128 as ibsim delivers it: LID-routed SubnTrap(Notice), TID 0.
    #[test]
    fn parse_any_trap_128() {
        let mut bytes = [0; 256];
        bytes[..4].copy_from_slice(&[0x01, 0x01, 0x01, 0x05]);
        bytes[16..18].copy_from_slice(&[0x00, 0x02]);
        bytes[64..76].copy_from_slice(&[
            0x81, 0x00, 0x00, 0x02, 0x00, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03,
        ]);
        let (smp, attribute) = parse_any(&bytes).unwrap();
        assert_eq!(smp.method, Method::Trap);
        assert_eq!(smp.routing, Routing::Lid);
        assert_eq!(smp.transaction_id, 0);
        let Attribute::Notice(notice) = attribute else {
            panic!("{attribute:?}")
        };
        assert_eq!(notice.trap_number, 128);
        assert_eq!(notice.issuer_lid, 3);
        assert_eq!(
            Notice::new_checked(&smp.data[..])
                .unwrap()
                .trap128_lid_addr(),
            3
        );
    }

    #[test]
    fn parse_any_rejects_every_short_buffer() {
        let bytes = [0u8; 256];
        for len in 0..256 {
            assert_eq!(
                parse_any(&bytes[..len]),
                Err(Error::Truncated { len, needed: 256 })
            );
        }
    }

    proptest! {
        /// Any bytes at all: an answer, never a panic.
        #[test]
        fn parse_any_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_any(&bytes);
        }

        /// Valid SMP framing with random contents: always parses, and re-emits to the same
        /// SMP.
        #[test]
        fn parse_any_accepts_valid_framing(
            mut bytes in proptest::collection::vec(any::<u8>(), 256),
            directed: bool,
            hop_count in 0u8..=63,
        ) {
            bytes[0] = 1;
            bytes[1] = if directed { 0x81 } else { 0x01 };
            bytes[2] = 1;
            bytes[7] = hop_count;
            let (smp, attribute) = parse_any(&bytes).unwrap();
            prop_assert_eq!(attribute.id(), smp.attribute_id);
            let mut out = [0; 256];
            smp.emit(&mut Smp::new_unchecked(&mut out[..]));
            prop_assert_eq!(parse_any(&out), Ok((smp, attribute)));
        }
    }
}
