//! How the MADs of each management class travel (IBA 13.4 and 13.5): SMPs on QP0, with no
//! Q_Key and no P_Key check; GMPs on QP1 with the well-known GSI Q_Key, on the P_Key index
//! the transport gives them, and with RMPP where the class has messages longer than one MAD.

use ibqos_mad::MgmtClass;

/// The Q_Key every GMP to QP1 carries (IBA 13.5.1.4).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// The queue pair, Q_Key and segmentation of one management class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channel {
    /// The queue pair the class's agents listen on: 0 (SMI) or 1 (GSI).
    pub qp: u32,
    /// The Q_Key a MAD of the class carries: 0 on QP0, which checks none.
    pub qkey: u32,
    /// Whether the class carries messages longer than one MAD, with RMPP (IBA 13.6).
    pub rmpp: bool,
}

impl Channel {
    /// The channel of `class`. A class the exchange has no rule for is taken as a GMP without
    /// RMPP, which is what every class but SA is.
    pub fn of(class: MgmtClass) -> Channel {
        match class {
            MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute => Channel {
                qp: 0,
                qkey: 0,
                rmpp: false,
            },
            MgmtClass::SubnAdm => Channel {
                qp: 1,
                qkey: GSI_QKEY,
                rmpp: true,
            },
            _ => Channel {
                qp: 1,
                qkey: GSI_QKEY,
                rmpp: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smps_go_on_qp0_and_gmps_on_qp1_with_the_gsi_qkey() {
        let cases = [
            (MgmtClass::SubnLid, 0, 0, false),
            (MgmtClass::SubnDirectedRoute, 0, 0, false),
            (MgmtClass::SubnAdm, 1, GSI_QKEY, true),
            (MgmtClass::PerfMgt, 1, GSI_QKEY, false),
            (MgmtClass::CongestionControl, 1, GSI_QKEY, false),
            (MgmtClass::Unknown(0x30), 1, GSI_QKEY, false),
        ];
        for (class, qp, qkey, rmpp) in cases {
            assert_eq!(Channel::of(class), Channel { qp, qkey, rmpp }, "{class:?}");
        }
    }
}
