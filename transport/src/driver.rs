//! Drives the sans-IO sweep over a transport: the only place where the SM meets the clock and
//! the fabric.

use std::time::Duration;

use ibqos_mad::{
    Attribute, AttributeId, Direction, Mad, Method, MgmtClass, Notice, NoticeRepr, Routing,
    SmInfoRepr, SmState, Smp, SmpRepr, Status,
};
use tracing::{debug, info, warn};

use crate::{Address, Incoming, Outgoing, Transport, TransportError};
use ibqos_sm::engine::scheduler::Transmit;
use ibqos_sm::engine::sweep::{Learned, Sweep, SweepConfig};

/// How long to wait for the fabric when nothing is due sooner: long enough not to spin, short
/// enough that a stalled sweep is noticed.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// What arrived that was not an answer to the sweep.
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
    /// Datagrams that are not MADs at all.
    pub malformed: u64,
}

/// Who this SM is, for SMInfo answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmIdentity {
    pub port_guid: u64,
    pub priority: u8,
}

/// MAD status "the method/attribute combination is not supported" (IBA 13.4.7).
const UNSUPPORTED: Status = Status(0x000c);

/// How often [`listen`] looks at its `interrupted` check when nothing arrives.
const LISTEN_STEP: Duration = Duration::from_millis(50);

/// Runs one sweep to SUBNET UP or failure, knowing what earlier sweeps `learned`.
/// `unsolicited` holds what arrived since the last sweep (see [`listen`]); the sweep's own
/// arrivals are added to it.
pub fn run_sweep(
    transport: &mut dyn Transport,
    config: SweepConfig,
    learned: Learned,
    identity: SmIdentity,
    mut unsolicited: Unsolicited,
) -> Result<(Sweep, Unsolicited), TransportError> {
    let mut sweep = Sweep::start(config, learned, transport.now());
    loop {
        let now = transport.now();
        while let Some(transmit) = sweep.poll_transmit(now) {
            transport.send(&outgoing(&transmit))?;
        }
        if sweep.is_done() {
            return Ok((sweep, unsolicited));
        }
        let wait = sweep
            .next_deadline()
            .map_or(IDLE_WAIT, |d| d.saturating_duration_since(now));
        match transport.recv(wait)? {
            Some(Incoming::Mad { mad, slid }) => match parse(&mad) {
                Some(smp) if smp.method.is_response() => sweep.on_response(transport.now(), smp),
                _ => on_request(transport, &mad, slid, identity, &mut unsolicited)?,
            },
            Some(Incoming::Dropped { mad }) => match parse(&mad) {
                Some(smp) => sweep.on_dropped(transport.now(), smp),
                None => unsolicited.malformed += 1,
            },
            None => {}
        }
        sweep.on_time(transport.now());
    }
}

/// Why [`listen`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The time given has come.
    Due,
    /// A switch sent trap 128: a link changed state, so sweep now (as OpenSM does).
    LinkChange,
    /// The `interrupted` check said so (a signal).
    Interrupted,
}

/// Between sweeps: answers what reaches the SM (traps, SMInfo, SA requests; responses to the
/// last sweep that come late are ignored) until `until`, a trap 128, or `interrupted()`.
pub fn listen(
    transport: &mut dyn Transport,
    until: std::time::Instant,
    identity: SmIdentity,
    unsolicited: &mut Unsolicited,
    interrupted: &dyn Fn() -> bool,
) -> Result<Wake, TransportError> {
    loop {
        if interrupted() {
            return Ok(Wake::Interrupted);
        }
        let now = transport.now();
        if now >= until {
            return Ok(Wake::Due);
        }
        let incoming = transport.recv((until - now).min(LISTEN_STEP))?;
        let Some(Incoming::Mad { mad, slid }) = incoming else {
            continue;
        };
        if parse(&mad).is_some_and(|smp| smp.method.is_response()) {
            debug!("a response after its sweep ended; ignored");
            continue;
        }
        let link_changes = unsolicited.link_changes;
        on_request(transport, &mad, slid, identity, unsolicited)?;
        if unsolicited.link_changes > link_changes {
            return Ok(Wake::LinkChange);
        }
    }
}

/// A request that reached the SM gets its answer; anything that is no request is counted.
fn on_request(
    transport: &mut dyn Transport,
    mad: &[u8],
    slid: u16,
    identity: SmIdentity,
    unsolicited: &mut Unsolicited,
) -> Result<(), TransportError> {
    match answer(mad, slid, identity, unsolicited) {
        Some(reply) => transport.send(&reply),
        None => {
            unsolicited.malformed += 1;
            Ok(())
        }
    }
}

fn outgoing(transmit: &Transmit) -> Outgoing {
    let mut mad = [0u8; 256];
    transmit.smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let address = transmit.dlid.map_or(Address::Directed, Address::Lid);
    Outgoing { mad, address }
}

/// An SMP from the fabric, or `None` for anything else (a short datagram, another class).
fn parse(mad: &[u8]) -> Option<SmpRepr> {
    match Smp::new_checked(mad).and_then(|smp| SmpRepr::parse(&smp)) {
        Ok(smp) => Some(smp),
        Err(error) => {
            debug!(%error, len = mad.len(), "not an SMP; dropped");
            None
        }
    }
}

/// The answer to a request that reached the SM, as OpenSM's `osm_resp_send` builds it: the
/// request with the response method, the D bit on a directed route, and the requester's LID as
/// the destination. `None` for anything that is not a request MAD.
fn answer(
    mad: &[u8],
    slid: u16,
    identity: SmIdentity,
    unsolicited: &mut Unsolicited,
) -> Option<Outgoing> {
    let header = Mad::new_checked(mad).ok()?;
    if header.method().is_response() || mad.len() < 256 {
        return None;
    }
    if header.mgmt_class() == MgmtClass::SubnAdm {
        // This SM has no SA yet: every SA request gets "unsupported" rather than silence, so a
        // client fails at once instead of timing out.
        unsolicited.unsupported += 1;
        let mut reply = [0u8; 256];
        reply.copy_from_slice(&mad[..256]);
        let mut view = Mad::new_unchecked(&mut reply[..]);
        view.set_method(Method::from(u8::from(header.method()) | 0x80));
        view.set_status(UNSUPPORTED);
        return Some(Outgoing {
            mad: reply,
            address: Address::Lid(slid),
        });
    }
    let request = parse(mad)?;
    let (method, status, data) = match (request.method, request.attribute_id) {
        (Method::Trap, _) => {
            unsolicited.traps += 1;
            let trap = Notice::new_checked(&request.data[..])
                .ok()
                .filter(|notice| notice.is_generic())
                .map(|notice| notice.trap_number());
            if trap == Some(NoticeRepr::TRAP_LINK_STATE_CHANGE) {
                unsolicited.link_changes += 1;
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
            unsolicited.sm_info += 1;
            debug!(slid, method = ?request.method, "SMInfo from another SM");
            let info = SmInfoRepr {
                guid: identity.port_guid,
                sm_key: 0,
                act_count: u32::try_from(unsolicited.sm_info).unwrap_or(u32::MAX),
                priority: identity.priority & 0xf,
                sm_state: SmState::Master,
            };
            (
                Method::GetResp,
                Status::OK,
                Attribute::SmInfo(info).to_data(),
            )
        }
        (Method::Get | Method::Set, attribute) => {
            unsolicited.unsupported += 1;
            warn!(
                slid,
                ?attribute,
                "request to the SM for an attribute it does not handle"
            );
            (Method::GetResp, UNSUPPORTED, request.data)
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
    let reply = SmpRepr {
        method,
        status,
        data,
        routing,
        ..request
    };
    let dlid = match reply.routing {
        Routing::Lid => Some(slid),
        Routing::Directed(_) => None,
    };
    Some(outgoing(&Transmit { smp: reply, dlid }))
}
