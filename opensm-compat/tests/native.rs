//! The native ibqos.toml: the shipped example, and strictness.

use std::path::Path;

use ibqos_opensm::{Format, LoadError, load, load_bytes, to_native_toml, to_opensm_conf};
use ibqos_qos::{PortClass, VlArbEntry, VlCount};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ibqos.toml");

#[test]
fn the_example_parses_and_converts_without_loss() {
    let loaded = load(Path::new(EXAMPLE)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.format, Format::NativeToml);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let s = &loaded.settings;
    assert!(s.qos.enabled);
    let ca = s.qos.effective(PortClass::Ca);
    assert_eq!(ca.high_limit, 6);
    assert_eq!(ca.vlarb_low.0[3], VlArbEntry::new(3, 192));
    assert_eq!(s.qos.effective(PortClass::Swe).sl2vl.0[15].get(), 15);
    assert_eq!(s.qos.rtr.vlarb_high, Some(ibqos_qos::VlArbTable::EMPTY));
    assert_eq!(s.links.oper_vls_cap(), Some(VlCount::Fifteen));
    assert_eq!(s.sm.routing_engine.as_deref(), Some("minhop"));
    assert_eq!(s.opensm["m_key_lookup"], "TRUE");
    let (conf, lost) = to_opensm_conf(s);
    assert!(lost.is_empty(), "{lost:?}");
    let back = load_bytes("x.conf", conf.as_bytes(), Format::OpenSmConf).expect("loads");
    assert_eq!(&back.settings, s);
    assert!(to_native_toml(s).1.is_empty());
}

#[test]
fn every_section_rejects_unknown_fields() {
    for (section, text, line) in [
        ("top level", "[qos_ca]\nhigh_limit = 1\n", 1),
        ("[qos]", "[qos]\nenable = true\n", 2),
        ("[qos.ca]", "[qos.ca]\nhighlimit = 1\n", 2),
        ("[qos.port]", "[qos.port]\nhigh_limit = 1\n", 1),
        (
            "a VLArb entry",
            "[qos.ca]\nvlarb_low = [{ vl = 1, weight = 2, prio = 3 }]\n",
            2,
        ),
        ("[sm]", "[sm]\nsm_priority = 1\n", 2),
        ("[links]", "[links]\nmtu = 4\n", 2),
        ("[opensm]", "[opensm]\nno_such_option = 1\n", 2),
    ] {
        let result = load_bytes("u.toml", text.as_bytes(), Format::NativeToml);
        let Err(LoadError::Invalid { diagnostics, .. }) = result else {
            panic!("{section}: accepted {text:?}");
        };
        let loc = diagnostics[0].location.as_ref().expect("located");
        assert_eq!(loc.line, line, "{section}: {:?}", diagnostics[0]);
    }
}

#[test]
fn strict_values() {
    for text in [
        "[qos.default]\nvlarb_high = [{ vl = 15, weight = 1 }]\n",
        "[qos.default]\nvlarb_high = [{ vl = 1, weight = 256 }]\n",
        "[qos.default]\nsl2vl = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]\n",
        "[qos.default]\nsl2vl = [16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n",
        "[qos.default]\nmax_vls = 0\n",
        "[qos.default]\nhigh_limit = -1\n",
        "[links]\nmax_op_vls = 5\n",
        "[links]\nhead_of_queue_lifetime = 32\n",
        "[sm]\nguid = \"-1\"\n",
        "[sm]\nmax_wire_smps = 0\n",
        "[opensm]\nsminfo_polling_timeout = \"010\"\n",
        "[opensm]\n\"cc_ca_cong_setting_ccti_timer 16\" = 1\n",
        "[opensm]\ndimn_ports_file = \"/x\"\n",
        "[opensm]\ncc_sw_cong_setting_threshold = 16\n",
        "[opensm]\ncc_sw_cong_setting_credit_starvation_return_delay = \"4:1\"\n",
        "[opensm]\ncc_cct = \"0:0,1:16384\"\n",
        "[opensm]\ncc_cct = \"1:5\"\n",
    ] {
        let result = load_bytes("s.toml", text.as_bytes(), Format::NativeToml);
        let Err(LoadError::Invalid { diagnostics, .. }) = result else {
            panic!("accepted {text:?}");
        };
        let d = &diagnostics[0];
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(2), "{d:?}");
        assert!(d.is_error(), "{d:?}");
    }
}

#[test]
fn load_errors_display_the_first_problem() {
    let err = load_bytes("bad.toml", b"[links]\nmax_op_vls = 3\n", Format::NativeToml)
        .expect_err("3 VLs is not a count a port can have");
    let text = err.to_string();
    assert!(
        text.starts_with("bad.toml is not a usable ibqos.toml: bad.toml:2:14: error["),
        "{text}"
    );
}

/// ibqos.toml's one departure from OpenSM's defaults: optimized SL2VL programming is on unless
/// the file says otherwise (opensm.conf keeps OpenSM's FALSE).
#[test]
fn optimized_sl2vl_defaults_on_in_ibqos_toml_only() {
    use ibqos_opensm::{Format, load_bytes};
    let native = load_bytes("ibqos.toml", b"", Format::NativeToml).unwrap();
    assert!(native.settings.links.use_optimized_slvl);
    let off = load_bytes(
        "ibqos.toml",
        b"[links]\nuse_optimized_slvl = false\n",
        Format::NativeToml,
    )
    .unwrap();
    assert!(!off.settings.links.use_optimized_slvl);
    let conf = load_bytes("opensm.conf", b"", Format::OpenSmConf).unwrap();
    assert!(!conf.settings.links.use_optimized_slvl);
}

/// The README's `[partitions]` example is a valid ibqos.toml that says what its comments say.
#[test]
fn the_readme_partitions_example_loads() {
    let readme = include_str!("../../README.md");
    let block = readme
        .split("```toml\n")
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("[[partitions.partition]]"))
        .expect("the README has a [partitions] example");
    let loaded = load_bytes("README.md", block.as_bytes(), Format::NativeToml)
        .unwrap_or_else(|e| panic!("{e}"));
    let partitions = loaded.settings.partitions.expect("partitions");
    let [default, storage] = partitions.partitions.as_slice() else {
        panic!("two definitions expected: {partitions:?}");
    };
    assert_eq!((default.pkey, default.flags.mtu), (Some(0x7fff), 5));
    assert_eq!(
        storage.members[0].membership,
        ibqos_qos::partitions::Membership::Full
    );
    assert_eq!(
        storage.mcgroups[0].flags.sl, 3,
        "inherited from the definition"
    );
}
