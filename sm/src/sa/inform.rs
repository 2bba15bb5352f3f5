//! Event subscriptions and forwarding (IBA 13.4.8, 15.2.5.12; OpenSM osm_sa_informinfo.c and
//! osm_inform.c): InformInfo Sets subscribe and unsubscribe, InformInfoRecords list the
//! subscriptions, and every Notice the SM issues (traps 64 to 67) or receives from a port
//! (128, 144, ...) goes as a Report to each subscriber it matches, until a ReportResp retires
//! it.

use std::time::{Duration, Instant};

use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_mad::sa::{
    InformInfoRecordRepr, InformInfoRepr, Record, SaAttributeId, SaMad, SaNoticeRepr,
};
use ibqos_mad::{Gid, Method, MgmtClass, Notice, NoticeRepr, NoticeType, Status};
use tracing::{debug, warn};

use super::{Query, Records, new_sa_mad};

/// The first TID of the SM's Reports (OpenSM osm_inform.c `send_report`).
const FIRST_REPORT_TID: u32 = 0x02da_b000;
/// How long a Report waits for its ReportResp, and how many times it is sent. OpenSM sends once
/// and only logs the timeout (ERR 1A06); resending a few times costs nothing and survives a
/// lost MAD.
const REPORT_TIMEOUT: Duration = Duration::from_secs(1);
const REPORT_ATTEMPTS: u32 = 3;
/// ProducerType of a notice the SM issues (IBA 13.4.8.1: 4 = class manager).
const PRODUCER_SUBNET_MANAGER: u32 = 4;
/// Trap numbers the SM issues itself (IBA 14.2.5.1).
pub(super) const TRAP_GID_IN_SERVICE: u16 = 64;
pub(super) const TRAP_GID_OUT_OF_SERVICE: u16 = 65;
pub(super) const TRAP_MGID_CREATED: u16 = 66;
pub(super) const TRAP_MGID_DELETED: u16 = 67;
/// Traps from ports that OpenSM keeps to itself (osm_trap_rcv.c:636-637): port health.
const UNFORWARDED_TRAPS: std::ops::RangeInclusive<u16> = 129..=131;

/// One subscription: the InformInfo as stored, and where its Reports go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subscription {
    inform: InformInfoRepr,
    subscriber: Peer,
    subscriber_gid: Gid,
}

/// A Report waiting for its ReportResp.
#[derive(Debug, Clone)]
struct Pending {
    mad: Vec<u8>,
    to: Peer,
    tid: u32,
    sent: u32,
    due: Instant,
}

/// The SA's subscriptions and the Reports in flight.
#[derive(Debug)]
pub(super) struct Subscriptions {
    subscriptions: Vec<Subscription>,
    pending: Vec<Pending>,
    next_tid: u32,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Subscriptions {
            subscriptions: Vec::new(),
            pending: Vec::new(),
            next_tid: FIRST_REPORT_TID,
        }
    }
}

impl Subscriptions {
    /// SubnAdmSet(InformInfo): subscribe or unsubscribe `from` (osm_sa_informinfo.c:403-598).
    /// `known_gid` says whether a GID is a port of the fabric.
    pub fn set(
        &mut self,
        query: &Query<'_>,
        from: Peer,
        subscriber_gid: Gid,
        known_gid: impl Fn(Gid) -> bool,
    ) -> Result<Records, Status> {
        let mut inform =
            InformInfoRepr::parse_bytes(query.template).map_err(|_| Status::SA_REQ_INVALID)?;
        let security_trap = inform.is_generic != 0 && (256..=259).contains(&inform.trap_number);
        if inform.subscribe > 1 || (security_trap && !query.trusted) {
            return Err(Status::SA_REQ_INVALID);
        }
        let mut records = Records::new(InformInfoRepr::SIZE);
        if inform.subscribe == 1 {
            if inform.gid != Gid::default() && !known_gid(inform.gid) {
                debug!(gid = %inform.gid, "subscription for a GID that is no port; refused");
                return Err(Status::SA_REQ_INVALID);
            }
            // Reports go to the QP the request came from (srp_daemon subscribes from a UD QP).
            inform.qpn = from.qp;
            let subscription = Subscription {
                inform,
                subscriber: from,
                subscriber_gid,
            };
            if !self.subscriptions.contains(&subscription) {
                self.subscriptions.push(subscription);
            }
        } else {
            let mut wanted = inform;
            wanted.subscribe = 1;
            let at = self
                .subscriptions
                .iter()
                .position(|s| s.subscriber == from && s.inform == wanted)
                .ok_or(Status::SA_REQ_INVALID)?;
            self.subscriptions.remove(at);
        }
        records.push(&inform);
        Ok(records)
    }

    /// InformInfoRecords (osm_sa_informinfo.c:238-398): by SubscriberGID and Enum (always 0),
    /// the QPN zeroed for an untrusted requester.
    pub fn records(&self, query: &Query<'_>) -> Records {
        let mut records = Records::new(InformInfoRecordRepr::SIZE);
        let Ok(template) = InformInfoRecordRepr::parse_bytes(query.template) else {
            return records;
        };
        let mask = query.component_mask;
        for subscription in &self.subscriptions {
            if (mask & 1 != 0 && template.subscriber_gid != subscription.subscriber_gid)
                || (mask & 2 != 0 && template.enumeration != 0)
            {
                continue;
            }
            let mut inform = subscription.inform;
            if !query.trusted {
                inform.qpn = 0;
            }
            records.push(&InformInfoRecordRepr {
                subscriber_gid: subscription.subscriber_gid,
                enumeration: 0,
                inform_info: inform,
            });
        }
        records
    }

    /// A notice for the subscribers it matches: a Report to each, queued for `out`.
    pub fn notify(&mut self, now: Instant, notice: &SaNoticeRepr, out: &mut Vec<OutgoingMad>) {
        self.notify_permitted(now, notice, |_| true, out);
    }

    /// A notice for the subscribers it matches and `permitted` lets hear of it (OpenSM's
    /// `is_access_permitted`, by the subscriber's address).
    pub fn notify_permitted(
        &mut self,
        now: Instant,
        notice: &SaNoticeRepr,
        permitted: impl Fn(Peer) -> bool,
        out: &mut Vec<OutgoingMad>,
    ) {
        let n = &notice.notice;
        if n.is_generic && UNFORWARDED_TRAPS.contains(&n.trap_number) {
            return;
        }
        let targets: Vec<Peer> = self
            .subscriptions
            .iter()
            .filter(|s| matches(&s.inform, notice) && permitted(s.subscriber))
            .map(|s| s.subscriber)
            .collect();
        for to in targets {
            let tid = self.next_tid;
            self.next_tid = self.next_tid.wrapping_add(1);
            let mad = report(notice, tid);
            debug!(
                lid = to.lid,
                qp = to.qp,
                trap = n.trap_number,
                "Report to a subscriber"
            );
            out.push(OutgoingMad {
                class: MgmtClass::SubnAdm,
                mad: mad.clone(),
                address: Address::Peer(to),
            });
            self.pending.push(Pending {
                mad,
                to,
                tid,
                sent: 1,
                due: now + REPORT_TIMEOUT,
            });
        }
    }

    /// A ReportResp: its Report is delivered.
    pub fn on_report_resp(&mut self, tid: u64) {
        self.pending
            .retain(|p| u64::from(p.tid) != tid & 0xffff_ffff);
    }

    /// Reports unanswered past their time are sent again, or given up.
    pub fn on_time(&mut self, now: Instant, out: &mut Vec<OutgoingMad>) {
        self.pending.retain_mut(|p| {
            if p.due > now {
                return true;
            }
            if p.sent >= REPORT_ATTEMPTS {
                warn!(
                    lid = p.to.lid,
                    "no ReportResp after {REPORT_ATTEMPTS} Reports; given up (OpenSM ERR 1A06)"
                );
                return false;
            }
            p.sent += 1;
            p.due = now + REPORT_TIMEOUT;
            out.push(OutgoingMad {
                class: MgmtClass::SubnAdm,
                mad: p.mad.clone(),
                address: Address::Peer(p.to),
            });
            true
        });
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.due).min()
    }
}

/// Whether a subscription wants a notice (osm_inform.c `match_notice_to_inf_rec`).
fn matches(inform: &InformInfoRepr, notice: &SaNoticeRepr) -> bool {
    let n = &notice.notice;
    let issuer = if inform.gid != Gid::default() {
        inform.gid == notice.issuer_gid
    } else {
        inform.lid_range_begin == 0xffff
            || (inform.lid_range_begin..=inform.lid_range_end).contains(&n.issuer_lid)
    };
    let kind = (inform.is_generic != 0) == n.is_generic
        && (inform.notice_type == 0xffff
            || inform.notice_type == u16::from(u8::from(n.notice_type)));
    let source = inform.trap_number == 0xffff || inform.trap_number == n.trap_number;
    let producer = inform.producer_type == 0xff_ffff || inform.producer_type == n.producer_type;
    issuer && kind && source && producer
}

/// A SubnAdmReport(Notice) (osm_inform.c `send_report`).
fn report(notice: &SaNoticeRepr, tid: u32) -> Vec<u8> {
    let mut mad = new_sa_mad(Method::Report, SaAttributeId::Notice, u64::from(tid));
    notice.emit_bytes(SaMad::new_unchecked(&mut mad[..]).data_mut());
    mad
}

/// A notice the SM issues: a port's GID in (64) or out of (65) service, a multicast group
/// created (66) or deleted (67), with the port's GID or the group's MGID in the data details
/// (IBA 14.2.5.1; osm_multicast.c `mgrp_send_notice`), the SM its issuer.
pub(super) fn sm_notice(trap: u16, gid: Gid, sm_lid: u16, sm_gid: Gid) -> SaNoticeRepr {
    let mut bytes = [0; 64];
    let mut view = Notice::new_unchecked(&mut bytes[..]);
    view.set_trap64_gid(gid);
    let mut data_details = [0; 54];
    data_details.copy_from_slice(view.data_details());
    let notice = NoticeRepr {
        is_generic: true,
        notice_type: NoticeType::SubnetManagement,
        producer_type: PRODUCER_SUBNET_MANAGER,
        trap_number: trap,
        issuer_lid: sm_lid,
        notice_toggle: false,
        notice_count: 0,
        data_details,
    };
    SaNoticeRepr {
        notice,
        issuer_gid: sm_gid,
    }
}
