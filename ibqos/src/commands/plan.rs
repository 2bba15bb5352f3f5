//! `ibqos plan`: the tables programmed on one kind of port.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Result;
use ibqos_qos::{PortCaps, PortPlan, VlArbEntry, plan};
use serde_json::json;

use crate::cli::PlanArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &PlanArgs) -> Result<Outcome> {
    let path = args
        .opensm_conf
        .as_ref()
        .or(args.toml.as_ref())
        .expect("clap requires one");
    let loaded = load_config(path)?;
    let mut report = Report::new(args.diagnostics.strict);
    report.extend(loaded.diagnostics);
    let caps = PortCaps {
        vl_cap: args.vls,
        oper_vls: args.oper_vls.unwrap_or(args.vls),
        vlarb_low_cap: args.low_cap,
        vlarb_high_cap: args.high_cap,
        sl_mapping_supported: !args.no_sl_mapping,
    };
    // Without --strict the plan is what OpenSM would do with the file as it stands (it ignores
    // bad lines); with --strict any problem stops it.
    if args.diagnostics.strict && report.error_count() > 0 {
        eprint!("{}", report.render_human(true));
        eprintln!("no plan: --strict refuses a configuration with problems");
        return Ok(Outcome::Failed);
    }
    let qos = &loaded.settings.qos;
    let port = plan(qos, args.class, &caps)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let entries = |e: Vec<VlArbEntry>| -> Vec<_> {
            e.iter()
                .map(|e| json!({"vl": e.vl, "weight": e.weight}))
                .collect()
        };
        let object = json!({
            "class": args.class.name(),
            "qos_enabled": qos.enabled,
            "sl2vl": port.sl2vl.map(|t| t.0.map(|vl| vl.get())),
            "vlarb_low": entries(port.vlarb_low()),
            "vlarb_high": entries(port.vlarb_high()),
            "vl_high_limit": port.vl_high_limit,
            "diagnostics": report.to_json(),
        });
        writeln!(out, "{object}")?;
    } else {
        // Notes are for `ibqos check`; a plan shows only what changes the tables.
        eprint!("{}", report.render_human(false));
        if !qos.enabled {
            writeln!(
                out,
                "note: `qos` is not TRUE in this configuration, so OpenSM programs"
            )?;
            writeln!(
                out,
                "      none of these tables; they are what `qos TRUE` would program."
            )?;
        }
        write!(out, "{}", describe(&port, &caps))?;
    }
    Ok(Outcome::Success)
}

/// The plan as a person reads it.
fn describe(port: &PortPlan, caps: &PortCaps) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Port class {}: VLCap {} VLs, OperVLs {}, VLArb caps low {} / high {}",
        port.class, caps.vl_cap, caps.oper_vls, caps.vlarb_low_cap, caps.vlarb_high_cap
    );
    match &port.sl2vl {
        Some(table) => {
            let sls: Vec<String> = (0..16).map(|sl| format!("{sl:>2}")).collect();
            let vls: Vec<String> = table
                .0
                .iter()
                .map(|vl| format!("{:>2}", vl.get()))
                .collect();
            let wire: Vec<String> = table.to_wire().iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(out, "\nSL2VL  (payload {})", wire.join(" "));
            let _ = writeln!(out, "  SL {}", sls.join(" "));
            let _ = writeln!(out, "  VL {}", vls.join(" "));
        }
        None => {
            let _ = writeln!(
                out,
                "\nSL2VL  not programmed: the port does not support SL mapping"
            );
        }
    }
    if port.vlarb.is_empty() {
        let _ = writeln!(
            out,
            "\nVLArb  not programmed: the port has a single VL or caps of 0"
        );
    }
    for set in &port.vlarb {
        let priority = set.block.priority();
        let entries: Vec<String> = set
            .programmed()
            .iter()
            .map(|e| format!("{}:{}", e.vl, e.weight))
            .collect();
        let _ = writeln!(
            out,
            "\nVLArb {priority} block {} ({} entries): {}",
            set.block.number(),
            set.len,
            entries.join(" ")
        );
    }
    let _ = writeln!(out, "\nVLHighLimit {}", port.vl_high_limit);
    out
}
