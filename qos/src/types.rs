//! Service levels, virtual lanes and VL counts.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A service level, 0..=15, carried in the LRH of every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Sl(u8);

impl Sl {
    /// Every service level, in order.
    pub const ALL: [Sl; 16] = {
        let mut all = [Sl(0); 16];
        let mut i = 0;
        while i < 16 {
            all[i] = Sl(i as u8);
            i += 1;
        }
        all
    };

    /// The service level `value`, or `None` above 15.
    pub const fn new(value: u8) -> Option<Sl> {
        if value <= 15 { Some(Sl(value)) } else { None }
    }

    pub const fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Sl {
    type Error = String;
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Sl::new(value).ok_or_else(|| format!("SL {value} is out of range 0-15"))
    }
}

impl From<Sl> for u8 {
    fn from(sl: Sl) -> u8 {
        sl.0
    }
}

/// A virtual lane, 0..=15. VL 15 is the management lane; in an SL-to-VL table it means "drop".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Vl(u8);

impl Vl {
    /// The management VL; data mapped to it is dropped.
    pub const VL15: Vl = Vl(15);

    /// The virtual lane `value`, or `None` above 15.
    pub const fn new(value: u8) -> Option<Vl> {
        if value <= 15 { Some(Vl(value)) } else { None }
    }

    /// The low nibble of `value` as a VL: what a 4-bit wire field holds.
    pub const fn from_nibble(value: u8) -> Vl {
        Vl(value & 0x0f)
    }

    pub const fn get(self) -> u8 {
        self.0
    }

    pub const fn is_management(self) -> bool {
        self.0 == 15
    }
}

impl TryFrom<u8> for Vl {
    type Error = String;
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Vl::new(value).ok_or_else(|| format!("VL {value} is out of range 0-15"))
    }
}

impl From<Vl> for u8 {
    fn from(vl: Vl) -> u8 {
        vl.0
    }
}

impl fmt::Display for Vl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VL{}", self.0)
    }
}

/// How many data VLs a port has (VLCap) or runs (OperationalVLs).
///
/// PortInfo encodes the count in four bits: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7,
/// 5 = VL0-14. People think in counts, so configuration and the CLI use counts and only the
/// wire uses [`VlCount::encoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VlCount {
    One,
    Two,
    Four,
    Eight,
    Fifteen,
}

/// A VL count or encoding that no port can have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VlCountError {
    #[error("{0} is not a VL count: a port has 1, 2, 4, 8 or 15 data VLs")]
    BadCount(u32),
    #[error("{0} is not a VLCap/OperVLs encoding: valid encodings are 1 to 5")]
    BadEncoding(u8),
}

impl VlCount {
    pub const ALL: [VlCount; 5] = [
        VlCount::One,
        VlCount::Two,
        VlCount::Four,
        VlCount::Eight,
        VlCount::Fifteen,
    ];

    /// The count of data VLs: 1, 2, 4, 8 or 15.
    pub const fn count(self) -> u8 {
        match self {
            VlCount::One => 1,
            VlCount::Two => 2,
            VlCount::Four => 4,
            VlCount::Eight => 8,
            VlCount::Fifteen => 15,
        }
    }

    /// The PortInfo VLCap / OperationalVLs encoding: 1 to 5.
    pub const fn encoding(self) -> u8 {
        match self {
            VlCount::One => 1,
            VlCount::Two => 2,
            VlCount::Four => 3,
            VlCount::Eight => 4,
            VlCount::Fifteen => 5,
        }
    }

    pub fn from_count(count: u32) -> Result<VlCount, VlCountError> {
        match count {
            1 => Ok(VlCount::One),
            2 => Ok(VlCount::Two),
            4 => Ok(VlCount::Four),
            8 => Ok(VlCount::Eight),
            15 => Ok(VlCount::Fifteen),
            other => Err(VlCountError::BadCount(other)),
        }
    }

    pub fn from_encoding(encoding: u8) -> Result<VlCount, VlCountError> {
        VlCount::ALL
            .into_iter()
            .find(|c| c.encoding() == encoding)
            .ok_or(VlCountError::BadEncoding(encoding))
    }

    /// The mask OpenSM applies to VLs programmed on a port running this many VLs:
    /// `(1 << (OperVLs - 1)) - 1` (`osm_qos.c:165,269`). With 15 VLs it is 0xf, so VL15 passes.
    pub const fn vl_mask(self) -> u8 {
        (1u8 << (self.encoding() - 1)) - 1
    }
}

/// The OperationalVLs a link runs: the lower VLCap of its two ends, capped by the SM's
/// `max_op_vls` (OpenSM's `osm_port.c:239-296`).
pub fn oper_vls(local: VlCount, peer: VlCount, cap: Option<VlCount>) -> VlCount {
    let common = local.min(peer);
    cap.map_or(common, |cap| common.min(cap))
}

impl fmt::Display for VlCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vl_count_encodings_and_masks() {
        let rows: Vec<(u8, u8, u8)> = VlCount::ALL
            .iter()
            .map(|c| (c.count(), c.encoding(), c.vl_mask()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (1, 1, 0x0),
                (2, 2, 0x1),
                (4, 3, 0x3),
                (8, 4, 0x7),
                (15, 5, 0xf)
            ]
        );
        for c in VlCount::ALL {
            assert_eq!(VlCount::from_encoding(c.encoding()), Ok(c));
            assert_eq!(VlCount::from_count(u32::from(c.count())), Ok(c));
        }
        assert_eq!(VlCount::from_count(3), Err(VlCountError::BadCount(3)));
        assert_eq!(VlCount::from_encoding(0), Err(VlCountError::BadEncoding(0)));
        assert_eq!(VlCount::from_encoding(6), Err(VlCountError::BadEncoding(6)));
    }

    #[test]
    fn oper_vls_is_the_lower_cap_within_the_limit() {
        use VlCount::*;
        assert_eq!(oper_vls(Eight, Four, None), Four);
        assert_eq!(oper_vls(Two, Fifteen, None), Two);
        assert_eq!(oper_vls(Eight, Fifteen, Some(Four)), Four);
        assert_eq!(oper_vls(Two, Eight, Some(Four)), Two);
    }

    #[test]
    fn sl_and_vl_ranges() {
        assert_eq!(Sl::new(15).map(Sl::get), Some(15));
        assert_eq!(Sl::new(16), None);
        assert_eq!(Vl::new(16), None);
        assert!(Vl::from_nibble(0x1f).is_management());
        assert_eq!(Sl::ALL[7].get(), 7);
    }
}
