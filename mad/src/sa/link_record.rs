//! LinkRecord (SA attribute 0x0020, IBA 15.2.5.13): one direction of one link, port to port.

sa_record! {
    /// A view of a LinkRecord (8 bytes: FromLID, FromPort, ToPort, ToLID, 2 bytes of padding).
    pub struct LinkRecord[8];
    /// A LinkRecord.
    pub struct LinkRecordRepr = SaAttributeId::LinkRecord;
    {
        /// FromLID: the base LID of the node the link leaves.
        from_lid / set_from_lid: u16 = 0, 16;
        /// FromPort.
        from_port / set_from_port: u8 = 16, 8;
        /// ToPort.
        to_port / set_to_port: u8 = 24, 8;
        /// ToLID: the base LID of the node the link reaches.
        to_lid / set_to_lid: u16 = 32, 16;
    }
    {}
}

flags! {
    /// LinkRecord ComponentMask bits (include/iba/ib_types.h:2598-2601).
    pub struct LinkRecordMask(u64) {
        /// FromLID.
        const FROM_LID = 1 << 0;
        /// FromPort.
        const FROM_PORT = 1 << 1;
        /// ToPort.
        const TO_PORT = 1 << 2;
        /// ToLID.
        const TO_LID = 1 << 3;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    /// LID 2 port 1 to port 3 of LID 0x1234.
    static BYTES: [u8; 8] = [0x00, 0x02, 0x01, 0x03, 0x12, 0x34, 0x00, 0x00];

    #[test]
    fn deconstruct() {
        let v = LinkRecord::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.from_lid(), v.from_port()), (2, 1));
        assert_eq!((v.to_port(), v.to_lid()), (3, 0x1234));
        assert_eq!(LinkRecordRepr::SIZE, 8);
        assert_eq!(LinkRecordRepr::ATTRIBUTE_ID, SaAttributeId::LinkRecord);
    }

    #[test]
    fn golden() {
        let repr = LinkRecordRepr {
            from_lid: 2,
            from_port: 1,
            to_port: 3,
            to_lid: 0x1234,
        };
        assert_golden(&BYTES, &repr);
    }

    #[test]
    fn mask_bits() {
        let all = LinkRecordMask::FROM_LID
            | LinkRecordMask::FROM_PORT
            | LinkRecordMask::TO_PORT
            | LinkRecordMask::TO_LID;
        assert_eq!(all.0, 0xf);
    }
}
