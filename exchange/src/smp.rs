//! SMPs as the exchange carries them: read off the wire, scheduled as a [`Message`], and
//! answered.

use ibqos_mad::{AttributeId, Direction, Method, MgmtClass, Routing, Smp, SmpRepr, Status};
use tracing::debug;

use crate::message::Message;
use crate::{OutgoingMad, Transmit};

/// The answer to `request` from LID `slid`, built as OpenSM's `osm_resp_send` builds it: the
/// request with the response method (TrapRepress for a Trap), `status` and `data`, the D bit
/// set on a directed route, and the requester's LID as the destination.
pub fn answer(request: SmpRepr, slid: u16, status: Status, data: [u8; 64]) -> OutgoingMad {
    let routing = match request.routing {
        Routing::Lid => Routing::Lid,
        Routing::Directed(mut path) => {
            path.direction = Direction::Returning;
            std::mem::swap(&mut path.dr_slid, &mut path.dr_dlid);
            Routing::Directed(path)
        }
    };
    let dlid = match routing {
        Routing::Lid => Some(slid),
        Routing::Directed(_) => None,
    };
    let method = match request.method {
        Method::Trap => Method::TrapRepress,
        method => method.response(),
    };
    let reply = SmpRepr {
        method,
        status,
        data,
        routing,
        ..request
    };
    OutgoingMad::from(&Transmit { mad: reply, dlid })
}

/// An SMP from the fabric, or `None` for anything else (a short datagram, another class).
pub fn parse_smp(mad: &[u8]) -> Option<SmpRepr> {
    match SmpRepr::parse_bytes(mad) {
        Ok(smp) => Some(smp),
        Err(error) => {
            debug!(%error, len = mad.len(), "not an SMP; dropped");
            None
        }
    }
}

impl Message for SmpRepr {
    fn class(&self) -> MgmtClass {
        match self.routing {
            Routing::Lid => MgmtClass::SubnLid,
            Routing::Directed(_) => MgmtClass::SubnDirectedRoute,
        }
    }
    common_header_fields!();
    fn from_bytes(mad: &[u8]) -> Option<SmpRepr> {
        parse_smp(mad)
    }
    fn to_bytes(&self) -> Vec<u8> {
        let mut mad = vec![0u8; Smp::<&[u8]>::LEN];
        self.emit(&mut Smp::new_unchecked(&mut mad[..]));
        mad
    }
}
