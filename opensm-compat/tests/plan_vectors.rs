//! OpenSM's table-computation vectors (tests/data/plan-vectors.toml): each opensm.conf is
//! read by the opensm-compat reader and planned for its port; the result must be the bytes and
//! entries OpenSM 3.3.23 programs.

use ibqos_opensm::{Format, load_bytes};
use ibqos_qos::{PortCaps, PortClass, VlCount, plan};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vector {
    id: String,
    config: String,
    class: String,
    /// OperVLs, VLCap, VLArbLowCap, VLArbHighCap.
    port: [u32; 4],
    sl2vl: Option<String>,
    vlarb_low: Option<String>,
    vlarb_high: Option<String>,
    blocks: Option<Vec<u8>>,
    vl_high_limit: Option<u8>,
}

#[derive(Debug, Deserialize)]
struct Vectors {
    vector: Vec<Vector>,
}

fn hex_bytes(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
        .collect()
}

fn format_entries(entries: &[ibqos_qos::VlArbEntry]) -> String {
    entries
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn opensm_table_vectors() {
    let text = include_str!("data/plan-vectors.toml");
    let vectors: Vectors = toml::from_str(text).expect("vector file parses");
    let numbers: std::collections::BTreeSet<u32> = vectors
        .vector
        .iter()
        .map(|v| {
            v.id.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        numbers,
        (12..=25).collect(),
        "every vector 12-25 is present"
    );
    let mut checked = 0;
    for v in &vectors.vector {
        let loaded = load_bytes("opensm.conf", v.config.as_bytes(), Format::OpenSmConf)
            .unwrap_or_else(|e| panic!("vector {}: {e}", v.id));
        let class: PortClass = v.class.parse().expect("class");
        let count = |n: u32| VlCount::from_count(n).expect("VL count");
        let caps = PortCaps {
            oper_vls: count(v.port[0]),
            vl_cap: count(v.port[1]),
            vlarb_low_cap: v.port[2] as u8,
            vlarb_high_cap: v.port[3] as u8,
            sl_mapping_supported: true,
        };
        let planned = plan(&loaded.settings.qos, class, &caps)
            .unwrap_or_else(|e| panic!("vector {}: {e}", v.id));
        if let Some(sl2vl) = &v.sl2vl {
            let payload = planned.sl2vl.expect("SL2VL planned").to_wire().to_vec();
            assert_eq!(payload, hex_bytes(sl2vl), "vector {}: SL2VL payload", v.id);
        }
        if let Some(low) = &v.vlarb_low {
            assert_eq!(
                &format_entries(&planned.vlarb_low()),
                low,
                "vector {}: low",
                v.id
            );
        }
        if let Some(high) = &v.vlarb_high {
            assert_eq!(
                &format_entries(&planned.vlarb_high()),
                high,
                "vector {}: high",
                v.id
            );
        }
        if let Some(blocks) = &v.blocks {
            let sent: Vec<u8> = planned.vlarb.iter().map(|b| b.block.number()).collect();
            assert_eq!(&sent, blocks, "vector {}: VLArb blocks", v.id);
        }
        if let Some(limit) = v.vl_high_limit {
            assert_eq!(planned.vl_high_limit, limit, "vector {}: VLHighLimit", v.id);
        }
        checked += 1;
    }
    assert_eq!(checked, vectors.vector.len());
}
