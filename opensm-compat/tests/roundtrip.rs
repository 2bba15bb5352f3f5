//! Round trips: each format reads back what ibqos writes, and a conversion reports exactly what
//! it cannot carry.

mod common;

use common::strategy::{anything, expressible};
use ibqos_opensm::{Format, Settings, load_bytes, to_native_toml, to_opensm_conf};
use proptest::prelude::*;

fn reread(text: &str, format: Format) -> Settings {
    load_bytes("written", text.as_bytes(), format)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .settings
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// parse(write(s)) == s for opensm.conf.
    #[test]
    fn opensm_conf_round_trip(s in expressible()) {
        let (text, lost) = to_opensm_conf(&s);
        prop_assert!(lost.is_empty(), "{lost:?}");
        prop_assert_eq!(reread(&text, Format::OpenSmConf), s);
    }

    /// parse(write(s)) == s for ibqos.toml.
    #[test]
    fn native_round_trip(s in expressible()) {
        let (text, lost) = to_native_toml(&s);
        prop_assert!(lost.is_empty(), "{lost:?}");
        prop_assert_eq!(reread(&text, Format::NativeToml), s);
    }

    /// opensm.conf -> settings -> ibqos.toml -> settings -> opensm.conf gives the same file.
    #[test]
    fn opensm_to_native_and_back(s in expressible()) {
        let conf = to_opensm_conf(&s).0;
        let from_conf = reread(&conf, Format::OpenSmConf);
        let native = to_native_toml(&from_conf).0;
        let from_native = reread(&native, Format::NativeToml);
        prop_assert_eq!(&from_native, &from_conf);
        prop_assert_eq!(to_opensm_conf(&from_native).0, conf);
    }

    /// Whatever a conversion cannot say is reported, and only that.
    #[test]
    fn conversions_report_exactly_what_they_lose(s in anything()) {
        let (conf, lost) = to_opensm_conf(&s);
        prop_assert_eq!(lost.is_empty(), reread(&conf, Format::OpenSmConf) == s, "{:?}", lost);
        let (native, lost) = to_native_toml(&s);
        prop_assert_eq!(lost.is_empty(), reread(&native, Format::NativeToml) == s, "{:?}", lost);
        prop_assert!(lost.iter().all(|d| d.code.as_str() == "not-expressible"), "{:?}", lost);
    }
}

#[test]
fn defaults_round_trip_silently() {
    let s = Settings::default();
    for (text, lost, format) in [
        {
            let (t, l) = to_opensm_conf(&s);
            (t, l, Format::OpenSmConf)
        },
        {
            let (t, l) = to_native_toml(&s);
            (t, l, Format::NativeToml)
        },
    ] {
        assert!(lost.is_empty(), "{lost:?}");
        assert_eq!(reread(&text, format), s);
    }
}

#[test]
fn what_ibqos_toml_cannot_say_is_reported() {
    let mut s = Settings::default();
    s.links.max_op_vls = 8;
    s.links.head_of_queue_lifetime = 0x20;
    s.sm.log_file = None;
    let (text, lost) = to_native_toml(&s);
    let keys: Vec<&str> = lost
        .iter()
        .map(|d| d.message.split('`').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        keys,
        vec!["head_of_queue_lifetime", "log_file", "max_op_vls"],
        "{text}"
    );
    assert!(text.contains("max_op_vls = 15"), "{text}");
}

#[test]
fn what_opensm_conf_cannot_say_is_reported() {
    let mut s = Settings::default();
    s.sm.routing_engine = Some("updn # fallback".to_string());
    s.qos.ca.max_vls = Some(0);
    s.qos.ca.vlarb_high = Some(ibqos_qos::VlArbTable::from_entries(&[
        ibqos_qos::VlArbEntry::new(15, 4),
    ]));
    let (_, lost) = to_opensm_conf(&s);
    let keys: Vec<&str> = lost
        .iter()
        .map(|d| d.message.split('`').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        keys,
        vec!["qos_ca_max_vls", "qos_ca_vlarb_high", "routing_engine"]
    );
}
