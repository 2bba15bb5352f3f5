//! The sweep configuration from the settings read from opensm.conf or ibqos.toml.

use std::collections::BTreeMap;
use std::time::Duration;

use ibqos_opensm::Settings;
use ibqos_qos::VlCount;
use ibqos_qos::partitions::PartitionOptions;
use tracing::{error, warn};

use crate::election::ElectionConfig;
use crate::engine::pkeys::PartEnforce;
use crate::engine::qos::SetupConfig;
use crate::engine::routing::RoutingEngine;
use crate::engine::scheduler::SchedulerConfig;
use crate::engine::sweep::{PartitionConfig, SweepConfig, SweepMode};
use crate::mkey::{MKeyConfig, PerPortKeys};
use crate::sa::{DEFAULT_SA_KEY, SaConfig};

/// OpenSM's `subnet_timeout` default: 4.096 us x 2^18, about one second.
const SUBNET_TIMEOUT: u8 = 18;

/// How many SMPs the SM keeps on the wire, and how long and how often it waits for each.
pub fn scheduler_config(settings: &Settings) -> SchedulerConfig {
    let sm = &settings.sm;
    SchedulerConfig {
        max_outstanding: usize::try_from(sm.max_wire_smps).unwrap_or(usize::MAX),
        timeout: Duration::from_millis(u64::from(sm.transaction_timeout.max(1))),
        retries: sm.transaction_retries,
    }
}

/// How long the SM waits for an answer to a request, its retries included: how long a kernel
/// transport must keep waiting for a response before it hands the request back.
pub fn response_timeout(settings: &Settings) -> Duration {
    scheduler_config(settings).response_timeout()
}

/// The SA's configuration: `sa_key` (OpenSM reads it with strtoull, base 0: hex with 0x),
/// the subnet prefix and timeout, the SM priority and whether QoS is on.
pub fn sa_config(settings: &Settings) -> SaConfig {
    let sa_key = opensm_number(settings, "sa_key").unwrap_or(DEFAULT_SA_KEY);
    SaConfig {
        sa_key,
        subnet_prefix: settings.sm.subnet_prefix,
        subnet_timeout: SUBNET_TIMEOUT,
        sm_priority: settings.sm.priority & 0xf,
        qos: settings.qos.enabled,
        policy: settings.qos_policy.clone(),
        ..SaConfig::default()
    }
}

/// An option ibqos keeps verbatim under `[opensm]`, read as OpenSM reads its numbers (strtoull
/// with base 0: hex with 0x); `None` when absent or not a number.
fn opensm_number(settings: &Settings, key: &str) -> Option<u64> {
    let text = settings.opensm.get(key)?.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The election's configuration for the SM on port `port_guid`: `sm_priority`, `sm_key`
/// (default 1), `sminfo_polling_timeout` (ms, default 10000) and `polling_retry_number`
/// (default 4), OpenSM's defaults.
pub fn election_config(settings: &Settings, port_guid: u64) -> ElectionConfig {
    let polling_ms = opensm_number(settings, "sminfo_polling_timeout").unwrap_or(10_000);
    ElectionConfig {
        guid: port_guid,
        priority: settings.sm.priority & 0xf,
        sm_key: opensm_number(settings, "sm_key").unwrap_or(1),
        polling_timeout: Duration::from_millis(polling_ms.max(1)),
        polling_retries: opensm_number(settings, "polling_retry_number")
            .map_or(4, |n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
}

/// The M_Key options: `m_key` (0), `m_key_protection_level` (0; the loaders refuse or replace
/// more than 3, as OpenSM's verify step does), `m_key_lease_period` (0) and `m_key_lookup`
/// (TRUE), OpenSM's defaults; and ibqos.toml's per-port secret.
pub fn mkey_config(settings: &Settings) -> MKeyConfig {
    let protect = opensm_number(settings, "m_key_protection_level").unwrap_or(0);
    MKeyConfig {
        key: opensm_number(settings, "m_key").unwrap_or(0),
        // `osm_subn_verify_config`: above 3 is 2.
        protect_bits: if protect > 3 { 2 } else { protect as u8 },
        lease_period: opensm_number(settings, "m_key_lease_period")
            .map_or(0, |n| u16::try_from(n).unwrap_or(u16::MAX)),
        lookup: flag(settings, "m_key_lookup", true),
        per_port: settings
            .m_key_per_port_secret
            .as_ref()
            .map(|secret| PerPortKeys::new(secret.expose())),
    }
}

/// The qos-setup section to program, when ibqos.toml asks for it and the policy has one. The
/// loader refuses a setup that fails its checks; one that fails here anyway is logged and left
/// out.
fn setup_config(settings: &Settings) -> Option<SetupConfig> {
    let policy = settings.qos_policy.as_ref()?;
    if !settings.program_policy_setup || policy.setup.is_empty() {
        return None;
    }
    match policy.check_setup() {
        Ok(scopes) => Some(SetupConfig {
            policy: policy.clone(),
            scopes,
            places: settings
                .qos_setup_places
                .iter()
                .map(|(id, at)| (*id, format!("{}:{}:{}", at.file, at.line, at.col)))
                .collect(),
        }),
        Err(problems) => {
            for problem in problems {
                error!(%problem, "qos-setup not programmed");
            }
            None
        }
    }
}

/// A boolean option of opensm.conf, `default` when the file does not set it.
fn flag(settings: &Settings, name: &str, default: bool) -> bool {
    settings
        .opensm
        .get(name)
        .map_or(default, |value| value == "TRUE")
}

/// The partitions and the partition manager's options: `allow_both_pkeys` (FALSE),
/// `keep_pkey_indexes` (TRUE), `part_enforce` (both; `no_partition_enforcement` TRUE turns it
/// off, `osm_subnet.c:2128-2146`).
pub fn partition_config(settings: &Settings) -> PartitionConfig {
    let enforce = if flag(settings, "no_partition_enforcement", false) {
        PartEnforce::Off
    } else {
        settings
            .opensm
            .get("part_enforce")
            .map_or(PartEnforce::Both, |text| PartEnforce::parse(text))
    };
    PartitionConfig {
        definitions: settings.partitions.clone(),
        options: PartitionOptions {
            allow_both_pkeys: flag(settings, "allow_both_pkeys", false),
            qos: settings.qos.enabled,
        },
        keep_pkey_indexes: flag(settings, "keep_pkey_indexes", true),
        enforce,
    }
}

/// The sweep configuration `ibqos sm` runs with, from the settings read and a LID cache.
pub fn sweep_config(settings: &Settings, guid2lid: BTreeMap<u64, u16>) -> SweepConfig {
    let sm = &settings.sm;
    let links = &settings.links;
    let routing = match sm.routing_engine.as_deref().map(str::trim) {
        None | Some("minhop") | Some("") => RoutingEngine::MinHop,
        Some("updn") => RoutingEngine::UpDown,
        Some(other) => {
            warn!(
                engine = other,
                "routing engine not implemented; using minhop"
            );
            RoutingEngine::MinHop
        }
    };
    SweepConfig {
        scheduler: scheduler_config(settings),
        lmc: sm.lmc,
        subnet_prefix: sm.subnet_prefix,
        sm_sl: sm.sm_sl & 0xf,
        // OpenSM's max_op_vls 0 programs OperVLs 0, which no port can run; one VL is the
        // nearest thing that works.
        max_op_vls: links.oper_vls_cap().unwrap_or(VlCount::One),
        head_of_queue_lifetime: links.head_of_queue_lifetime,
        leaf_head_of_queue_lifetime: links.leaf_head_of_queue_lifetime,
        vl_stall_count: links.vl_stall_count,
        leaf_vl_stall_count: links.leaf_vl_stall_count,
        subnet_timeout: SUBNET_TIMEOUT,
        routing,
        guid2lid,
        qos: settings.qos.clone(),
        qos_setup: setup_config(settings),
        partitions: partition_config(settings),
        multicast: Default::default(),
        use_mfttop: flag(settings, "use_mfttop", true),
        use_optimized_slvl: links.use_optimized_slvl,
        long_timeout: Duration::from_millis(u64::from(sm.long_transaction_timeout.max(1))),
        mode: SweepMode::Forced,
        m_key: mkey_config(settings),
    }
}
