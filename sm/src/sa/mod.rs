//! Subnet administration (SA, IBA chapter 15): the queries the SM answers on QP1 about the
//! fabric it manages. Sans-IO like the rest of the manager: a request and its sender come in,
//! the answer goes out; time is passed in.
//!
//! What OpenSM 3.3.23 does, and so what clients depend on (OpenSM osm_sa_mad_ctrl.c, osm_sa.c):
//! - Until the first sweep brought the subnet up, requests are dropped unanswered: there is
//!   nothing to answer from. So are requests with an SM_Key that is neither 0 (untrusted) nor
//!   the SA's key (osmtest checks that they time out), methods the SA does not take, attributes
//!   it does not know, and requests from a LID it does not know.
//! - A Get answers one record (none: ERR_NO_RECORDS, more: ERR_TOO_MANY_RECORDS); a GetTable
//!   answers every match, none being a success with no record.
//! - An error answer is the request itself with the status set and the response method.
//! - A GetTable answer longer than one MAD is written whole with RMPP Active: the transport
//!   segments it (the kernel) or cuts it to one MAD (ibsim, which does no RMPP).

mod db;
mod inform;
mod multicast;
mod path;
mod policy;
mod records;
mod service;
mod sl2vl;
mod vlarb;

use std::time::Instant;

use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_mad::sa::{
    Record, RmppFlags, SA_CLASS_VERSION, SA_HEADER_LEN, SaAttributeId, SaMad, SaNoticeRepr,
};
use ibqos_mad::{AttributeId, Method, MgmtClass, Status};
use ibqos_mad::{Gid, Notice, NoticeRepr};
use tracing::{debug, warn};

use ibqos_qos::policy::{QosPolicy, ResolvedPolicy};

use crate::engine::subnet::PortKey;
use crate::engine::sweep::MulticastMembers;
use crate::engine::write::TableWrite;

pub use db::SaDb;
use inform::Subscriptions;
use multicast::Groups;
use service::Services;

/// The SA's SM_Key when none is configured (OpenSM's `sa_key` default).
pub const DEFAULT_SA_KEY: u64 = 1;

/// How the SA is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaConfig {
    /// `sa_key`: the SM_Key that makes a request trusted.
    pub sa_key: u64,
    /// `subnet_prefix`: the GID prefix of this subnet.
    pub subnet_prefix: u64,
    /// `subnet_timeout`: the PacketLifeTime of a path no QoS level sets.
    pub subnet_timeout: u8,
    /// The SM's priority, for its SMInfoRecord.
    pub sm_priority: u8,
    /// Whether QoS is on: then paths avoid SLs that a hop maps to VL15, and take the policy's
    /// QoS level.
    pub qos: bool,
    /// qos-policy.conf (or ibqos.toml's `[qos_policy]`), as read.
    pub policy: Option<QosPolicy>,
    /// The most record bytes one answer may hold ([`MAX_ANSWER_BYTES`]).
    pub max_answer_bytes: usize,
}

/// The most record bytes one answer holds by default: a million PathRecords, more than every
/// table of a 10,000-node fabric but its LFTs. A query matching more (every path of a large
/// fabric: 10,000 squared PathRecords would be 6.4 GB) is answered ERR_NO_RESOURCES, and its
/// paths are not computed past the bound. OpenSM sets no bound: it builds the whole answer.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

impl Default for SaConfig {
    fn default() -> Self {
        SaConfig {
            sa_key: DEFAULT_SA_KEY,
            subnet_prefix: 0xfe80_0000_0000_0000,
            subnet_timeout: 18,
            sm_priority: 0,
            qos: false,
            policy: None,
            max_answer_bytes: MAX_ANSWER_BYTES,
        }
    }
}

/// What the SA has been asked, for the sweep summary and the logs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SaCounts {
    /// Requests answered, with records or with an error status.
    pub answered: u64,
    /// Requests dropped unanswered, as OpenSM drops them.
    pub dropped: u64,
}

/// One SA request, checked and with its requester found.
#[derive(Debug)]
pub(crate) struct Query<'a> {
    pub method: Method,
    pub component_mask: u64,
    pub attribute_modifier: u32,
    /// The template record: the request's data.
    pub template: &'a [u8],
    /// The requester's endport.
    pub requester: PortKey,
    /// SM_Key was not 0 (it is then the SA's key: any other is dropped before).
    pub trusted: bool,
    /// The request's SM_Key.
    pub sm_key: u64,
    /// The request came with RMPP Active (a MultiPathRecord GetMulti must).
    pub rmpp_active: bool,
}

/// The records a query matched, each `size` bytes (OpenSM's `sizeof` of the record, the stride
/// of the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Records {
    pub size: usize,
    pub bytes: Vec<u8>,
}

impl Records {
    pub fn new(size: usize) -> Records {
        Records {
            size,
            bytes: Vec::new(),
        }
    }

    /// Appends one record.
    pub fn push(&mut self, record: &impl Record) {
        let start = self.bytes.len();
        self.bytes.resize(start + self.size, 0);
        record.emit_bytes(&mut self.bytes[start..]);
    }

    pub fn count(&self) -> usize {
        self.bytes.len().checked_div(self.size).unwrap_or(0)
    }
}

/// The subnet administrator of one SM.
#[derive(Debug, Default)]
pub struct Sa {
    config: SaConfig,
    /// `None` until the first sweep that brought the subnet up.
    db: Option<SaDb>,
    /// The policy applied to `db`: with QoS on and a policy that fits the fabric.
    policy: Option<ResolvedPolicy>,
    services: Services,
    subscriptions: Subscriptions,
    /// The multicast groups, kept across sweeps as clients join and leave them.
    groups: Groups,
    /// Reports to send: notices for subscribers, and resends.
    outgoing: Vec<OutgoingMad>,
    counts: SaCounts,
}

impl Sa {
    pub fn new(config: SaConfig) -> Sa {
        Sa {
            config,
            ..Sa::default()
        }
    }

    /// A new configuration (the settings were read again): the next query sees it, an edited
    /// policy included.
    pub fn set_config(&mut self, config: SaConfig) {
        self.config = config;
        self.apply_policy();
    }

    /// What the SA answers from from now on: the last sweep's snapshot. Ports that came or
    /// went since the last one are reported to their subscribers: traps 64 and 65, as OpenSM
    /// issues them at the end of a heavy sweep (osm_state_mgr.c, osm_drop_mgr.c). Ports that
    /// went leave their multicast groups, and the partitions' groups are created (see
    /// `multicast::Groups::on_snapshot`).
    /// The snapshot the SA answers from, once a sweep brought the subnet up.
    pub fn snapshot(&self) -> Option<&SaDb> {
        self.db.as_ref()
    }

    pub fn update(&mut self, now: Instant, db: SaDb) {
        if let Some(old) = &self.db {
            let (old_ports, new_ports) = (old.endport_guids(), db.endport_guids());
            let came = new_ports.iter().filter(|g| !old_ports.contains(g));
            let went = old_ports.iter().filter(|g| !new_ports.contains(g));
            let notices: Vec<(u16, u64)> = came
                .map(|g| (inform::TRAP_GID_IN_SERVICE, *g))
                .chain(went.map(|g| (inform::TRAP_GID_OUT_OF_SERVICE, *g)))
                .collect();
            for (trap, guid) in notices {
                let (sm_lid, sm_gid) = self.sm_address(&db);
                let port = Gid::new(self.config.subnet_prefix, guid);
                let notice = inform::sm_notice(trap, port, sm_lid, sm_gid);
                self.subscriptions.notify(now, &notice, &mut self.outgoing);
            }
        }
        self.groups.on_snapshot(&db, &self.config);
        self.db = Some(db);
        self.apply_policy();
        self.report_group_notices(now);
    }

    /// Traps 66 and 67 of the groups created and deleted, to the subscribers that hold the
    /// group's P_Key (osm_inform.c `is_access_permitted`).
    fn report_group_notices(&mut self, now: Instant) {
        let Some(db) = &self.db else {
            return;
        };
        for group in self.groups.take_notices() {
            let (sm_lid, sm_gid) = self.sm_address(db);
            let notice = inform::sm_notice(group.trap, group.mgid, sm_lid, sm_gid);
            let holds_pkey = |subscriber: Peer| {
                db.endport_of_lid(subscriber.lid)
                    .is_some_and(|port| db.has_pkey(port, group.p_key))
            };
            self.subscriptions
                .notify_permitted(now, &notice, holds_pkey, &mut self.outgoing);
        }
    }

    /// Per MLID, the port GUIDs of every member of every group on that MLID, whatever its
    /// JoinState (send-only members included): the ports OpenSM spans each MLID's tree over
    /// (osm_mcast_mgr.c `mcast_mgr_process_mlid`). An MLID whose groups have no member (a
    /// partition's group nobody joined yet) is listed with no port.
    pub fn multicast_members(&self) -> MulticastMembers {
        self.groups.members_by_mlid()
    }

    /// The multicast forwarding tables an MFT update (a sweep of the MFTs alone) left on the
    /// switches, for the MFTRecords.
    pub fn learn_mfts<'a>(&mut self, writes: impl Iterator<Item = &'a TableWrite>) {
        if let Some(db) = &mut self.db {
            for write in writes {
                db.learn_table(write);
            }
        }
    }

    /// Whether some MLID's members changed (a join, leave, group creation or deletion, a port
    /// leaving the fabric) since the last call: the MLIDs OpenSM marks for rerouting
    /// (`osm_sm_reroute_mlid`), so the multicast forwarding tables are due again. True once.
    pub fn take_multicast_changed(&mut self) -> bool {
        self.groups.take_changed()
    }

    /// The SM's LID and GID, the issuer of the notices it makes.
    fn sm_address(&self, db: &SaDb) -> (u16, Gid) {
        let port = db.sm_port.and_then(|key| db.port(key));
        let (lid, guid) = port.map_or((0, 0), |p| (p.lid, p.guid));
        (lid, Gid::new(self.config.subnet_prefix, guid))
    }

    /// A trap (an SMP Notice) that reached the SM from `slid`: forwarded to the subscribers it
    /// matches, with IssuerGID filled from the LID (osm_trap_rcv.c:639-669).
    pub fn on_trap(&mut self, now: Instant, notice: &[u8], slid: u16) {
        let (Some(db), Ok(notice)) = (&self.db, NoticeRepr::parse(&Notice::new_unchecked(notice)))
        else {
            return;
        };
        let guid = db
            .endport_of_lid(slid)
            .and_then(|key| db.port(key))
            .map_or(0, |p| p.guid);
        let notice = SaNoticeRepr {
            notice,
            issuer_gid: Gid::new(self.config.subnet_prefix, guid),
        };
        self.subscriptions.notify(now, &notice, &mut self.outgoing);
    }

    /// Time has passed: service leases end, unanswered Reports are sent again.
    pub fn on_time(&mut self, now: Instant) {
        self.services.expire(now);
        self.subscriptions.on_time(now, &mut self.outgoing);
    }

    /// When [`on_time`](Sa::on_time) is next needed.
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            self.services.next_deadline(),
            self.subscriptions.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The Reports to send now.
    pub fn take_outgoing(&mut self) -> Vec<OutgoingMad> {
        std::mem::take(&mut self.outgoing)
    }

    /// The policy's groups resolved against the snapshot, as OpenSM re-reads its policy at
    /// every heavy sweep; only with QoS on, as OpenSM reads it only then.
    fn apply_policy(&mut self) {
        self.policy = match (&self.db, &self.config.policy) {
            (Some(db), Some(policy)) if self.config.qos => policy::resolve(policy, db),
            _ => None,
        };
    }

    /// Forgets every snapshot, group, service and subscription: the SM is no longer master,
    /// and a master's SA state is not handed over (OpenSM's `state_mgr_sa_clean`).
    pub fn reset(&mut self) {
        *self = Sa::new(self.config.clone());
    }

    /// Whether the SA answers: after a sweep brought the subnet up.
    pub fn is_serving(&self) -> bool {
        self.db.is_some()
    }

    /// What was answered and dropped since the last call.
    pub fn take_counts(&mut self) -> SaCounts {
        std::mem::take(&mut self.counts)
    }

    /// An SA MAD from `from`, and the answer to send, if it gets one. `act_count` is the SM's
    /// SMInfo ActCount now, for its own SMInfoRecord.
    pub fn on_request(
        &mut self,
        now: Instant,
        mad: &[u8],
        from: Peer,
        act_count: u32,
    ) -> Option<OutgoingMad> {
        let answer = self.answer(now, mad, from, act_count);
        self.report_group_notices(now);
        match answer {
            Some(_) => self.counts.answered += 1,
            None => self.counts.dropped += 1,
        }
        answer.map(|mad| OutgoingMad {
            class: MgmtClass::SubnAdm,
            mad,
            address: Address::Peer(from),
        })
    }

    fn answer(&mut self, now: Instant, mad: &[u8], from: Peer, act_count: u32) -> Option<Vec<u8>> {
        let request = SaMad::new_checked(mad).ok().filter(|_| mad.len() >= 256)?;
        let header = request.header();
        if header.mgmt_class() != MgmtClass::SubnAdm || header.class_version() != SA_CLASS_VERSION {
            debug!(
                len = mad.len(),
                "not an SA request of class version 2; dropped"
            );
            return None;
        }
        let Some(db) = &self.db else {
            debug!("SA request before the subnet is up; dropped");
            return None;
        };
        let sm_key = request.sm_key();
        if sm_key != 0 && sm_key != self.config.sa_key {
            warn!(
                slid = from.lid,
                "SA request with a wrong SM_Key; dropped (OpenSM ERR 1A04)"
            );
            return None;
        }
        let method = header.method();
        if method == Method::ReportResp {
            // A subscriber has our Report; it gets no answer (osm_sa_mad_ctrl.c:358-368).
            self.subscriptions.on_report_resp(header.transaction_id());
            return None;
        }
        if !matches!(
            method,
            Method::Get | Method::GetTable | Method::GetMulti | Method::Set | Method::Delete
        ) {
            debug!(slid = from.lid, %method, "SA method not taken; dropped");
            return None;
        }
        let attribute = request.sa_attribute_id();
        if matches!(method, Method::Set | Method::Delete) && !takes_set(attribute) {
            // OpenSM hands Sets and Deletes to a dispatcher that knows only the attributes a
            // client may change; for any other it logs ERR 1A02 and answers nothing, so osmtest's
            // SMInfoRecord Set waits for ever against it too (osm_sa_mad_ctrl.c).
            debug!(slid = from.lid, %attribute, %method, "Set/Delete of a read-only record; dropped");
            return None;
        }
        let Some(requester) = db.endport_of_lid(from.lid) else {
            debug!(slid = from.lid, "SA request from an unknown LID; dropped");
            return None;
        };
        let query = Query {
            method,
            component_mask: request.component_mask(),
            attribute_modifier: header.attribute_modifier(),
            template: request.data(),
            requester,
            trusted: sm_key != 0,
            sm_key,
            rmpp_active: request.rmpp_flags().contains(RmppFlags::ACTIVE),
        };
        let found = match attribute {
            SaAttributeId::ServiceRecord => self.services.answer(now, &query),
            SaAttributeId::InformInfo if method == Method::Set => {
                let subscriber = db.port(requester).map_or(0, |p| p.guid);
                let subscriber_gid = Gid::new(self.config.subnet_prefix, subscriber);
                let known = |gid: Gid| db.endport_of_guid(gid.interface_id()).is_some();
                self.subscriptions.set(&query, from, subscriber_gid, known)
            }
            SaAttributeId::InformInfo => Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED),
            SaAttributeId::InformInfoRecord if matches!(method, Method::Get | Method::GetTable) => {
                Ok(self.subscriptions.records(&query))
            }
            SaAttributeId::InformInfoRecord => Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED),
            SaAttributeId::McMemberRecord => self.groups.answer(db, &self.config, &query),
            _ => {
                let policy = self.policy.as_ref();
                records::answer(db, &self.config, policy, act_count, attribute, &query)?
            }
        };
        debug!(
            slid = from.lid,
            requester = ?query.requester,
            %attribute,
            %method,
            mask = format_args!("{:#x}", query.component_mask),
            records = found.as_ref().map_or(0, Records::count),
            "SA query"
        );
        let mut answer = match found {
            Ok(records) if records.bytes.len() > self.config.max_answer_bytes => {
                warn!(
                    slid = from.lid,
                    %attribute,
                    limit = self.config.max_answer_bytes,
                    "SA answer over the bound; answering ERR_NO_RESOURCES"
                );
                respond_error(mad, method, Status::SA_NO_RESOURCES)
            }
            Ok(records) => respond(mad, method, records),
            Err(status) => respond_error(mad, method, status),
        };
        if attribute == SaAttributeId::MultiPathRecord {
            // Its answer, records or error, is PathRecords (osm_sa_multipath_record.c:1683).
            let path_record = u16::from(SaAttributeId::PathRecord);
            SaMad::new_unchecked(&mut answer[..])
                .header_mut()
                .set_attribute_id(path_record.into());
        }
        Some(answer)
    }
}

/// A successful answer (OpenSM `osm_sa_respond`, osm_sa.c:422-531): the request's header with
/// the response method, SM_Key 0, AttributeOffset the record size in 8-byte words and the
/// records after it; a Get of no record or of several is an error instead.
fn respond(request: &[u8], method: Method, records: Records) -> Vec<u8> {
    let count = records.count();
    if method == Method::Get && count != 1 {
        let status = if count == 0 {
            Status::SA_NO_RECORDS
        } else {
            Status::SA_TOO_MANY_RECORDS
        };
        return respond_error(request, method, status);
    }
    // Exactly the records: a client counts them by the length (OpenSM sends 56 + n * size).
    let mut answer = vec![0u8; SA_HEADER_LEN + records.bytes.len()];
    answer[..SA_HEADER_LEN].copy_from_slice(&request[..SA_HEADER_LEN]);
    answer[SA_HEADER_LEN..SA_HEADER_LEN + records.bytes.len()].copy_from_slice(&records.bytes);
    let mut view = SaMad::new_unchecked(&mut answer[..]);
    view.header_mut().set_method(method.response());
    view.header_mut().set_status(Status::OK);
    view.set_sm_key(0);
    let offset = if count == 0 { 0 } else { records.size / 8 };
    view.set_attribute_offset(offset as u16);
    if method == Method::GetTable {
        // The kernel writes the rest of the RMPP header; Active tells it to segment.
        view.set_rmpp_flags(RmppFlags::ACTIVE);
    }
    answer
}

/// An error answer (OpenSM `osm_sa_send_error`, osm_sa.c:361-420): the whole request with the
/// status, the response method, SM_Key 0 and, for a GetTable, AttributeOffset 0.
fn respond_error(request: &[u8], method: Method, status: Status) -> Vec<u8> {
    let mut answer = request[..256].to_vec();
    let mut view = SaMad::new_unchecked(&mut answer[..]);
    view.header_mut().set_method(method.response());
    view.header_mut().set_status(status);
    view.set_sm_key(0);
    if method == Method::GetTable {
        view.set_attribute_offset(0);
    }
    answer
}

/// The attributes OpenSM 3.3.23 takes a Set or Delete of: the records clients change.
fn takes_set(attribute: SaAttributeId) -> bool {
    matches!(
        attribute,
        SaAttributeId::McMemberRecord
            | SaAttributeId::ServiceRecord
            | SaAttributeId::InformInfo
            | SaAttributeId::GuidInfoRecord
    )
}

/// A MAD of `method` and `attribute` with TransactionID `tid`, its data zeroed: the header of
/// an SA MAD that starts an exchange.
pub(crate) fn new_sa_mad(method: Method, attribute: SaAttributeId, tid: u64) -> Vec<u8> {
    let mut mad = vec![0u8; 256];
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    let mut header = view.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::SubnAdm);
    header.set_class_version(SA_CLASS_VERSION);
    header.set_method(method);
    header.set_transaction_id(tid);
    header.set_attribute_id(AttributeId::from(u16::from(attribute)));
    mad
}

#[cfg(test)]
mod tests;
