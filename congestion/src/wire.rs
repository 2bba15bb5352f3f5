//! What the congestion control manager and reader share on the wire: the class 0x21 MAD they
//! send and how an answer or a handed-back MAD reaches their scheduler.

use std::time::Instant;

use ibqos_exchange::scheduler::{Completion, Scheduler};
use ibqos_exchange::{Gmp, Message};
use ibqos_mad::{AttributeId, CC_CLASS_VERSION, CcAttributeId, Mad, Method, MgmtClass, Status};

/// Where the attribute data starts in a GMP's payload (bytes 24-255 of the MAD): after the
/// CC_Key and the log data.
pub(crate) const DATA_IN_PAYLOAD: usize = 40;

/// A congestion control MAD of `method` for `attribute` and `modifier`, carrying `cc_key`, its
/// attribute data all zero.
pub(crate) fn cc_mad(method: Method, attribute: CcAttributeId, modifier: u32, cc_key: u64) -> Gmp {
    let mut mad = Gmp::get(
        MgmtClass::CongestionControl,
        CC_CLASS_VERSION,
        AttributeId::from(u16::from(attribute)),
        modifier,
    );
    mad.method = method;
    mad.payload[..8].copy_from_slice(&cc_key.to_be_bytes());
    mad
}

/// A congestion control answer handed to `scheduler`, with its real status. An error status is
/// the agent's answer, not a loss to send again: it reaches the scheduler as status 0 and the
/// caller judges it. Anything but a class 0x21 GMP is ignored.
pub(crate) fn receive<C>(
    scheduler: &mut Scheduler<C, Gmp>,
    mad: &[u8],
) -> Option<(Completion<C, Gmp>, Status)> {
    let mut response =
        Gmp::from_bytes(mad).filter(|gmp| gmp.class == MgmtClass::CongestionControl)?;
    let status = response.status;
    response.status = Status::OK;
    scheduler.on_response(response).map(|done| (done, status))
}

/// A MAD the fabric handed back undelivered (whole, or only its header), handed to `scheduler`.
pub(crate) fn dropped<C>(
    scheduler: &mut Scheduler<C, Gmp>,
    mad: &[u8],
) -> Option<Completion<C, Gmp>> {
    match Gmp::from_bytes(mad) {
        Some(request) => scheduler.on_dropped(request),
        None => scheduler.on_dropped_header(&Mad::new_checked(mad).ok()?),
    }
}

/// The manager and the reader: a scheduler of class 0x21 MADs, and what each does with an
/// answer (its real status beside it) and with any other end of a request. The provided
/// methods are their `Engine` receive paths.
pub(crate) trait CcClient {
    type Op;

    fn scheduler(&mut self) -> &mut Scheduler<Self::Op, Gmp>;

    /// An answer to the request `op`, with the status the agent gave.
    fn answered(&mut self, op: Self::Op, status: Status, response: &Gmp);

    /// A request that ended otherwise: lost, handed back, answered for another attribute.
    fn settle(&mut self, completion: Completion<Self::Op, Gmp>);

    /// `Engine::on_mad`: an error status is the agent's answer (see [`receive`]).
    fn on_cc_mad(&mut self, mad: &[u8]) {
        match receive(self.scheduler(), mad) {
            Some((Completion::Answered { context, response }, status)) => {
                self.answered(context, status, &response)
            }
            Some((completion, _)) => self.settle(completion),
            None => {}
        }
    }

    /// `Engine::on_dropped`.
    fn on_cc_dropped(&mut self, mad: &[u8]) {
        if let Some(completion) = dropped(self.scheduler(), mad) {
            self.settle(completion);
        }
    }

    /// `Engine::on_time`: requests past their deadline are sent again or end.
    fn on_cc_time(&mut self, now: Instant) {
        for completion in self.scheduler().poll_timeouts(now) {
            self.settle(completion);
        }
    }
}
