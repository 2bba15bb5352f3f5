//! Multicast on ibsim, as a host sees it: joins and leaves (MCMemberRecord SubnAdmSet and
//! SubnAdmDelete, IBA 15.2.5.17) sent from a host's port to the SM's SA through ibqos's own
//! ibsim client, whichever SM runs; and every switch's multicast forwarding table read back
//! with `ibroute -M`, a reader nobody here wrote.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_mad::sa::{
    JoinState, McMemberRecordRepr, Record, RmppFlags, RmppType, SaAttributeId, SaHeaderRepr,
    SaRecord, emit_sa, parse_sa,
};
use ibqos_mad::{Gid, Method, MgmtClass, Status};
use ibqos_transport::{FabricSpec, Incoming, OpenOptions, Role, Transport, open};

use crate::netfile::NodeKind;
use crate::process::{command_line, run_bounded};
use crate::readback::route_to;
use crate::sa::{SaTools, Session};
use crate::scenario::Fabric;
use crate::{Error, Ibsim, Result, SimTools, Topology};

/// How long a join waits for its answer before it is sent again; ibsim answers in
/// milliseconds.
const ANSWER_WAIT: Duration = Duration::from_secs(1);
/// Sends of one request before it is given up (libibumad's default is 3 too).
const SENDS: u32 = 3;
/// `ibroute -M` against ibsim takes about 20 ms.
const IBROUTE_TIMEOUT: Duration = Duration::from_secs(20);

/// A host port talking to the SA, as IPoIB and rdma_cm do.
pub struct McClient {
    transport: Box<dyn Transport>,
    sa: Peer,
    next_tid: u64,
}

impl std::fmt::Debug for McClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McClient")
            .field("port", &self.transport.local_port())
            .field("sa", &self.sa)
            .finish()
    }
}

/// The SA's answer to a join or leave: its status, and the record when it is a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McAnswer {
    pub status: Status,
    pub record: Option<McMemberRecordRepr>,
}

impl McClient {
    /// A client at `node` of `sim`, asking the SA at `sm_lid` (on QP1, P_Key index 0).
    pub fn connect(sim: &Ibsim, node: &str, sm_lid: u16) -> Result<McClient> {
        let spec = FabricSpec::Ibsim {
            sockname: sim.sockname().to_string(),
            node: node.to_string(),
        };
        let options = OpenOptions {
            role: Role::Client,
            response_timeout: ANSWER_WAIT,
        };
        let transport = open(&spec, &options)
            .map_err(|e| Error::new(format!("connecting to ibsim at {node}: {e}")))?;
        Ok(McClient {
            transport,
            sa: Peer {
                lid: sm_lid,
                qp: 1,
                pkey_index: 0,
            },
            next_tid: 0x6d63_0001,
        })
    }

    /// The port GID of this client's port on a subnet with `prefix`.
    pub fn port_gid(&self, prefix: u64) -> Gid {
        Gid::new(prefix, self.transport.local_port().port_guid)
    }

    /// SubnAdmSet (join or create) of `record` with `mask`.
    pub fn join(&mut self, mask: u64, record: McMemberRecordRepr) -> Result<McAnswer> {
        self.ask(Method::Set, mask, record)
    }

    /// SubnAdmDelete (leave) of `record` with `mask`.
    pub fn leave(&mut self, mask: u64, record: McMemberRecordRepr) -> Result<McAnswer> {
        self.ask(Method::Delete, mask, record)
    }

    fn ask(&mut self, method: Method, mask: u64, record: McMemberRecordRepr) -> Result<McAnswer> {
        self.next_tid += 1;
        let tid = self.next_tid;
        let header = SaHeaderRepr {
            method,
            status: Status::OK,
            transaction_id: tid,
            attribute_id: SaAttributeId::McMemberRecord,
            attribute_modifier: 0,
            rmpp_version: 0,
            rmpp_type: RmppType::None,
            rmpp_resp_time: 0,
            rmpp_flags: RmppFlags::default(),
            rmpp_status: 0,
            segment_number: 0,
            payload_length: 0,
            sm_key: 0,
            attribute_offset: 0,
            component_mask: mask,
        };
        let mad = emit_sa(&header, &[SaRecord::McMemberRecord(record)]);
        for _ in 0..SENDS {
            let out = OutgoingMad {
                class: MgmtClass::SubnAdm,
                mad: mad.clone(),
                address: Address::Peer(self.sa),
            };
            self.transport
                .send(&out)
                .map_err(|e| Error::new(format!("sending {method}: {e}")))?;
            let deadline = Instant::now() + ANSWER_WAIT;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                let Some(Incoming::Mad { mad, .. }) = self
                    .transport
                    .recv(left)
                    .map_err(|e| Error::new(format!("waiting for the SA: {e}")))?
                else {
                    continue;
                };
                let Ok((answer, records)) = parse_sa(&mad) else {
                    continue;
                };
                // ibsim writes its client id into the TID's top bits; the low 32 are ours.
                if answer.transaction_id as u32 != tid as u32 || !answer.method.is_response() {
                    continue;
                }
                let record = match records.first() {
                    Some(SaRecord::McMemberRecord(r)) if answer.status == Status::OK => Some(*r),
                    _ => None,
                };
                return Ok(McAnswer {
                    status: answer.status,
                    record,
                });
            }
        }
        Err(Error::new(format!(
            "no answer from the SA at LID {} to {method} after {SENDS} sends",
            self.sa.lid
        )))
    }
}

/// The JoinState of a full member, as IPoIB joins its broadcast group.
pub const FULL: JoinState = JoinState::FULL;

/// The IPv4 broadcast group of the Default partition, which IPoIB joins.
pub const IPOIB_BROADCAST: Gid = Gid(0xff12_401b_ffff_0000_0000_0000_ffff_ffff);

/// What the kernel's IPoIB sends to join its broadcast group (ComponentMask 0x10083): MGID,
/// PortGID, P_Key and JoinState (IBA 15.2.5.17 bits 0, 1, 7 and 16).
pub const IPOIB_JOIN: u64 = 1 | 1 << 1 | 1 << 7 | 1 << 16;

/// A record of zeros, for a join to fill.
pub fn blank_record() -> McMemberRecordRepr {
    McMemberRecordRepr::parse_bytes(&[0u8; 56]).expect("a zero record parses")
}

impl McClient {
    /// A full member's join of [`IPOIB_BROADCAST`] on a subnet of `prefix`, as IPoIB sends it.
    pub fn join_ipoib_broadcast(&mut self, prefix: u64) -> Result<McAnswer> {
        let record = McMemberRecordRepr {
            mgid: IPOIB_BROADCAST,
            port_gid: self.port_gid(prefix),
            p_key: 0xffff,
            join_state: FULL,
            ..blank_record()
        };
        self.join(IPOIB_JOIN, record)
    }
}

/// The multicast forwarding tables once the SM of `session` has caught up with a join or
/// leave, as [`read_mfts`] reads them: read until two reads a quarter of a second apart agree
/// (an SM reprograms them after it answered), or for 10 seconds at most.
pub fn settled_mfts(
    session: &Session,
    fabric: &Fabric,
    tools: &SaTools,
) -> Result<BTreeMap<(String, u16), Vec<u8>>> {
    let read = || {
        read_mfts(
            &tools.sim,
            session.sim(),
            &fabric.topology,
            &fabric.query_node,
        )
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = read()?;
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = read()?;
        if now == last || Instant::now() > deadline {
            return Ok(now);
        }
        last = now;
    }
}

/// Every switch's multicast forwarding table as `ibroute -M` reads it from `query_node`: for
/// each (switch, MLID) with an entry, its ports in order.
pub fn read_mfts(
    tools: &SimTools,
    sim: &Ibsim,
    topology: &Topology,
    query_node: &str,
) -> Result<BTreeMap<(String, u16), Vec<u8>>> {
    let mut tables = BTreeMap::new();
    for node in topology.nodes().filter(|n| n.kind == NodeKind::Switch) {
        let path = route_to(topology, query_node, &node.id)?;
        let mut cmd = sim.client(&tools.ibroute.path, query_node);
        cmd.args(["-M", "-D", &path.to_string()]);
        let line = command_line(&cmd);
        let out = run_bounded(&mut cmd, IBROUTE_TIMEOUT)?
            .success(&line)?
            .stdout;
        for (mlid, ports) in parse_ibroute_mft(&out)? {
            tables.insert((node.id.clone(), mlid), ports);
        }
    }
    Ok(tables)
}

/// Parses `ibroute -M` output: a `Ports:` header naming the columns, then one row per MLID
/// with an `x` under each port in its entry.
///
/// ```text
/// Multicast mlids [0xc000-0xc3ff] of switch DR path ... guid 0x0002c90000001000 (sw-one):
///      Ports: 0 1 2 3 4 5 6 7 8
///  MLid
/// 0xc000        x   x
/// 1 valid mlids dumped
/// ```
pub fn parse_ibroute_mft(text: &str) -> Result<Vec<(u16, Vec<u8>)>> {
    let mut columns: Vec<(usize, u8)> = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(at) = line.find("Ports:") {
            let start = at + "Ports:".len();
            let mut offset = start;
            for word in line[start..].split(' ') {
                if let Ok(port) = word.parse::<u8>() {
                    columns.push((offset + word.len() - 1, port));
                }
                offset += word.len() + 1;
            }
            continue;
        }
        let Some(hex) = line
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_prefix("0x"))
        else {
            continue;
        };
        let mlid = u16::from_str_radix(hex, 16)
            .map_err(|e| Error::new(format!("ibroute row {line:?}: {e}")))?;
        if columns.is_empty() {
            return Err(Error::new(
                "ibroute -M printed rows before its Ports: header",
            ));
        }
        let bytes = line.as_bytes();
        let ports = columns
            .iter()
            .filter(|(col, _)| bytes.get(*col) == Some(&b'x'))
            .map(|(_, port)| *port)
            .collect();
        rows.push((mlid, ports));
    }
    Ok(rows)
}
