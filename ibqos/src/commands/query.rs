//! `ibqos query`: read one attribute of one node, like smpquery.

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ibqos_mad::{
    Attribute, AttributeId, DrPath, Method, PortInfoRepr, Routing, Smp, SmpRepr, Status, VlArbEntry,
};
use serde_json::{Map, Value, json};

use crate::cli::{QueryArgs, QueryAttribute};
use crate::commands::Outcome;
use ibqos_transport::{
    self as transport, Address, Incoming, OpenOptions, Outgoing, Role, Transport,
};

/// Why a query got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(
        "{attribute:?} request dropped by the fabric on all {tries} tries (umad status 110: no \
         route, a path into a port that is not LinkUp, or no agent at the destination)"
    )]
    Dropped { attribute: AttributeId, tries: u32 },
    #[error("no answer to {attribute:?} after {tries} tries of {timeout:?}")]
    NoAnswer {
        attribute: AttributeId,
        tries: u32,
        timeout: Duration,
    },
    #[error("{attribute:?} answered with MAD status {:#06x} ({})", status.0, describe(*status))]
    Status {
        attribute: AttributeId,
        status: Status,
    },
    #[error("malformed {attribute:?} response: {source}")]
    Malformed {
        attribute: AttributeId,
        source: ibqos_mad::Error,
    },
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
}

fn describe(status: Status) -> &'static str {
    match u8::from(status.invalid_field()) {
        0 if status.is_busy() => "busy",
        0 => "class-specific error",
        1 => "bad base or class version",
        2 => "method not supported",
        3 => "method/attribute combination not supported",
        7 => "invalid attribute or modifier value",
        _ => "reserved invalid-field code",
    }
}

pub fn run(args: &QueryArgs) -> Result<Outcome> {
    let spec = args.fabric.clone().unwrap_or_default();
    let timeout = Duration::from_millis(args.timeout_ms);
    let transport = transport::open(
        &spec,
        &OpenOptions {
            role: Role::Client,
            response_timeout: timeout,
        },
    )
    .with_context(|| format!("cannot open fabric {spec}"))?;
    let (routing, address) = match (&args.dr, args.lid) {
        (_, Some(lid)) => (Routing::Lid, Address::Lid(lid)),
        (Some(route), None) => (
            Routing::Directed(DrPath::request(&route.0)?),
            Address::Directed,
        ),
        (None, None) => (Routing::Directed(DrPath::request(&[])?), Address::Directed),
    };
    let mut querier = Querier {
        transport,
        routing,
        address,
        timeout,
        tries: args.retries.saturating_add(1),
        next_tid: initial_tid(),
    };
    let port = args.port.unwrap_or(0);
    let fields = match args.attribute {
        QueryAttribute::Nodeinfo => match querier.get(AttributeId::NodeInfo, 0)? {
            Attribute::NodeInfo(n) => vec![
                ("BaseVersion", num(n.base_version)),
                ("ClassVersion", num(n.class_version)),
                ("NodeType", text(format!("{:?}", n.node_type))),
                ("NumPorts", num(n.num_ports)),
                ("SystemImageGUID", hex(n.system_image_guid, 16)),
                ("NodeGUID", hex(n.node_guid, 16)),
                ("PortGUID", hex(n.port_guid, 16)),
                ("PartitionCap", num(n.partition_cap)),
                ("DeviceID", hex(n.device_id, 4)),
                ("Revision", hex(n.revision, 8)),
                ("LocalPortNum", num(n.local_port_num)),
                ("VendorID", hex(n.vendor_id, 6)),
            ],
            other => unreachable_attribute(other),
        },
        QueryAttribute::Nodedesc => match querier.get(AttributeId::NodeDescription, 0)? {
            Attribute::NodeDescription(d) => {
                vec![("NodeDescription", text(d.to_string_lossy().into_owned()))]
            }
            other => unreachable_attribute(other),
        },
        QueryAttribute::Portinfo => port_info_fields(&querier.port_info(port)?),
        QueryAttribute::Switchinfo => match querier.get(AttributeId::SwitchInfo, 0)? {
            Attribute::SwitchInfo(s) => vec![
                ("LinearFDBCap", num(s.linear_fdb_cap)),
                ("RandomFDBCap", num(s.random_fdb_cap)),
                ("MulticastFDBCap", num(s.multicast_fdb_cap)),
                ("LinearFDBTop", num(s.linear_fdb_top)),
                ("DefaultPort", num(s.default_port)),
                (
                    "DefaultMulticastPrimaryPort",
                    num(s.default_multicast_primary_port),
                ),
                (
                    "DefaultMulticastNotPrimaryPort",
                    num(s.default_multicast_not_primary_port),
                ),
                ("LifeTimeValue", num(s.life_time_value)),
                ("PortStateChange", flag(s.port_state_change)),
                (
                    "OptimizedSLtoVLMappingProgramming",
                    num(s.optimized_sl_to_vl_mapping_programming),
                ),
                ("LIDsPerPort", num(s.lids_per_port)),
                ("PartitionEnforcementCap", num(s.partition_enforcement_cap)),
                ("InboundEnforcementCap", flag(s.inbound_enforcement_cap)),
                ("OutboundEnforcementCap", flag(s.outbound_enforcement_cap)),
                ("FilterRawInboundCap", flag(s.filter_raw_inbound_cap)),
                ("FilterRawOutboundCap", flag(s.filter_raw_outbound_cap)),
                ("EnhancedPort0", flag(s.enhanced_port0)),
                ("MulticastFDBTop", hex(s.multicast_fdb_top, 4)),
            ],
            other => unreachable_attribute(other),
        },
        QueryAttribute::Sl2vl => {
            // On a switch: input port << 8 | output port; a CA ignores the modifier.
            let modifier = u32::from(args.in_port.unwrap_or(0)) << 8 | u32::from(port);
            match querier.get(AttributeId::SlToVlMappingTable, modifier)? {
                Attribute::SlToVlMappingTable(t) => vec![(
                    "SLtoVL",
                    Field::List(t.vls.iter().map(|&v| v.into()).collect()),
                )],
                other => unreachable_attribute(other),
            }
        }
        QueryAttribute::Vlarb => {
            // The table sizes come from the same port's PortInfo; blocks 2 and 4 (entries 32-63)
            // exist only when a cap is above 32.
            let caps = querier.port_info(port)?;
            let mut low = querier.vlarb_entries(1, port, caps.vl_arbitration_low_cap)?;
            low.extend(querier.vlarb_entries(2, port, caps.vl_arbitration_low_cap)?);
            let mut high = querier.vlarb_entries(3, port, caps.vl_arbitration_high_cap)?;
            high.extend(querier.vlarb_entries(4, port, caps.vl_arbitration_high_cap)?);
            vec![
                ("VLArbitrationLowCap", num(caps.vl_arbitration_low_cap)),
                ("VLArbitrationHighCap", num(caps.vl_arbitration_high_cap)),
                ("VLArbLow", Field::Arb(low)),
                ("VLArbHigh", Field::Arb(high)),
            ]
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let object: Map<String, Value> = fields
            .iter()
            .map(|(name, field)| ((*name).to_owned(), field.to_json()))
            .collect();
        writeln!(out, "{}", Value::Object(object))?;
    } else {
        for (name, field) in &fields {
            writeln!(out, "{name}: {field}")?;
        }
    }
    Ok(Outcome::Success)
}

/// Attribute::parse decodes by the response's AttributeID, which `get` checked equals the
/// request's, so another variant cannot come back.
fn unreachable_attribute(attribute: Attribute) -> ! {
    unreachable!("get returned {attribute:?} for another attribute")
}

struct Querier {
    transport: Box<dyn Transport>,
    routing: Routing,
    address: Address,
    timeout: Duration,
    tries: u32,
    next_tid: u64,
}

impl Querier {
    /// One SubnGet, resent until answered or `tries` attempts went unanswered or dropped.
    fn get(&mut self, attribute: AttributeId, modifier: u32) -> Result<Attribute, QueryError> {
        let mut dropped = 0;
        for _ in 0..self.tries {
            // A new TID per attempt: the kernel refuses a second outstanding request with the
            // same one, and a late answer to an earlier attempt is still welcome.
            let tid = self.take_tid();
            let request = SmpRepr::get(attribute, modifier, tid, self.routing);
            let mut mad = [0u8; 256];
            request.emit(&mut Smp::new_unchecked(&mut mad[..]));
            self.transport.send(&Outgoing {
                mad,
                address: self.address,
            })?;
            let deadline = Instant::now() + self.timeout;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.transport.recv(left)? {
                    None => break,
                    Some(Incoming::Dropped { mad }) if answers(&mad, &request) => {
                        dropped += 1;
                        break;
                    }
                    Some(Incoming::Mad { mad, .. })
                        if answers(&mad, &request) && mad[3] == u8::from(Method::GetResp) =>
                    {
                        return decode(&mad, attribute);
                    }
                    // Someone else's answer, a late one, or a trap: not ours.
                    Some(_) => {}
                }
            }
        }
        Err(if dropped == self.tries {
            QueryError::Dropped {
                attribute,
                tries: self.tries,
            }
        } else {
            QueryError::NoAnswer {
                attribute,
                tries: self.tries,
                timeout: self.timeout,
            }
        })
    }

    fn port_info(&mut self, port: u8) -> Result<PortInfoRepr, QueryError> {
        match self.get(AttributeId::PortInfo, port.into())? {
            Attribute::PortInfo(p) => Ok(p),
            other => unreachable_attribute(other),
        }
    }

    /// The entries of VLArb block `block` (1-4) that a table of `cap` entries has.
    fn vlarb_entries(
        &mut self,
        block: u8,
        port: u8,
        cap: u8,
    ) -> Result<Vec<VlArbEntry>, QueryError> {
        let first = if block % 2 == 1 { 0 } else { 32 };
        let count = usize::from(cap).saturating_sub(first).min(32);
        if count == 0 {
            return Ok(Vec::new());
        }
        let modifier = u32::from(block) << 16 | u32::from(port);
        match self.get(AttributeId::VlArbitrationTable, modifier)? {
            Attribute::VlArbitrationTable(t) => Ok(t.entries[..count].to_vec()),
            other => unreachable_attribute(other),
        }
    }

    fn take_tid(&mut self) -> u64 {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        // TID bits 31..0 are what comes back unchanged; 0 there means "none" to OpenSM.
        if self.next_tid as u32 == 0 {
            self.next_tid += 1;
        }
        tid
    }
}

/// A start for this process's TIDs (only bits 31..0 survive the trip), unlikely to equal
/// another client's on the same port, never 0.
fn initial_tid() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    u64::from((std::process::id() << 16 ^ nanos) | 1)
}

/// Whether `mad` (a response, or our request handed back) belongs to `request`: same class and
/// TID bits 31..0.
fn answers(mad: &[u8], request: &SmpRepr) -> bool {
    let class = match request.routing {
        Routing::Lid => 0x01,
        Routing::Directed(_) => 0x81,
    };
    mad.len() >= 24
        && mad[1] == class
        && mad[12..16] == (request.transaction_id as u32).to_be_bytes()
}

fn decode(mad: &[u8], attribute: AttributeId) -> Result<Attribute, QueryError> {
    let malformed = |source| QueryError::Malformed { attribute, source };
    let smp = SmpRepr::parse(&Smp::new_checked(mad).map_err(malformed)?).map_err(malformed)?;
    if smp.attribute_id != attribute {
        return Err(malformed(ibqos_mad::Error::BadValue {
            field: "attribute_id",
            value: u16::from(smp.attribute_id).into(),
        }));
    }
    if smp.status != Status::OK {
        return Err(QueryError::Status {
            attribute,
            status: smp.status,
        });
    }
    Attribute::parse(attribute, &smp.data).map_err(malformed)
}

fn port_info_fields(p: &PortInfoRepr) -> Vec<(&'static str, Field)> {
    vec![
        ("M_Key", hex(p.m_key, 16)),
        ("GidPrefix", hex(p.gid_prefix, 16)),
        ("LID", num(p.lid)),
        ("MasterSMLID", num(p.master_sm_lid)),
        ("CapabilityMask", hex(p.capability_mask.0, 8)),
        ("DiagCode", hex(p.diag_code, 4)),
        ("M_KeyLeasePeriod", num(p.m_key_lease_period)),
        ("LocalPortNum", num(p.local_port_num)),
        ("LinkWidthEnabled", num(p.link_width_enabled)),
        ("LinkWidthSupported", num(p.link_width_supported)),
        ("LinkWidthActive", num(p.link_width_active)),
        ("LinkSpeedSupported", num(p.link_speed_supported)),
        ("PortState", text(format!("{:?}", p.port_state))),
        (
            "PortPhysicalState",
            text(format!("{:?}", p.port_phys_state)),
        ),
        ("LinkDownDefaultState", num(p.link_down_default_state)),
        ("M_KeyProtectBits", num(p.m_key_protect_bits)),
        ("LMC", num(p.lmc)),
        ("LinkSpeedActive", num(p.link_speed_active)),
        ("LinkSpeedEnabled", num(p.link_speed_enabled)),
        ("NeighborMTU", num(p.neighbor_mtu)),
        ("MasterSMSL", num(p.master_sm_sl)),
        ("VLCap", num(p.vl_cap)),
        ("InitType", num(p.init_type)),
        ("VLHighLimit", num(p.vl_high_limit)),
        ("VLArbitrationHighCap", num(p.vl_arbitration_high_cap)),
        ("VLArbitrationLowCap", num(p.vl_arbitration_low_cap)),
        ("InitTypeReply", num(p.init_type_reply)),
        ("MTUCap", num(p.mtu_cap)),
        ("VLStallCount", num(p.vl_stall_count)),
        ("HOQLife", num(p.hoq_life)),
        ("OperationalVLs", num(p.operational_vls)),
        (
            "PartitionEnforcementInbound",
            flag(p.partition_enforcement_inbound),
        ),
        (
            "PartitionEnforcementOutbound",
            flag(p.partition_enforcement_outbound),
        ),
        ("FilterRawInbound", flag(p.filter_raw_inbound)),
        ("FilterRawOutbound", flag(p.filter_raw_outbound)),
        ("M_KeyViolations", num(p.m_key_violations)),
        ("P_KeyViolations", num(p.p_key_violations)),
        ("Q_KeyViolations", num(p.q_key_violations)),
        ("GUIDCap", num(p.guid_cap)),
        ("ClientReregister", flag(p.client_reregister)),
        (
            "MulticastPKeyTrapSuppressionEnabled",
            num(p.multicast_pkey_trap_suppression_enabled),
        ),
        ("SubnetTimeOut", num(p.subnet_timeout)),
        ("RespTimeValue", num(p.resp_time_value)),
        ("LocalPhyErrors", num(p.local_phy_errors)),
        ("OverrunErrors", num(p.overrun_errors)),
        ("MaxCreditHint", num(p.max_credit_hint)),
        ("LinkRoundTripLatency", num(p.link_round_trip_latency)),
        ("CapabilityMask2", hex(p.capability_mask2.0, 4)),
        ("LinkSpeedExtActive", num(p.link_speed_ext_active)),
        ("LinkSpeedExtSupported", num(p.link_speed_ext_supported)),
        ("LinkSpeedExtEnabled", num(p.link_speed_ext_enabled)),
    ]
}

/// One printed value.
enum Field {
    Num(u64),
    /// A number shown in hexadecimal with this many digits (GUIDs, masks, IDs).
    Hex(u64, usize),
    Text(String),
    Bool(bool),
    List(Vec<u64>),
    Arb(Vec<VlArbEntry>),
}

fn num(v: impl Into<u64>) -> Field {
    Field::Num(v.into())
}

fn hex(v: impl Into<u64>, digits: usize) -> Field {
    Field::Hex(v.into(), digits)
}

fn text(s: String) -> Field {
    Field::Text(s)
}

fn flag(b: bool) -> Field {
    Field::Bool(b)
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Num(n) => write!(f, "{n}"),
            Field::Hex(n, digits) => write!(f, "{n:#0width$x}", width = digits + 2),
            Field::Text(s) => f.write_str(s),
            Field::Bool(b) => write!(f, "{}", u8::from(*b)),
            Field::List(values) => {
                let parts: Vec<String> = values.iter().map(u64::to_string).collect();
                f.write_str(&parts.join(" "))
            }
            Field::Arb(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|e| format!("{}:{}", e.vl, e.weight))
                    .collect();
                f.write_str(&parts.join(" "))
            }
        }
    }
}

impl Field {
    fn to_json(&self) -> Value {
        match self {
            Field::Num(n) => json!(n),
            // As strings: a 64-bit GUID does not survive a JSON reader's doubles.
            Field::Hex(..) | Field::Text(_) => Value::String(self.to_string()),
            Field::Bool(b) => json!(b),
            Field::List(values) => json!(values),
            Field::Arb(entries) => entries
                .iter()
                .map(|e| json!({"vl": e.vl, "weight": e.weight}))
                .collect(),
        }
    }
}
