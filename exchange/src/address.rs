//! Where a MAD goes and where one came from: the addresses the SM and the transports share.

use ibqos_mad::{MgmtClass, SmpRepr};

use crate::message::Message;

/// A request ready for the transport, an SMP unless `M` says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit<M = SmpRepr> {
    pub mad: M,
    /// The destination LID; `None` for a directed-route SMP.
    pub dlid: Option<u16>,
}

/// The far end of a MAD exchange on QP0 or QP1 and beyond: where a request came from, and so
/// where its answer goes (IBA 13.5.1: a response goes to the request's source LID and QP, on
/// the P_Key index the request came in on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The LID, 0xFFFF (permissive) for a directed-route SMP.
    pub lid: u16,
    /// The queue pair: 0 for SMPs, 1 for most GMPs, any UD QP for an SA client that asked
    /// for Reports there.
    pub qp: u32,
    /// The P_Key index on the local port the MAD came in on.
    pub pkey_index: u16,
}

impl Peer {
    /// A peer known only by its LID: QP and P_Key index follow from the MAD's class.
    pub fn lid(lid: u16) -> Peer {
        Peer {
            lid,
            qp: 0,
            pkey_index: 0,
        }
    }
}

/// Where a MAD goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Address {
    /// A directed-route SMP (class 0x81): the path is in the MAD itself, and the transport
    /// addresses it to the permissive LID 0xFFFF.
    Directed,
    /// LID-routed, to this destination LID, on the QP the management class implies.
    Lid(u16),
    /// To a peer's own QP and P_Key index: an answer to a GMP request, or an SA Report.
    Peer(Peer),
}

/// A MAD for the fabric: one 256-byte MAD, or an SA answer longer than one MAD that the
/// transport carries with RMPP (or cuts to one MAD where nothing does RMPP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMad {
    /// The class the MAD is of: it picks the QP, the Q_Key and RMPP
    /// ([`Channel::of`](crate::class::Channel::of)), and the agent that sends it.
    pub class: MgmtClass,
    pub mad: Vec<u8>,
    pub address: Address,
}

impl<M: Message> From<&Transmit<M>> for OutgoingMad {
    fn from(transmit: &Transmit<M>) -> Self {
        OutgoingMad {
            class: transmit.mad.class(),
            mad: transmit.mad.to_bytes(),
            address: transmit.dlid.map_or(Address::Directed, Address::Lid),
        }
    }
}
