//! The SM's answers to the SMPs that reach it unasked, during a sweep and between sweeps: traps
//! are repressed, SMInfo goes to the election ([`crate::election`]), which answers it with the
//! SM's state, and any other Get or Set gets "method/attribute unsupported" rather than
//! silence, so a client fails at once instead of timing out. SA queries go to the subnet
//! administrator ([`crate::sa`]), not here.
//!
//! Answers are built as OpenSM's `osm_resp_send` builds them ([`answer`]): the request with
//! the response method, the D bit set on a directed route, and the requester's LID as the
//! destination.

use ibqos_exchange::OutgoingMad;
use ibqos_exchange::smp::{answer, parse_smp};
use ibqos_mad::{AttributeId, Method, Notice, NoticeRepr, SmpRepr, Status};
use tracing::{debug, info, warn};

/// What reached the SM that was not an answer to its sweep.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unsolicited {
    /// Traps (128 link state change, 144 capability change, ...), each answered with
    /// TrapRepress.
    pub traps: u64,
    /// Of those, traps 128: a switch saw a link change state, so the fabric needs a sweep.
    pub link_changes: u64,
    /// Of those, traps 256: an SMP failed a port's M_Key check (someone without the key, or
    /// this SM with a key it lost).
    pub bad_m_keys: u64,
    /// SMInfo Gets and Sets from other SMs, answered with this SM's SMInfo.
    pub sm_info: u64,
    /// Other SMP requests (attributes an SM does not handle), answered with status
    /// "method/attribute unsupported".
    pub unsupported: u64,
    /// Datagrams that are not MADs at all, or no request the SM can answer.
    pub malformed: u64,
}

/// What a request that reached the SM came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Trap 128: a link changed state, so the fabric needs a sweep. The answer is its repress.
    LinkChange(OutgoingMad),
    /// Trap 144 from the port with LID `issuer`: its capabilities changed (another SM came or
    /// went, or its priority changed). The answer is its repress.
    CapabilityChange { repress: OutgoingMad, issuer: u16 },
    /// An SMInfo Get or Set from another SM (or a tool), for the election to answer.
    SmInfo(SmpRepr),
    /// Trap 256: an SMP failed a port's M_Key check. The answer is its repress.
    BadMKey(OutgoingMad),
    /// A TrapRepress: the end of a trap this SM sent. Nothing to answer.
    Repressed,
    /// Any other request, and its answer.
    Request(OutgoingMad),
    /// Nothing the SM can answer (counted as malformed).
    Unanswerable,
}

/// Sorts and answers the requests that reach the SM, and counts them.
#[derive(Debug, Clone, Default)]
pub struct Responder {
    heard: Unsolicited,
}

impl Responder {
    /// What has been heard since the last call.
    pub fn take_heard(&mut self) -> Unsolicited {
        std::mem::take(&mut self.heard)
    }

    /// A datagram that is no MAD at all.
    pub fn on_malformed(&mut self) {
        self.heard.malformed += 1;
    }

    /// A request MAD that reached the SM from LID `slid`, and its answer.
    pub fn on_request(&mut self, mad: &[u8], slid: u16) -> Heard {
        let Some(request) = parse_smp(mad).filter(|smp| !smp.method.is_response()) else {
            self.heard.malformed += 1;
            return Heard::Unanswerable;
        };
        match (request.method, request.attribute_id) {
            (Method::Trap, _) => self.on_trap(request, slid),
            (Method::TrapRepress, _) => Heard::Repressed,
            (Method::Get | Method::Set, AttributeId::SmInfo) => {
                self.heard.sm_info += 1;
                debug!(slid, method = ?request.method, "SMInfo request");
                Heard::SmInfo(request)
            }
            (Method::Get | Method::Set, attribute) => {
                self.heard.unsupported += 1;
                warn!(
                    slid,
                    ?attribute,
                    "request to the SM for an attribute it does not handle"
                );
                let data = request.data;
                Heard::Request(answer(
                    request,
                    slid,
                    Status::METHOD_ATTRIBUTE_UNSUPPORTED,
                    data,
                ))
            }
            _ => {
                self.heard.malformed += 1;
                Heard::Unanswerable
            }
        }
    }

    /// A trap, repressed; traps 128 and 144 are told apart.
    fn on_trap(&mut self, request: SmpRepr, slid: u16) -> Heard {
        self.heard.traps += 1;
        let notice = generic_notice(&request.data);
        let trap = notice.as_ref().map(|notice| notice.trap_number());
        info!(
            slid,
            trap,
            modifier = request.attribute_modifier,
            "trap received; repressed"
        );
        let data = request.data;
        let repress = answer(request, slid, Status::OK, data);
        match (trap, notice) {
            (Some(NoticeRepr::TRAP_LINK_STATE_CHANGE), _) => {
                self.heard.link_changes += 1;
                Heard::LinkChange(repress)
            }
            (Some(NoticeRepr::TRAP_CAPABILITY_CHANGE), Some(notice)) => Heard::CapabilityChange {
                repress,
                issuer: notice.issuer_lid(),
            },
            (Some(NoticeRepr::TRAP_BAD_M_KEY), Some(notice)) => {
                self.heard.bad_m_keys += 1;
                // OpenSM logs the notice with the key the SMP carried; that key may be the
                // SM's own (one it lost), so it is not logged here.
                let attribute = AttributeId::from(notice.trap256_attribute_id());
                warn!(
                    lid = notice.trap256_lid_addr(),
                    method = ?Method::from(notice.trap256_method()),
                    ?attribute,
                    "trap 256: an SMP with a bad M_Key was refused"
                );
                Heard::BadMKey(repress)
            }
            _ => Heard::Request(repress),
        }
    }
}

/// A trap's Notice, when it is a generic one (IBA 14.2.5.1: trap numbers 64 to 145 and the
/// like, not a vendor's).
pub(crate) fn generic_notice(data: &[u8; 64]) -> Option<Notice<&[u8]>> {
    Notice::new_checked(&data[..])
        .ok()
        .filter(|notice| notice.is_generic())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trap;
    use ibqos_exchange::Address;
    use ibqos_mad::{DrPath, Routing, Smp};

    fn emit(smp: &SmpRepr) -> [u8; 256] {
        let mut mad = [0u8; 256];
        smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
        mad
    }

    fn reply_of(heard: Heard) -> (SmpRepr, Address) {
        let (Heard::Request(reply)
        | Heard::LinkChange(reply)
        | Heard::CapabilityChange { repress: reply, .. }) = heard
        else {
            panic!("{heard:?}")
        };
        (parse_smp(&reply.mad).unwrap(), reply.address)
    }

    #[test]
    fn a_trap_is_repressed_with_its_tid_and_128_and_144_are_told_apart() {
        let mut responder = Responder::default();
        let heard = responder.on_request(&trap(128, 7), 7);
        assert!(matches!(heard, Heard::LinkChange(_)), "{heard:?}");
        let (repress, dlid) = reply_of(heard);
        assert_eq!(
            (repress.method, repress.transaction_id, dlid),
            (Method::TrapRepress, 0x1234_0000_0042, Address::Lid(7))
        );
        assert!(matches!(
            responder.on_request(&trap(144, 7), 7),
            Heard::CapabilityChange { issuer: 7, .. }
        ));
        let heard = responder.take_heard();
        assert_eq!((heard.traps, heard.link_changes), (2, 1));
        assert_eq!(responder.take_heard(), Unsolicited::default());
    }

    #[test]
    fn sminfo_goes_to_the_election_and_a_trap_repress_ends_quietly() {
        let mut responder = Responder::default();
        let path = DrPath::request(&[1, 3]).unwrap();
        let request = SmpRepr::get(AttributeId::SmInfo, 0, 9, Routing::Directed(path));
        assert_eq!(
            responder.on_request(&emit(&request), 0xffff),
            Heard::SmInfo(request)
        );
        let repress = SmpRepr {
            method: Method::TrapRepress,
            ..SmpRepr::get(AttributeId::Notice, 0, 5, Routing::Lid)
        };
        assert_eq!(responder.on_request(&emit(&repress), 4), Heard::Repressed);
        let heard = responder.take_heard();
        assert_eq!((heard.sm_info, heard.malformed), (1, 0));
    }

    #[test]
    fn unknown_attributes_are_unsupported_and_non_requests_unanswerable() {
        let mut responder = Responder::default();
        let query = emit(&SmpRepr::get(AttributeId::PortInfo, 0, 5, Routing::Lid));
        let (answer, _) = reply_of(responder.on_request(&query, 4));
        assert_eq!(
            (answer.method, answer.status),
            (Method::GetResp, Status::METHOD_ATTRIBUTE_UNSUPPORTED)
        );
        let response = emit(&SmpRepr {
            method: Method::GetResp,
            ..SmpRepr::get(AttributeId::PortInfo, 0, 5, Routing::Lid)
        });
        assert_eq!(responder.on_request(&response, 4), Heard::Unanswerable);
        assert_eq!(responder.on_request(&[0; 10], 4), Heard::Unanswerable);
        let heard = responder.take_heard();
        assert_eq!((heard.unsupported, heard.malformed), (1, 2));
    }
}
