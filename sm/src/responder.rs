//! The SM's answers to the SMPs that reach it unasked, during a sweep and between sweeps: traps
//! are repressed, SMInfo is answered as the master SM, and any other Get or Set gets
//! "method/attribute unsupported" rather than silence, so a client fails at once instead of
//! timing out. SA queries go to the subnet administrator ([`crate::sa`]), not here.
//!
//! Answers are built as OpenSM's `osm_resp_send` builds them: the request with the response
//! method, the D bit set on a directed route, and the requester's LID as the destination.

use ibqos_mad::{
    Attribute, AttributeId, Direction, Method, Notice, NoticeRepr, Routing, SmInfoRepr, SmState,
    SmpRepr, Status,
};
use tracing::{debug, info, warn};

use crate::engine::scheduler::OutgoingMad;
use crate::engine::scheduler::Transmit;

/// What reached the SM that was not an answer to its sweep.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unsolicited {
    /// Traps (128 link state change, 144 capability change, ...), each answered with
    /// TrapRepress.
    pub traps: u64,
    /// Of those, traps 128: a switch saw a link change state, so the fabric needs a sweep.
    pub link_changes: u64,
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
    /// Any other request, and its answer.
    Request(OutgoingMad),
    /// Nothing the SM can answer (counted as malformed).
    Unanswerable,
}

/// Answers requests as the master SM of one port, and counts them.
#[derive(Debug, Clone)]
pub struct Responder {
    port_guid: u64,
    priority: u8,
    heard: Unsolicited,
}

impl Responder {
    /// The responder of the SM on the port with this GUID, at this SM priority (0-15).
    pub fn new(port_guid: u64, priority: u8) -> Self {
        Responder {
            port_guid,
            priority: priority & 0xf,
            heard: Unsolicited::default(),
        }
    }

    /// A new SM priority (the configuration was read again).
    pub fn set_priority(&mut self, priority: u8) {
        self.priority = priority & 0xf;
    }

    /// What has been heard since the last call. SMInfo's ActCount counts from there again.
    pub fn take_heard(&mut self) -> Unsolicited {
        std::mem::take(&mut self.heard)
    }

    /// A datagram that is no MAD at all.
    pub fn on_malformed(&mut self) {
        self.heard.malformed += 1;
    }

    /// A request MAD that reached the SM from LID `slid`, and its answer.
    pub fn on_request(&mut self, mad: &[u8], slid: u16) -> Heard {
        let answer = parse_smp(mad)
            .filter(|smp| !smp.method.is_response())
            .and_then(|smp| self.smp_answer(smp, slid));
        match answer {
            Some((reply, true)) => Heard::LinkChange(reply),
            Some((reply, false)) => Heard::Request(reply),
            None => {
                self.heard.malformed += 1;
                Heard::Unanswerable
            }
        }
    }

    /// The answer to an SMP, and whether it was trap 128; `None` for a method no SM answers.
    fn smp_answer(&mut self, request: SmpRepr, slid: u16) -> Option<(OutgoingMad, bool)> {
        let mut link_change = false;
        let (method, status, data) = match (request.method, request.attribute_id) {
            (Method::Trap, _) => {
                self.heard.traps += 1;
                let trap = Notice::new_checked(&request.data[..])
                    .ok()
                    .filter(|notice| notice.is_generic())
                    .map(|notice| notice.trap_number());
                if trap == Some(NoticeRepr::TRAP_LINK_STATE_CHANGE) {
                    self.heard.link_changes += 1;
                    link_change = true;
                }
                info!(
                    slid,
                    trap,
                    modifier = request.attribute_modifier,
                    "trap received; repressed"
                );
                (Method::TrapRepress, Status::OK, request.data)
            }
            (Method::Get | Method::Set, AttributeId::SmInfo) => {
                self.heard.sm_info += 1;
                debug!(slid, method = ?request.method, "SMInfo from another SM");
                let info = SmInfoRepr {
                    guid: self.port_guid,
                    sm_key: 0,
                    act_count: u32::try_from(self.heard.sm_info).unwrap_or(u32::MAX),
                    priority: self.priority,
                    sm_state: SmState::Master,
                };
                (
                    request.method.response(),
                    Status::OK,
                    Attribute::SmInfo(info).to_data(),
                )
            }
            (Method::Get | Method::Set, attribute) => {
                self.heard.unsupported += 1;
                warn!(
                    slid,
                    ?attribute,
                    "request to the SM for an attribute it does not handle"
                );
                (
                    request.method.response(),
                    Status::METHOD_ATTRIBUTE_UNSUPPORTED,
                    request.data,
                )
            }
            _ => return None,
        };
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
        let reply = SmpRepr {
            method,
            status,
            data,
            routing,
            ..request
        };
        Some((
            OutgoingMad::from(&Transmit { smp: reply, dlid }),
            link_change,
        ))
    }
}

/// An SMP from the fabric, or `None` for anything else (a short datagram, another class).
pub(crate) fn parse_smp(mad: &[u8]) -> Option<SmpRepr> {
    match SmpRepr::parse_bytes(mad) {
        Ok(smp) => Some(smp),
        Err(error) => {
            debug!(%error, len = mad.len(), "not an SMP; dropped");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scheduler::Address;
    use ibqos_mad::{DrPath, NoticeType, SmInfo, Smp};

    const GUID: u64 = 0x0002_c900_0010_0001;

    fn emit(smp: &SmpRepr) -> [u8; 256] {
        let mut mad = [0u8; 256];
        smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
        mad
    }

    fn reply_of(heard: Heard) -> (SmpRepr, Address) {
        let (Heard::Request(reply) | Heard::LinkChange(reply)) = heard else {
            panic!("{heard:?}")
        };
        (parse_smp(&reply.mad).unwrap(), reply.address)
    }

    fn trap(number: u16) -> [u8; 256] {
        let notice = NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Urgent,
            producer_type: NoticeRepr::PRODUCER_SWITCH,
            trap_number: number,
            issuer_lid: 7,
            notice_toggle: false,
            notice_count: 0,
            data_details: [0; 54],
        };
        emit(&SmpRepr {
            method: Method::Trap,
            transaction_id: 0x1234_0000_0042,
            data: Attribute::Notice(notice).to_data(),
            ..SmpRepr::get(AttributeId::Notice, 0, 0, Routing::Lid)
        })
    }

    #[test]
    fn a_trap_is_repressed_with_its_tid_and_128_asks_for_a_sweep() {
        let mut responder = Responder::new(GUID, 3);
        let heard = responder.on_request(&trap(128), 7);
        assert!(matches!(heard, Heard::LinkChange(_)), "{heard:?}");
        let (repress, dlid) = reply_of(heard);
        assert_eq!(
            (repress.method, repress.transaction_id, dlid),
            (Method::TrapRepress, 0x1234_0000_0042, Address::Lid(7))
        );
        assert!(matches!(
            responder.on_request(&trap(144), 7),
            Heard::Request(_)
        ));
        let heard = responder.take_heard();
        assert_eq!((heard.traps, heard.link_changes), (2, 1));
        assert_eq!(responder.take_heard(), Unsolicited::default());
    }

    #[test]
    fn sminfo_is_answered_as_the_master_on_the_route_it_came() {
        let mut responder = Responder::new(GUID, 0x13);
        let path = DrPath::request(&[1, 3]).unwrap();
        let request = SmpRepr::get(AttributeId::SmInfo, 0, 9, Routing::Directed(path));
        let (answer, dlid) = reply_of(responder.on_request(&emit(&request), 0xffff));
        assert_eq!(
            (answer.method, answer.status, dlid),
            (Method::GetResp, Status::OK, Address::Directed)
        );
        let Routing::Directed(back) = answer.routing else {
            panic!("{:?}", answer.routing)
        };
        assert_eq!(back.direction, Direction::Returning);
        let info = SmInfo::new_checked(&answer.data[..]).unwrap();
        assert_eq!(
            (info.guid(), info.priority(), info.act_count()),
            (GUID, 3, 1)
        );
    }

    #[test]
    fn unknown_attributes_are_unsupported_and_non_requests_unanswerable() {
        let mut responder = Responder::new(GUID, 0);
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
