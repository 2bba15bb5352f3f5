//! `ibqos query`: read one attribute of one node, like smpquery, through the SM's own
//! scheduler (one request at a time, with its TIDs, retries and response matching).

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use ibqos_exchange::scheduler::{Completion, Failure, Request, Scheduler, SchedulerConfig};
use ibqos_mad::{
    Attribute, AttributeId, DrPath, Guid, PortInfoModifier, PortInfoRepr, Priority, Routing,
    SlToVlModifier, SmpRepr, Status, VlArbBlock, VlArbEntry, VlArbModifier,
};
use serde_json::{Map, Value, json};

use crate::cli::{QueryArgs, QueryAttribute};
use crate::commands::Outcome;
use ibqos_transport::{self as transport, OpenOptions, Role, Transport, exchange::exchange};

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
    #[error("{attribute:?} answered with MAD status {:#06x} ({})", status.0, status.describe())]
    Status {
        attribute: AttributeId,
        status: Status,
    },
    #[error("every answer to {attribute:?} was for another attribute or modifier")]
    Mismatched { attribute: AttributeId },
    #[error("malformed {attribute:?} response: {error}")]
    Malformed {
        attribute: AttributeId,
        error: ibqos_mad::Error,
    },
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
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
    let (routing, dlid) = match (&args.dr, args.lid) {
        (_, Some(lid)) => (Routing::Lid, Some(lid)),
        (Some(route), None) => (Routing::Directed(DrPath::request(&route.0)?), None),
        (None, None) => (Routing::Directed(DrPath::request(&[])?), None),
    };
    let mut querier = Querier {
        transport,
        scheduler: Scheduler::new(SchedulerConfig {
            max_outstanding: 1,
            timeout,
            retries: args.retries,
        }),
        routing,
        dlid,
        timeout,
    };
    let port = args.port.unwrap_or(0);
    let fields = match args.attribute {
        QueryAttribute::Nodeinfo => match querier.get(AttributeId::NodeInfo, 0)? {
            Attribute::NodeInfo(n) => vec![
                ("BaseVersion", num(n.base_version)),
                ("ClassVersion", num(n.class_version)),
                ("NodeType", text(format!("{:?}", n.node_type))),
                ("NumPorts", num(n.num_ports)),
                ("SystemImageGUID", guid(n.system_image_guid)),
                ("NodeGUID", guid(n.node_guid)),
                ("PortGUID", guid(n.port_guid)),
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
            // A CA ignores the modifier and answers for the port the query arrives on.
            let pair = SlToVlModifier::Pair {
                input: args.in_port.unwrap_or(0),
                output: port,
            };
            match querier.get(AttributeId::SlToVlMappingTable, pair.into())? {
                Attribute::SlToVlMappingTable(t) => vec![(
                    "SLtoVL",
                    Field::List(t.vls.iter().map(|&v| v.into()).collect()),
                )],
                other => unreachable_attribute(other),
            }
        }
        QueryAttribute::Vlarb => {
            // The table sizes come from the same port's PortInfo.
            let caps = querier.port_info(port)?;
            let low = querier.vlarb_table(Priority::Low, port, caps.vl_arbitration_low_cap)?;
            let high = querier.vlarb_table(Priority::High, port, caps.vl_arbitration_high_cap)?;
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

/// Attribute::parse decodes by the response's AttributeID, which the scheduler checked equals
/// the request's, so another variant cannot come back.
fn unreachable_attribute(attribute: Attribute) -> ! {
    unreachable!("get returned {attribute:?} for another attribute")
}

struct Querier {
    transport: Box<dyn Transport>,
    /// Holds one request at a time, as smpquery sends them.
    scheduler: Scheduler<()>,
    routing: Routing,
    /// The destination of a LID-routed query; `None` for a directed route.
    dlid: Option<u16>,
    /// The scheduler's timeout per attempt, for the error that says how long it waited.
    timeout: Duration,
}

impl Querier {
    /// One SubnGet, resent by the scheduler until answered or its retries are spent.
    fn get(&mut self, attribute: AttributeId, modifier: u32) -> Result<Attribute, QueryError> {
        let request = Request {
            mad: SmpRepr::get(attribute, modifier, 0, self.routing),
            dlid: self.dlid,
            node: 0,
            timeout: None,
            context: (),
        };
        let response = match exchange(&mut *self.transport, &mut self.scheduler, request)? {
            Completion::Answered { response, .. } => response,
            Completion::Failed { failure, .. } => {
                return Err(match failure {
                    Failure::Dropped { attempts } => QueryError::Dropped {
                        attribute,
                        tries: attempts,
                    },
                    Failure::TimedOut { attempts } => QueryError::NoAnswer {
                        attribute,
                        tries: attempts,
                        timeout: self.timeout,
                    },
                    Failure::Status(status) => QueryError::Status { attribute, status },
                    Failure::Mismatched => QueryError::Mismatched { attribute },
                });
            }
        };
        Attribute::parse(attribute, &response.data)
            .map_err(|error| QueryError::Malformed { attribute, error })
    }

    fn port_info(&mut self, port: u8) -> Result<PortInfoRepr, QueryError> {
        let modifier = PortInfoModifier {
            port,
            extended_speeds: false,
        };
        match self.get(AttributeId::PortInfo, modifier.into())? {
            Attribute::PortInfo(p) => Ok(p),
            other => unreachable_attribute(other),
        }
    }

    /// The `priority` table of `port`: the entries of its blocks that a table of `cap` entries
    /// has (the second block only when the cap is above 32).
    fn vlarb_table(
        &mut self,
        priority: Priority,
        port: u8,
        cap: u8,
    ) -> Result<Vec<VlArbEntry>, QueryError> {
        let mut entries = Vec::new();
        for block in VlArbBlock::of(priority) {
            let count = block.entries_within(cap);
            if count == 0 {
                continue;
            }
            let modifier = VlArbModifier { block, port };
            match self.get(AttributeId::VlArbitrationTable, modifier.into())? {
                Attribute::VlArbitrationTable(t) => entries.extend(&t.entries[..count]),
                other => unreachable_attribute(other),
            }
        }
        Ok(entries)
    }
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
    /// A number shown in hexadecimal with this many digits (masks, IDs).
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

fn guid(v: u64) -> Field {
    Field::Text(Guid(v).to_string())
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
