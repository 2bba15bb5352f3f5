//! The sweep configuration from the settings read from opensm.conf or ibqos.toml.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ibqos_congestion::{CcOptions, CctOption, KeyProgram};
use ibqos_exchange::scheduler::SchedulerConfig;
use ibqos_fabric::credit_loops::SlSet;
use ibqos_fabric::routing::{EngineList, GuidFile, NueMaxVls, RoutingOptions};
use ibqos_mad::{CaCongestionEntry, Guid};
use ibqos_opensm::{Settings, cc_values};
use ibqos_perfmgr::PerfMgrConfig;
use ibqos_qos::partitions::PartitionOptions;
use ibqos_qos::{Sl, VlCount};
use tracing::error;

use crate::election::ElectionConfig;
use crate::engine::pkeys::PartEnforce;
use crate::engine::qos::SetupConfig;
use crate::engine::sweep::{PartitionConfig, SweepConfig, SweepMode};
use crate::mkey::{MKeyConfig, PerPortKeys};
use crate::sa::{DEFAULT_SA_KEY, SaConfig};

/// When a changed option takes effect in a running `ibqos sm`, which reads its configuration
/// again on SIGHUP. OpenSM re-reads only the options its table marks as updatable and ignores a
/// change to any other without a word; ibqos says for each changed option what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// From the sweep the reload starts, which follows at once.
    NextSweep,
    /// After a restart: the daemon reads it once, when it opens its port.
    Restart,
    /// ibqos does not act on it; it is kept so that `ibqos migrate` carries it through.
    Never,
}

/// The options the sweep, the election, the SA and the M_Key ring read (through
/// [`sweep_config`], [`election_config`], [`sa_config`], [`mkey_config`] and the sweep
/// interval): each reload applies them. A reload reads the routing options' GUID files and
/// torus-2QoS.conf again.
const READ_EACH_SWEEP: [&str; 47] = [
    "sm_priority",
    "sm_key",
    "sa_key",
    "subnet_prefix",
    "lmc",
    "sm_sl",
    "max_op_vls",
    "head_of_queue_lifetime",
    "leaf_head_of_queue_lifetime",
    "vl_stall_count",
    "leaf_vl_stall_count",
    "sweep_interval",
    "max_wire_smps",
    "long_transaction_timeout",
    "sminfo_polling_timeout",
    "polling_retry_number",
    "routing_engine",
    "root_guid_file",
    "cn_guid_file",
    "io_guid_file",
    "max_reverse_hops",
    "guid_routing_order_file",
    "guid_routing_order_no_scatter",
    "port_shifting",
    "scatter_ports",
    "connect_roots",
    "avoid_throttled_links",
    "torus_config",
    "lash_start_vl",
    "do_mesh_analysis",
    "nue_max_num_vls",
    "nue_include_switches",
    "use_mfttop",
    "use_optimized_slvl",
    "qos",
    "partition_config_file",
    "no_partition_enforcement",
    "part_enforce",
    "allow_both_pkeys",
    "keep_pkey_indexes",
    "m_key",
    "m_key_protection_level",
    "m_key_lease_period",
    "m_key_lookup",
    "m_key_per_port_secret",
    "no_clients_rereg",
    "ignore_other_sm",
];

/// Options the daemon applies itself when it reads the configuration again: where its dump
/// files go and which it writes (`log_flags`' ROUTING bit), its log level, its log's size.
const READ_BY_DAEMON_AT_RELOAD: [&str; 3] = ["dump_files_dir", "log_flags", "log_max_size"];

/// Options read once, when the daemon opens its port: the port itself, and the time the
/// transport waits for each response, which the SMP timeout and retries make.
const READ_AT_START: [&str; 3] = ["guid", "transaction_timeout", "transaction_retries"];

/// The performance manager's options, read once when the daemon creates it
/// (`Manager::with_perfmgr`), and where its dump goes.
const READ_BY_PERFMGR_AT_START: [&str; 12] = [
    "event_db_dump_file",
    "perfmgr_lanes",
    "perfmgr_redir",
    "perfmgr",
    "perfmgr_sweep_time_s",
    "perfmgr_max_outstanding_queries",
    "perfmgr_ignore_cas",
    "perfmgr_rm_nodes",
    "perfmgr_log_errors",
    "perfmgr_query_cpi",
    "perfmgr_xmit_wait_log",
    "perfmgr_xmit_wait_threshold",
];

/// When a change of option `key` (OpenSM's name, or one of [`ibqos_opensm::OptionChange`]'s
/// names for the files' contents) takes effect.
pub fn takes_effect(key: &str) -> Takes {
    let is_qos_option = key.starts_with("qos");
    // Read by the congestion control manager at each sweep that brings the subnet up.
    let is_congestion_option = key == "congestion_control" || key.starts_with("cc_");
    let whole_file = matches!(
        key,
        "[qos_policy]" | "[partitions]" | "program_policy_setup"
    );
    if READ_AT_START.contains(&key) || READ_BY_PERFMGR_AT_START.contains(&key) {
        Takes::Restart
    } else if is_qos_option
        || is_congestion_option
        || whole_file
        || READ_EACH_SWEEP.contains(&key)
        || READ_BY_DAEMON_AT_RELOAD.contains(&key)
    {
        Takes::NextSweep
    } else {
        Takes::Never
    }
}

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
    let sa_key = settings.opensm_uint("sa_key").unwrap_or(DEFAULT_SA_KEY);
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

/// The election's configuration for the SM on port `port_guid`: `sm_priority`, `sm_key`
/// (default 1), `sminfo_polling_timeout` (ms, default 10000) and `polling_retry_number`
/// (default 4), OpenSM's defaults.
pub fn election_config(settings: &Settings, port_guid: Guid) -> ElectionConfig {
    let polling_ms = settings
        .opensm_uint("sminfo_polling_timeout")
        .unwrap_or(10_000);
    ElectionConfig {
        guid: port_guid.0,
        priority: settings.sm.priority & 0xf,
        sm_key: settings.opensm_uint("sm_key").unwrap_or(1),
        polling_timeout: Duration::from_millis(polling_ms.max(1)),
        polling_retries: settings
            .opensm_uint("polling_retry_number")
            .map_or(4, |n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
}

/// The M_Key options: `m_key` (0), `m_key_protection_level` (0; the loaders refuse or replace
/// more than 3, as OpenSM's verify step does), `m_key_lease_period` (0) and `m_key_lookup`
/// (TRUE), OpenSM's defaults; and ibqos.toml's per-port secret.
pub fn mkey_config(settings: &Settings) -> MKeyConfig {
    let protect = settings.opensm_uint("m_key_protection_level").unwrap_or(0);
    MKeyConfig {
        key: settings.opensm_uint("m_key").unwrap_or(0),
        // `osm_subn_verify_config`: above 3 is 2.
        protect_bits: if protect > 3 { 2 } else { protect as u8 },
        lease_period: settings
            .opensm_uint("m_key_lease_period")
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

/// A number of opensm.conf as `strtoull` reads it, `default` when the file does not set it,
/// `max` when it does not fit.
fn number<T: TryFrom<u64>>(settings: &Settings, name: &str, default: T, max: T) -> T {
    settings
        .opensm_uint(name)
        .map_or(default, |n| T::try_from(n).unwrap_or(max))
}

/// The congestion control manager's options: `congestion_control` and the `cc_*` family, read
/// as OpenSM stores them, with the SM's transaction timeout and retries (OpenSM binds its CC
/// agent with them), and ibqos.toml's read back and key programming.
pub fn congestion_options(settings: &Settings) -> CcOptions {
    let defaults = CcOptions::default();
    let scheduler = scheduler_config(settings);
    let text = |name: &str| settings.opensm.get(name).map(String::as_str);
    let mask = |name: &str| text(name).map_or([0; 32], cc_values::mask_256);
    let per_sl = |name: &str, sl: usize| settings.opensm_uint(&format!("{name} {sl}")).unwrap_or(0);
    let ca_entries = std::array::from_fn(|sl| CaCongestionEntry {
        ccti_timer: per_sl("cc_ca_cong_setting_ccti_timer", sl) as u16,
        ccti_increase: per_sl("cc_ca_cong_setting_ccti_increase", sl) as u8,
        trigger_threshold: per_sl("cc_ca_cong_setting_trigger_threshold", sl) as u8,
        ccti_min: per_sl("cc_ca_cong_setting_ccti_min", sl) as u8,
    });
    let entry = |(shift, multiplier)| CctOption { shift, multiplier };
    CcOptions {
        enabled: flag(settings, "congestion_control", defaults.enabled),
        cc_key: number(settings, "cc_key", defaults.cc_key, u64::MAX),
        max_outstanding_mads: number(
            settings,
            "cc_max_outstanding_mads",
            defaults.max_outstanding_mads,
            u32::MAX,
        ),
        switch_control_map: number(settings, "cc_sw_cong_setting_control_map", 0, u32::MAX),
        switch_victim_mask: mask("cc_sw_cong_setting_victim_mask"),
        switch_credit_mask: mask("cc_sw_cong_setting_credit_mask"),
        switch_threshold: number(settings, "cc_sw_cong_setting_threshold", 0, u8::MAX),
        switch_packet_size: number(settings, "cc_sw_cong_setting_packet_size", 0, u8::MAX),
        switch_cs_threshold: number(
            settings,
            "cc_sw_cong_setting_credit_starvation_threshold",
            0,
            u8::MAX,
        ),
        switch_cs_return_delay: text("cc_sw_cong_setting_credit_starvation_return_delay")
            .and_then(cc_values::cct_entry)
            .map_or(defaults.switch_cs_return_delay, entry),
        switch_marking_rate: number(settings, "cc_sw_cong_setting_marking_rate", 0, u16::MAX),
        ca_port_control: number(settings, "cc_ca_cong_setting_port_control", 0, u16::MAX),
        ca_control_map: number(settings, "cc_ca_cong_setting_control_map", 0, u16::MAX),
        ca_entries,
        cct: text("cc_cct")
            .map(cc_values::cct)
            .unwrap_or_default()
            .into_iter()
            .map(entry)
            .collect(),
        timeout: scheduler.timeout,
        retries: scheduler.retries,
        read_back: settings.cc_read_back,
        key_program: settings.cc_key_program.then_some(KeyProgram {
            protect: settings.cc_key_protect,
            lease_period: settings.cc_key_lease_period,
        }),
    }
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

/// The engines `routing_engine` lists, in the order the sweep tries them, with the
/// configuration's [`routing_options`].
pub fn routing_engines(settings: &Settings) -> EngineList {
    EngineList::parse(settings.sm.routing_engine.as_deref()).with_options(routing_options(settings))
}

/// The options and GUID files the engines route with, OpenSM's default for each option the
/// file does not set. The GUID files are those [`ibqos_opensm::load`] read with the settings,
/// so the SM routes with the files as they were at start or at the last reload, where OpenSM
/// reads them again at each routing. A file the settings name but hold no reading of counts
/// as one that failed.
pub fn routing_options(settings: &Settings) -> RoutingOptions {
    let mut failed_files = BTreeSet::new();
    let mut guids = |file: GuidFile| {
        let option = file.option();
        let path = settings.opensm.get(option)?;
        if path == "(null)" {
            return None;
        }
        let list = settings.guid_files.get(option);
        if !list.is_some_and(|l| l.complete) {
            failed_files.insert(file);
        }
        Some(list.map(|l| l.guids.clone()).unwrap_or_default())
    };
    let root_guids = guids(GuidFile::Root);
    let cn_guids = guids(GuidFile::ComputeNodes);
    let io_guids = guids(GuidFile::IoNodes);
    let guid_routing_order = guids(GuidFile::RoutingOrder);
    RoutingOptions {
        root_guids,
        cn_guids,
        io_guids,
        max_reverse_hops: settings
            .opensm_uint("max_reverse_hops")
            .map_or(0, |n| u16::try_from(n).unwrap_or(u16::MAX)),
        guid_routing_order,
        guid_routing_order_no_scatter: flag(settings, "guid_routing_order_no_scatter", false),
        port_shifting: flag(settings, "port_shifting", false),
        scatter_ports: settings
            .opensm_uint("scatter_ports")
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        connect_roots: flag(settings, "connect_roots", false),
        avoid_throttled_links: flag(settings, "avoid_throttled_links", false),
        lash_start_vl: settings
            .opensm_uint("lash_start_vl")
            .map_or(0, |n| u8::try_from(n).unwrap_or(u8::MAX)),
        do_mesh_analysis: flag(settings, "do_mesh_analysis", false),
        nue_max_num_vls: settings
            .opensm_uint("nue_max_num_vls")
            .map_or_else(NueMaxVls::default, |n| {
                NueMaxVls(u8::try_from(n).unwrap_or(u8::MAX))
            }),
        nue_include_switches: flag(settings, "nue_include_switches", false),
        failed_files,
        qos: settings.qos.enabled,
        torus_config: settings.torus_config.clone(),
        // A cap of 15 VLs caps nothing: OpenSM's default (5) is no cap, as is its 0.
        max_op_vls: settings
            .links
            .oper_vls_cap()
            .filter(|&cap| cap != VlCount::Fifteen),
    }
}

/// The SLs a PathRecord can start from before the routing's `path_sl` has its say: SL 0 (the
/// default), and the [`policy_sls`].
pub fn path_sl_hints(settings: &Settings) -> SlSet {
    SlSet::SL0 | policy_sls(settings)
}

/// The SLs the QoS policy's qos-levels choose, with `qos` on (OpenSM reads the policy only
/// then); levels above 15 give no path, so no SL.
pub fn policy_sls(settings: &Settings) -> SlSet {
    if !settings.qos.enabled {
        return SlSet::default();
    }
    let levels = settings.qos_policy.iter().flat_map(|p| &p.qos_levels);
    levels.filter_map(|level| Sl::new(level.sl)).collect()
}

/// The performance manager's options, OpenSM's default for each the file does not set:
/// `perfmgr` and the `perfmgr_*` family, `event_db_dump_file` (`(null)`: the default file),
/// and the SM's `transaction_timeout` and `transaction_retries`, which OpenSM binds the
/// PerfMgr's agent with. Values below 1 for the sweep time and the query cap are OpenSM's
/// defaults (`PerfMgrConfig::verified`).
pub fn perfmgr_config(settings: &Settings) -> PerfMgrConfig {
    let defaults = PerfMgrConfig::default();
    let scheduler = scheduler_config(settings);
    PerfMgrConfig {
        enabled: flag(settings, "perfmgr", defaults.enabled),
        redirect: flag(settings, "perfmgr_redir", defaults.redirect),
        sweep_time_s: number(
            settings,
            "perfmgr_sweep_time_s",
            defaults.sweep_time_s,
            u16::MAX,
        ),
        max_outstanding_queries: number(
            settings,
            "perfmgr_max_outstanding_queries",
            defaults.max_outstanding_queries,
            u32::MAX,
        ),
        ignore_cas: flag(settings, "perfmgr_ignore_cas", defaults.ignore_cas),
        remove_nodes: flag(settings, "perfmgr_rm_nodes", defaults.remove_nodes),
        log_errors: flag(settings, "perfmgr_log_errors", defaults.log_errors),
        query_cpi: flag(settings, "perfmgr_query_cpi", defaults.query_cpi),
        xmit_wait_log: flag(settings, "perfmgr_xmit_wait_log", defaults.xmit_wait_log),
        xmit_wait_threshold: number(
            settings,
            "perfmgr_xmit_wait_threshold",
            defaults.xmit_wait_threshold,
            u32::MAX,
        ),
        dump_file: settings
            .opensm
            .get("event_db_dump_file")
            .filter(|path| *path != "(null)")
            .cloned(),
        timeout: scheduler.timeout,
        retries: scheduler.retries,
        lanes: settings.perfmgr_lanes,
    }
    .verified()
}

/// The sweep configuration `ibqos sm` runs with, from the settings read and a LID cache.
pub fn sweep_config(settings: &Settings, guid2lid: BTreeMap<u64, u16>) -> SweepConfig {
    let sm = &settings.sm;
    let links = &settings.links;
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
        routing: routing_engines(settings),
        guid2lid,
        qos: settings.qos.clone(),
        qos_setup: setup_config(settings),
        partitions: partition_config(settings),
        multicast: Default::default(),
        use_mfttop: flag(settings, "use_mfttop", true),
        use_optimized_slvl: links.use_optimized_slvl,
        long_timeout: Duration::from_millis(u64::from(sm.long_transaction_timeout.max(1))),
        clients_rereg: !flag(settings, "no_clients_rereg", false),
        ignore_other_sm: flag(settings, "ignore_other_sm", false),
        mode: SweepMode::Forced,
        m_key: mkey_config(settings),
        policy_sls: policy_sls(settings),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Everything the sweep, the election and the SA take from `settings`, as one text.
    fn what_the_sm_runs_with(settings: &Settings) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            sweep_config(settings, BTreeMap::new()),
            congestion_options(settings),
            election_config(settings, Guid(1)),
            sa_config(settings),
            mkey_config(settings),
            crate::manager::interval(settings)
        )
    }

    /// The settings of an opensm.conf holding `text`, read as the daemon reads its file (the
    /// policy and partitions files it names included).
    fn read(dir: &Path, text: &str) -> Settings {
        let path = dir.join("opensm.conf");
        std::fs::write(&path, text).unwrap();
        ibqos_opensm::load(&path).unwrap().settings
    }

    /// The keys and timers kept verbatim under `[opensm]` read as OpenSM's `strtoull(.., 0)`
    /// reads them: `010` is octal, `0x10` hex, and text that is no number is 0.
    #[test]
    fn verbatim_numbers_read_as_opensm_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let settings = read(
            dir.path(),
            "sm_key 010
sa_key 0x10
polling_retry_number 12
m_key 0X0a
",
        );
        let election = election_config(&settings, Guid(1));
        assert_eq!((election.sm_key, election.polling_retries), (8, 12));
        assert_eq!(sa_config(&settings).sa_key, 16);
        assert_eq!(mkey_config(&settings).key, 10);
        let defaults = election_config(&read(dir.path(), ""), Guid(1));
        assert_eq!(defaults.sm_key, 1);
    }

    /// [`takes_effect`] holds for every option OpenSM knows: an option said to take effect at
    /// the next sweep changes what the SM runs with for some value, and one said never to take
    /// effect changes it for none. Each option is tried with values of every kind an option
    /// takes (numbers, booleans, engine and enforcement names, files, tables).
    #[test]
    fn takes_effect_says_which_options_the_sm_reads() {
        let dir = tempfile::tempdir().unwrap();
        let partitions = dir.path().join("partitions.conf");
        std::fs::write(
            &partitions,
            "Default=0x7fff,ipoib:ALL=full;\nStorage=0x0010:ALL;\n",
        )
        .unwrap();
        let policy = dir.path().join("qos-policy.conf");
        std::fs::write(&policy, "qos-ulps\n  default : 3\nend-qos-ulps\n").unwrap();
        let files = [
            partitions.display().to_string(),
            policy.display().to_string(),
        ];
        let mut values: Vec<&str> = vec![
            "0",
            "1",
            "2",
            "7",
            "TRUE",
            "FALSE",
            "0x10",
            "100000",
            "updn",
            "off",
            "in",
            "0:8,1:8",
            "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
            // A per-SL option's `SL value`.
            "3 7",
        ];
        values.extend(files.iter().map(String::as_str));
        // torus-2QoS.conf is read only when the engine that reads it is listed.
        let plain = "qos TRUE\n";
        let torus = "qos TRUE\nrouting_engine torus-2QoS\n";
        let baselines = [plain, torus].map(|base| what_the_sm_runs_with(&read(dir.path(), base)));
        for key in ibqos_opensm::option_names() {
            let (base, baseline) = match key {
                "torus_config" => (torus, &baselines[1]),
                _ => (plain, &baselines[0]),
            };
            let changes = values.iter().any(|value| {
                let settings = read(dir.path(), &format!("{base}{key} {value}\n"));
                what_the_sm_runs_with(&settings) != *baseline
            });
            match takes_effect(key) {
                Takes::Never => assert!(
                    !changes,
                    "`{key}` changes what the SM runs with, but takes_effect says Never"
                ),
                Takes::NextSweep if !READ_BY_DAEMON_AT_RELOAD.contains(&key) => assert!(
                    changes,
                    "takes_effect says `{key}` applies at the next sweep, but no value of it \
                     changes what the SM runs with"
                ),
                Takes::NextSweep | Takes::Restart => {}
            }
        }
    }

    /// The routing options reach the engine list the sweep routes with, the GUID files as
    /// read, a file that would not read among the failed ones.
    #[test]
    fn the_engines_route_with_the_routing_options_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let roots = dir.path().join("roots");
        std::fs::write(&roots, "# spines\n0x10 spine-1\n0x20\n").unwrap();
        let order = dir.path().join("order");
        std::fs::write(&order, "0x5\nhost-6\n0x7\n").unwrap();
        let missing = dir.path().join("missing");
        let text = format!(
            "routing_engine updn\nroot_guid_file {}\nguid_routing_order_file {}\n\
             cn_guid_file {}\nmax_reverse_hops 3\nscatter_ports 010\nport_shifting TRUE\n\
             connect_roots TRUE\nguid_routing_order_no_scatter TRUE\n\
             avoid_throttled_links TRUE\nlash_start_vl 2\ndo_mesh_analysis TRUE\n\
             max_op_vls 3\nnue_max_num_vls 0\nnue_include_switches TRUE\n",
            roots.display(),
            order.display(),
            missing.display()
        );
        let settings = read(dir.path(), &text);
        let engines = routing_engines(&settings);
        assert_eq!(
            *engines.options(),
            RoutingOptions {
                root_guids: Some(vec![0x10, 0x20]),
                cn_guids: Some(vec![]),
                io_guids: None,
                max_reverse_hops: 3,
                guid_routing_order: Some(vec![5]),
                guid_routing_order_no_scatter: true,
                port_shifting: true,
                // strtoul reads a leading 0 as octal.
                scatter_ports: 8,
                connect_roots: true,
                avoid_throttled_links: true,
                lash_start_vl: 2,
                do_mesh_analysis: true,
                nue_max_num_vls: NueMaxVls(0),
                nue_include_switches: true,
                failed_files: BTreeSet::from([GuidFile::ComputeNodes, GuidFile::RoutingOrder]),
                qos: false,
                torus_config: None,
                max_op_vls: Some(VlCount::Four),
            }
        );
        assert_eq!(
            sweep_config(&settings, BTreeMap::new()).routing.options(),
            engines.options()
        );
        let defaults = read(dir.path(), "routing_engine updn\n");
        assert_eq!(
            *routing_engines(&defaults).options(),
            RoutingOptions::default()
        );
    }

    /// The PerfMgr's options from opensm.conf, read as OpenSM reads them: TRUE and FALSE,
    /// numbers in C's bases, a sweep time or cap of 0 replaced by the default.
    /// Every congestion control option reaches the manager as OpenSM stores it, and `ibqos
    /// migrate` carries them to ibqos.toml and back.
    #[test]
    fn congestion_control_runs_with_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let text = "congestion_control TRUE\ncc_key 0x1234\ncc_max_outstanding_mads 20\n\
                    cc_sw_cong_setting_control_map 0x1f\n\
                    cc_sw_cong_setting_victim_mask 0x106\n\
                    cc_sw_cong_setting_credit_mask ff\n\
                    cc_sw_cong_setting_threshold 0xf\ncc_sw_cong_setting_packet_size 8\n\
                    cc_sw_cong_setting_credit_starvation_threshold 3\n\
                    cc_sw_cong_setting_credit_starvation_return_delay 1:7\n\
                    cc_sw_cong_setting_marking_rate 10\n\
                    cc_ca_cong_setting_port_control 1\ncc_ca_cong_setting_control_map 0x3\n\
                    cc_ca_cong_setting_ccti_timer 0 150\ncc_ca_cong_setting_ccti_timer 1 300\n\
                    cc_ca_cong_setting_ccti_increase 1 2\n\
                    cc_ca_cong_setting_trigger_threshold 1 4\n\
                    cc_ca_cong_setting_ccti_min 1 1\ncc_cct 0:0,1:2,2:0x3fff\n\
                    transaction_timeout 300\ntransaction_retries 2\n";
        let settings = read(dir.path(), text);
        let options = congestion_options(&settings);
        let (native, lost) = ibqos_opensm::to_native_toml(&settings);
        assert!(lost.is_empty(), "{lost:?}");
        let format = ibqos_opensm::Format::NativeToml;
        let migrated = ibqos_opensm::load_bytes("ibqos.toml", native.as_bytes(), format).unwrap();
        assert_eq!(congestion_options(&migrated.settings), options, "{native}");
        let mut victim_mask = [0; 32];
        victim_mask[30..].copy_from_slice(&[0x01, 0x06]);
        let mut credit_mask = [0; 32];
        credit_mask[31] = 0xff;
        let mut ca_entries = [CaCongestionEntry::default(); 16];
        ca_entries[0].ccti_timer = 150;
        ca_entries[1] = CaCongestionEntry {
            ccti_timer: 300,
            ccti_increase: 2,
            trigger_threshold: 4,
            ccti_min: 1,
        };
        let entry = |shift, multiplier| CctOption { shift, multiplier };
        assert_eq!(
            options,
            CcOptions {
                enabled: true,
                cc_key: 0x1234,
                max_outstanding_mads: 20,
                switch_control_map: 0x1f,
                switch_victim_mask: victim_mask,
                switch_credit_mask: credit_mask,
                switch_threshold: 0xf,
                switch_packet_size: 8,
                switch_cs_threshold: 3,
                switch_cs_return_delay: entry(1, 7),
                switch_marking_rate: 10,
                ca_port_control: 1,
                ca_control_map: 3,
                ca_entries,
                cct: vec![entry(0, 0), entry(1, 2), entry(2, 0x3fff)],
                timeout: Duration::from_millis(300),
                retries: 2,
                read_back: true,
                key_program: None,
            }
        );
        assert_eq!(
            congestion_options(&Settings::default()),
            CcOptions {
                timeout: Duration::from_millis(200),
                ..CcOptions::default()
            }
        );
    }

    #[test]
    fn the_perfmgr_runs_with_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let text = "perfmgr TRUE\nperfmgr_redir FALSE\nperfmgr_sweep_time_s 0x1e\n\
                    perfmgr_max_outstanding_queries 0\nperfmgr_ignore_cas TRUE\n\
                    perfmgr_rm_nodes FALSE\nperfmgr_log_errors FALSE\n\
                    perfmgr_query_cpi FALSE\nperfmgr_xmit_wait_log TRUE\n\
                    perfmgr_xmit_wait_threshold 010\n\
                    event_db_dump_file /var/log/counters.log\n\
                    transaction_timeout 300\ntransaction_retries 2\n";
        let settings = read(dir.path(), text);
        let config = perfmgr_config(&settings);
        // `ibqos migrate` carries them to ibqos.toml and back (an octal number it reports as
        // lost, so this file says 8 plainly).
        let plain = read(dir.path(), &text.replace(" 010", " 8"));
        let (native, lost) = ibqos_opensm::to_native_toml(&plain);
        assert!(lost.is_empty(), "{lost:?}");
        let format = ibqos_opensm::Format::NativeToml;
        let migrated = ibqos_opensm::load_bytes("ibqos.toml", native.as_bytes(), format).unwrap();
        assert_eq!(perfmgr_config(&migrated.settings), config, "{native}");
        assert_eq!(
            config,
            PerfMgrConfig {
                enabled: true,
                redirect: false,
                sweep_time_s: 30,
                max_outstanding_queries: 500,
                ignore_cas: true,
                remove_nodes: false,
                log_errors: false,
                query_cpi: false,
                xmit_wait_log: true,
                xmit_wait_threshold: 8,
                dump_file: Some("/var/log/counters.log".into()),
                timeout: Duration::from_millis(300),
                retries: 2,
                lanes: false,
            }
        );
        let defaults = perfmgr_config(&read(dir.path(), ""));
        let scheduler = scheduler_config(&read(dir.path(), ""));
        assert_eq!(
            defaults,
            PerfMgrConfig {
                timeout: scheduler.timeout,
                retries: scheduler.retries,
                ..PerfMgrConfig::default()
            }
        );
        let toml = dir.path().join("ibqos.toml");
        std::fs::write(
            &toml,
            "[opensm]\nperfmgr = true\nperfmgr_sweep_time_s = 10\nperfmgr_rm_nodes = false\n",
        )
        .unwrap();
        let native = perfmgr_config(&ibqos_opensm::load(&toml).unwrap().settings);
        assert!(native.enabled && !native.remove_nodes && !native.lanes);
        assert_eq!(native.sweep_time_s, 10);
        // Beyond OpenSM, ibqos.toml alone asks for the per-VL and per-SL counters.
        std::fs::write(
            &toml,
            "[sm]\nperfmgr_lanes = true\n[opensm]\nperfmgr = true\n",
        )
        .unwrap();
        let lanes = ibqos_opensm::load(&toml).unwrap().settings;
        assert!(perfmgr_config(&lanes).lanes);
        let (native, _) = ibqos_opensm::to_native_toml(&lanes);
        assert!(native.contains("perfmgr_lanes = true\n"), "{native}");
        let (_, lost) = ibqos_opensm::to_opensm_conf(&lanes);
        assert!(
            lost.iter().any(|d| d.message.contains("`perfmgr_lanes`")),
            "{lost:?}"
        );
        assert_eq!(takes_effect("perfmgr_lanes"), Takes::Restart);
        // The daemon creates its PerfMgr once.
        assert_eq!(takes_effect("perfmgr_sweep_time_s"), Takes::Restart);
        assert_eq!(takes_effect("event_db_dump_file"), Takes::Restart);
        assert_eq!(takes_effect("perfmgr_redir"), Takes::Restart);
        assert_eq!(takes_effect("event_plugin_name"), Takes::Never);
    }

    /// `text` written as an ibqos.toml in `dir`, and loaded.
    fn load_toml(
        dir: &tempfile::TempDir,
        text: &str,
    ) -> Result<ibqos_opensm::Loaded, ibqos_opensm::LoadError> {
        let toml = dir.path().join("ibqos.toml");
        std::fs::write(&toml, text).unwrap();
        ibqos_opensm::load(&toml)
    }

    /// ibqos.toml alone says the QoS conformance report's tolerance; the manager takes it at
    /// the sweep after a reload, as the QoS options.
    #[test]
    fn the_qos_report_tolerance_is_an_ibqos_toml_option() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| load_toml(&dir, text);
        assert_eq!(load("").unwrap().settings.qos_report_tolerance, 2);
        let settings = load("[sm]\nqos_report_tolerance = 5\n").unwrap().settings;
        assert_eq!(settings.qos_report_tolerance, 5);
        let (native, _) = ibqos_opensm::to_native_toml(&settings);
        assert!(native.contains("qos_report_tolerance = 5\n"), "{native}");
        let (_, lost) = ibqos_opensm::to_opensm_conf(&settings);
        assert!(
            lost.iter()
                .any(|d| d.message.contains("`qos_report_tolerance`")),
            "{lost:?}"
        );
        let changes = ibqos_opensm::changed_options(&Settings::default(), &settings);
        assert!(
            changes
                .iter()
                .any(|c| c.key == "qos_report_tolerance" && c.old == "2" && c.new == "5"),
            "{changes:?}"
        );
        assert_eq!(takes_effect("qos_report_tolerance"), Takes::NextSweep);
        let error = load("[sm]\nqos_report_tolerance = 101\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("ibqos.toml:2:")
                && error.contains("qos_report_tolerance 101 is more than 100 percentage points"),
            "{error}"
        );
    }

    /// ibqos.toml alone turns the congestion control read back off and has `cc_key`
    /// programmed; `check` locates what cannot work, and migration says what opensm.conf loses.
    #[test]
    fn the_congestion_read_back_and_key_are_ibqos_toml_options() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| load_toml(&dir, text);
        let defaults = congestion_options(&load("").unwrap().settings);
        assert!(defaults.read_back && defaults.key_program.is_none());
        let text = "[sm]\ncc_read_back = false\ncc_key_program = true\ncc_key_protect = true\n\
                    cc_key_lease_period = 60\n[opensm]\ncc_key = \"0x1234\"\n";
        let settings = load(text).unwrap().settings;
        let options = congestion_options(&settings);
        assert!(!options.read_back);
        assert_eq!(
            options.key_program,
            Some(KeyProgram {
                protect: true,
                lease_period: 60
            })
        );
        let (native, _) = ibqos_opensm::to_native_toml(&settings);
        assert!(
            native.contains(
                "cc_read_back = false\ncc_key_program = true\ncc_key_protect = true\n\
                             cc_key_lease_period = 60\n"
            ),
            "{native}"
        );
        let (_, lost) = ibqos_opensm::to_opensm_conf(&settings);
        for key in ["`cc_read_back = false`", "`cc_key_program`"] {
            assert!(lost.iter().any(|d| d.message.contains(key)), "{lost:?}");
        }
        let changes = ibqos_opensm::changed_options(&Settings::default(), &settings);
        let changed: Vec<&str> = changes.iter().map(|c| c.key.as_str()).collect();
        for key in [
            "cc_read_back",
            "cc_key_program",
            "cc_key_protect",
            "cc_key_lease_period",
        ] {
            assert!(changed.contains(&key), "{changes:?}");
            assert_eq!(takes_effect(key), Takes::NextSweep);
        }

        let error = |text: &str| load(text).unwrap_err().to_string();
        let found = error(
            "[sm]\ncc_key_program = true\ncc_key_lease_period = 70000\n[opensm]\ncc_key = \"1\"\n",
        );
        assert!(
            found.contains("ibqos.toml:3:23")
                && found.contains("cc_key_lease_period 70000 is not 0-65535 seconds"),
            "{found}"
        );
        let found = error("[sm]\ncc_key_program = true\n");
        assert!(
            found.contains("ibqos.toml:2:18")
                && found.contains("cc_key_program needs a cc_key other than 0 in [opensm]"),
            "{found}"
        );
        let found = error("[sm]\ncc_key_protect = true\n");
        assert!(
            found.contains("ibqos.toml:2:18")
                && found.contains("cc_key_protect needs cc_key_program = true"),
            "{found}"
        );
    }

    /// torus-2QoS gets `qos` and its torus-2QoS.conf, read when the list names the engine.
    #[test]
    fn torus_2qos_routes_with_qos_and_its_config() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("torus-2QoS.conf");
        std::fs::write(&conf, "torus 3 3 1\nxp_link 0x1 0x2\nyp_link 0x1 0x4\n").unwrap();
        let text = format!(
            "routing_engine torus-2QoS,minhop\nqos TRUE\ntorus_config {}\n",
            conf.display()
        );
        let options = routing_options(&read(dir.path(), &text));
        assert!(options.qos);
        let config = options.torus_config.expect("read");
        assert_eq!(config.radix, [3, 3, 1]);
        assert_eq!(config.seeds[0].links[1][1], Some((1, 4)));
        let unlisted = format!("qos TRUE\ntorus_config {}\n", conf.display());
        assert_eq!(
            routing_options(&read(dir.path(), &unlisted)).torus_config,
            None
        );
    }
}
