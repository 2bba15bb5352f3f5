//! The SA's Notice (SA attribute 0x0002, IBA 13.4.8.2): the payload of a Report, the 64 bytes an
//! SMP carries and the IssuerGID after them.

use crate::attr::notice::{Notice, NoticeRepr};
use crate::vocabulary::Gid;

sa_record! {
    /// A view of a whole Notice (80 bytes: the SMP Notice, then IssuerGID at 64).
    pub struct SaNotice[80];
    /// A whole Notice, as an SA Report carries it.
    pub struct SaNoticeRepr = SaAttributeId::Notice;
    {
        /// IssuerGID: the port that issued the notice.
        issuer_gid / set_issuer_gid: Gid = 512, 128;
    }
    {
        /// The first 64 bytes: the Notice as an SMP carries it.
        notice / notice_mut: Notice(NoticeRepr) = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// Trap 128 from switch LID 3 as a Report forwards it, with the switch's GID.
    fn bytes() -> [u8; 80] {
        let mut b = [0; 80];
        b[..12].copy_from_slice(&[
            0x81, 0x00, 0x00, 0x02, 0x00, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03,
        ]);
        b[64..80].copy_from_slice(&0xfe80_0000_0000_0000_0002_c903_0000_0003_u128.to_be_bytes());
        b
    }

    #[test]
    fn deconstruct_and_golden() {
        let bytes = bytes();
        let v = SaNotice::new_checked(&bytes[..]).unwrap();
        assert_eq!(v.notice().trap_number(), 128);
        assert_eq!(v.notice().trap128_lid_addr(), 3);
        assert_eq!(v.issuer_gid().guid().0, 0x0002_c903_0000_0003);
        let repr = SaNoticeRepr {
            issuer_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0003),
            notice: NoticeRepr::parse(&v.notice()).unwrap(),
        };
        assert_eq!(repr.notice.issuer_lid, 3);
        assert_golden(&bytes, &repr);
        assert_eq!(SaNoticeRepr::SIZE, 80);
    }
}
