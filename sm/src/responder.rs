//! The SM's answers to everything that reaches it unasked, during a sweep and between sweeps:
//! traps are repressed, SMInfo is answered as the master SM, and everything else (SA queries
//! among it, until this SM has an SA) gets "method/attribute unsupported" rather than silence,
//! so a client fails at once instead of timing out.
//!
//! Answers are built as OpenSM's `osm_resp_send` builds them: the request with the response
//! method, the D bit set on a directed route, and the requester's LID as the destination.

use ibqos_mad::{
    Attribute, AttributeId, Direction, InvalidField, Mad, Method, MgmtClass, Notice, NoticeRepr,
    Routing, SmInfoRepr, SmState, Smp, SmpRepr, Status,
};
use tracing::{debug, info, warn};

use crate::engine::scheduler::Transmit;
use crate::manager::OutgoingMad;

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
    /// Other requests (SA queries, attributes an SM does not handle), answered with status
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
        let answer = Mad::new_checked(mad)
            .ok()
            .filter(|header| !header.method().is_response() && mad.len() >= 256)
            .and_then(|header| match header.mgmt_class() {
                MgmtClass::SubnAdm => {
                    Some((self.sa_unsupported(mad, header.method(), slid), false))
                }
                _ => self.smp_answer(parse_smp(mad)?, slid),
            });
        match answer {
            Some((reply, true)) => Heard::LinkChange(reply),
            Some((reply, false)) => Heard::Request(reply),
            None => {
                self.heard.malformed += 1;
                Heard::Unanswerable
            }
        }
    }

    /// Every SA request is unsupported until this SM has an SA.
    fn sa_unsupported(&mut self, mad: &[u8], method: Method, slid: u16) -> OutgoingMad {
        self.heard.unsupported += 1;
        let mut reply = [0u8; 256];
        reply.copy_from_slice(&mad[..256]);
        let mut view = Mad::new_unchecked(&mut reply[..]);
        view.set_method(method.response());
        view.set_status(unsupported());
        OutgoingMad {
            mad: reply,
            dlid: Some(slid),
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
                (request.method.response(), unsupported(), request.data)
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

/// MAD status "the method/attribute combination is not supported" (IBA 13.4.7).
fn unsupported() -> Status {
    Status::invalid(InvalidField::MethodAttributeUnsupported)
}

/// An SMP from the fabric, or `None` for anything else (a short datagram, another class).
pub(crate) fn parse_smp(mad: &[u8]) -> Option<SmpRepr> {
    match Smp::new_checked(mad).and_then(|smp| SmpRepr::parse(&smp)) {
        Ok(smp) => Some(smp),
        Err(error) => {
            debug!(%error, len = mad.len(), "not an SMP; dropped");
            None
        }
    }
}
