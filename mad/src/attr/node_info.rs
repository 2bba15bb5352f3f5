//! NodeInfo (attribute 0x0011, IBA 14.2.5.3): what a node is and how many ports it has.

open_enum! {
    /// NodeInfo NodeType.
    pub enum NodeType(u8) {
        /// Channel adapter.
        Ca = 1,
        /// Switch.
        Switch = 2,
        /// Router.
        Router = 3,
    }
}

layout! {
    /// A view of a NodeInfo attribute (40 bytes).
    pub struct NodeInfo[40];
    /// A NodeInfo attribute, every field.
    pub struct NodeInfoRepr;
    {
        /// BaseVersion of the MADs the node supports.
        base_version / set_base_version: u8 = 0, 8;
        /// ClassVersion of the SMPs the node supports.
        class_version / set_class_version: u8 = 8, 8;
        /// NodeType.
        node_type / set_node_type: NodeType = 16, 8;
        /// NumPorts: physical ports (a switch's management port 0 not counted).
        num_ports / set_num_ports: u8 = 24, 8;
        /// SystemImageGUID.
        system_image_guid / set_system_image_guid: u64 = 32, 64;
        /// NodeGUID.
        node_guid / set_node_guid: u64 = 96, 64;
        /// PortGUID of the port the SMP arrived on (all ports of a switch share one).
        port_guid / set_port_guid: u64 = 160, 64;
        /// PartitionCap: P_Key table entries per CA port or switch port 0.
        partition_cap / set_partition_cap: u16 = 224, 16;
        /// DeviceID.
        device_id / set_device_id: u16 = 240, 16;
        /// Revision.
        revision / set_revision: u32 = 256, 32;
        /// LocalPortNum: the port the SMP arrived on.
        local_port_num / set_local_port_num: u8 = 288, 8;
        /// VendorID (24-bit IEEE OUI).
        vendor_id / set_vendor_id: u32 = 296, 24;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 40] = [
        0x01,                                           // BaseVersion
        0x05,                                           // ClassVersion
        0x02,                                           // NodeType: switch
        0x24,                                           // NumPorts 36
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3, // SystemImageGUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xd4, 0xe5, 0xf6, // NodeGUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xd4, 0xe5, 0xf7, // PortGUID
        0x00, 0x20,                                     // PartitionCap
        0xca, 0xfe,                                     // DeviceID
        0x12, 0x34, 0x56, 0x78,                         // Revision
        0x11,                                           // LocalPortNum
        0x00, 0x02, 0xc9,                               // VendorID
    ];

    fn repr() -> NodeInfoRepr {
        NodeInfoRepr {
            base_version: 1,
            class_version: 5,
            node_type: NodeType::Switch,
            num_ports: 36,
            system_image_guid: 0x0002_c903_00a1_b2c3,
            node_guid: 0x0002_c903_00d4_e5f6,
            port_guid: 0x0002_c903_00d4_e5f7,
            partition_cap: 0x20,
            device_id: 0xcafe,
            revision: 0x1234_5678,
            local_port_num: 0x11,
            vendor_id: 0x0002c9,
        }
    }

    #[test]
    fn deconstruct() {
        let v = NodeInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.base_version(), 1);
        assert_eq!(v.class_version(), 5);
        assert_eq!(v.node_type(), NodeType::Switch);
        assert_eq!(v.num_ports(), 36);
        assert_eq!(v.system_image_guid(), 0x0002_c903_00a1_b2c3);
        assert_eq!(v.node_guid(), 0x0002_c903_00d4_e5f6);
        assert_eq!(v.port_guid(), 0x0002_c903_00d4_e5f7);
        assert_eq!(v.partition_cap(), 0x20);
        assert_eq!(v.device_id(), 0xcafe);
        assert_eq!(v.revision(), 0x1234_5678);
        assert_eq!(v.local_port_num(), 0x11);
        assert_eq!(v.vendor_id(), 0x0002c9);
        assert_eq!(NodeInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 40];
        repr().emit(&mut NodeInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        let short = NodeInfo::new_unchecked(&BYTES[..39]);
        assert_eq!(
            short.check_len(),
            Err(crate::Error::Truncated {
                len: 39,
                needed: 40
            })
        );
        assert_eq!(
            NodeInfoRepr::parse(&short),
            Err(crate::Error::Truncated {
                len: 39,
                needed: 40
            })
        );
    }

    #[test]
    fn unknown_node_type_is_kept() {
        let mut bytes = BYTES;
        bytes[2] = 9;
        let repr = NodeInfoRepr::parse(&NodeInfo::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.node_type, NodeType::Unknown(9));
    }

    proptest! {
        #[test]
        fn round_trip(repr: NodeInfoRepr) {
            prop_assert_round_trip!(NodeInfo, NodeInfoRepr, repr);
        }
    }
}
