//! The options that feed the routing engines, in both formats: migrated both ways without a
//! loss, held to OpenSM's value rules, and their GUID files read by `load`.

mod common;

use common::load_conf;
use ibqos_opensm::{Format, load, load_bytes, to_native_toml, to_opensm_conf};

/// Every routing option at a value other than OpenSM's default.
const ROUTING: &str = "\
routing_engine ftree,updn,no_fallback
root_guid_file /etc/opensm/roots
cn_guid_file /etc/opensm/cns
io_guid_file /etc/opensm/ios
max_reverse_hops 2
guid_routing_order_file /etc/opensm/order
guid_routing_order_no_scatter TRUE
port_shifting TRUE
scatter_ports 7
connect_roots TRUE
use_ucast_cache TRUE
avoid_throttled_links TRUE
lash_start_vl 1
do_mesh_analysis TRUE
lmc 2
";

#[test]
fn routing_options_migrate_both_ways_without_a_loss() {
    let from_conf = load_conf(ROUTING.as_bytes());
    assert!(
        from_conf.diagnostics.is_empty(),
        "{:?}",
        from_conf.diagnostics
    );
    let (toml, lost) = to_native_toml(&from_conf.settings);
    assert!(lost.is_empty(), "{lost:?}");
    assert!(
        toml.contains("root_guid_file = \"/etc/opensm/roots\"\n")
            && toml.contains("max_reverse_hops = \"2\"\n")
            && toml.contains("routing_engine = \"ftree,updn,no_fallback\"\n"),
        "{toml}"
    );
    let from_toml = load_bytes("ibqos.toml", toml.as_bytes(), Format::NativeToml)
        .unwrap()
        .settings;
    assert_eq!(from_toml, from_conf.settings);
    let (conf, lost) = to_opensm_conf(&from_toml);
    assert!(lost.is_empty(), "{lost:?}");
    for line in ROUTING.lines() {
        assert!(conf.contains(&format!("\n{line}\n")), "{line}:\n{conf}");
    }
}

/// OpenSM's parsers: a number out of its field's range is rejected (the default stays), a
/// boolean other than TRUE is FALSE. ibqos.toml refuses both.
#[test]
fn routing_option_values_follow_opensm_s_rules() {
    let loaded =
        load_conf(b"max_reverse_hops 65536\nscatter_ports 4294967296\nport_shifting yes\n");
    let codes: Vec<(&str, usize)> = loaded
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.location.as_ref().unwrap().line))
        .collect();
    assert_eq!(
        codes,
        [("out-of-range", 1), ("out-of-range", 2), ("not-true", 3)]
    );
    assert!(!loaded.settings.opensm.contains_key("max_reverse_hops"));
    assert_eq!(loaded.settings.opensm["port_shifting"], "FALSE");
    for bad in [
        "max_reverse_hops = 65536",
        "scatter_ports = -1",
        "connect_roots = \"yes\"",
    ] {
        let text = format!("[opensm]\n{bad}\n");
        let read = load_bytes("ibqos.toml", text.as_bytes(), Format::NativeToml);
        assert!(read.is_err(), "{bad}");
    }
}

/// `load` reads the GUID files the options name into the settings.
#[test]
fn load_reads_the_guid_files_the_options_name() {
    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("roots");
    std::fs::write(&roots, "0x20 # spine\n0x10\n").unwrap();
    let conf = dir.path().join("opensm.conf");
    let missing = dir.path().join("missing");
    let text = format!(
        "root_guid_file {}\nio_guid_file {}\n",
        roots.display(),
        missing.display()
    );
    std::fs::write(&conf, text).unwrap();
    let loaded = load(&conf).unwrap();
    let files = &loaded.settings.guid_files;
    assert_eq!(files["root_guid_file"].guids, [0x20, 0x10]);
    assert!(files["root_guid_file"].complete);
    assert!(files["io_guid_file"].guids.is_empty() && !files["io_guid_file"].complete);
    let unreadable = &loaded.guid_files[0];
    assert_eq!(unreadable.code.as_str(), "guid-file-unreadable");
    assert_eq!(unreadable.location.as_ref().unwrap().line, 2);
    // What the configuration gives differs from what it says: `ibqos sim` notes it.
    assert!(loaded.diagnostics.is_empty() && loaded.has_errors());
}
