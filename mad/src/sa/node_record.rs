//! NodeRecord (SA attribute 0x0011, IBA 15.2.5.2): a node's NodeInfo and NodeDescription under
//! the LID of one of its ports.

use crate::attr::node_description::{NodeDescription, NodeDescriptionRepr};
use crate::attr::node_info::{NodeInfo, NodeInfoRepr};

sa_record! {
    /// A view of a NodeRecord (112 bytes: LID, 2 reserved, NodeInfo at 4, NodeDescription at
    /// 44, 4 bytes of padding).
    pub struct NodeRecord[112];
    /// A NodeRecord: one per CA or router port, one per switch (port 0).
    pub struct NodeRecordRepr = SaAttributeId::NodeRecord;
    {
        /// The LID of the port the record is for (its base LID).
        lid / set_lid: u16 = 0, 16;
    }
    {
        /// NodeInfo, with PortGUID and LocalPortNum those of the record's port.
        node_info / node_info_mut: NodeInfo(NodeInfoRepr) = 4;
        /// NodeDescription.
        description / description_mut: NodeDescription(NodeDescriptionRepr) = 44;
    }
}

flags! {
    /// NodeRecord ComponentMask bits OpenSM honours (include/iba/ib_types.h:2634-2648); bit 1
    /// is the reserved field.
    pub struct NodeRecordMask(u64) {
        /// LID.
        const LID = 1 << 0;
        /// NodeInfo BaseVersion.
        const BASE_VERSION = 1 << 2;
        /// NodeInfo ClassVersion.
        const CLASS_VERSION = 1 << 3;
        /// NodeInfo NodeType.
        const NODE_TYPE = 1 << 4;
        /// NodeInfo NumPorts.
        const NUM_PORTS = 1 << 5;
        /// NodeInfo SystemImageGUID.
        const SYSTEM_IMAGE_GUID = 1 << 6;
        /// NodeInfo NodeGUID.
        const NODE_GUID = 1 << 7;
        /// NodeInfo PortGUID.
        const PORT_GUID = 1 << 8;
        /// NodeInfo PartitionCap.
        const PARTITION_CAP = 1 << 9;
        /// NodeInfo DeviceID.
        const DEVICE_ID = 1 << 10;
        /// NodeInfo Revision.
        const REVISION = 1 << 11;
        /// NodeInfo LocalPortNum.
        const LOCAL_PORT_NUM = 1 << 12;
        /// NodeInfo VendorID.
        const VENDOR_ID = 1 << 13;
        /// NodeDescription (all 64 bytes).
        const NODE_DESCRIPTION = 1 << 14;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::node_info::NodeType;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    #[rustfmt::skip]
    static BYTES: [u8; 112] = [
        0x00, 0x2a, 0x00, 0x00,                         // 0: LID 42, reserved
        0x01, 0x01, 0x01, 0x02,                         // 4: NodeInfo: versions, CA, 2 ports
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x00, // 8: SystemImageGUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x00, // 16: NodeGUID
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x02, // 24: PortGUID
        0x00, 0x80, 0x67, 0x32,                         // 32: PartitionCap 128, DeviceID
        0x00, 0x00, 0x00, 0xa0,                         // 36: Revision
        0x02, 0x00, 0x02, 0xc9,                         // 40: LocalPortNum 2, VendorID
        b'h', b'o', b's', b't', b'-', b'1', b' ', b'H', // 44: NodeDescription
        b'C', b'A', b'-', b'1', 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0,                                     // 108: padding
    ];

    fn repr() -> NodeRecordRepr {
        NodeRecordRepr {
            lid: 42,
            node_info: NodeInfoRepr {
                base_version: 1,
                class_version: 1,
                node_type: NodeType::Ca,
                num_ports: 2,
                system_image_guid: 0x0002_c903_0000_1000,
                node_guid: 0x0002_c903_0000_1000,
                port_guid: 0x0002_c903_0000_1002,
                partition_cap: 128,
                device_id: 0x6732,
                revision: 0xa0,
                local_port_num: 2,
                vendor_id: 0x0002c9,
            },
            description: NodeDescriptionRepr::new("host-1 HCA-1").unwrap(),
        }
    }

    #[test]
    fn deconstruct() {
        let v = NodeRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.lid(), 42);
        assert_eq!(v.node_info().port_guid(), 0x0002_c903_0000_1002);
        assert_eq!(v.node_info().vendor_id(), 0x0002c9);
        assert_eq!(&v.description().text()[..6], b"host-1");
        assert_eq!(NodeRecordRepr::SIZE, 112);
        assert_eq!(NodeRecordRepr::ATTRIBUTE_ID, SaAttributeId::NodeRecord);
    }

    #[test]
    fn golden() {
        assert_golden(&BYTES, &repr());
    }

    #[test]
    fn mask_bits() {
        assert_eq!(NodeRecordMask::NODE_GUID.0, 0x80);
        assert_eq!(
            format!(
                "{:?}",
                NodeRecordMask::LID | NodeRecordMask::NODE_DESCRIPTION
            ),
            "NodeRecordMask(0x4001: LID | NODE_DESCRIPTION)"
        );
    }
}
