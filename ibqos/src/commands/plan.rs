//! `ibqos plan`: the tables programmed on one kind of port.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{Result, bail};
use ibqos_qos::{PortCaps, PortPlan, Sl2VlTable, VlArbEntry, VlArbSet, plan};
use ibqos_sm::config::congestion_options;
use serde_json::json;

use crate::cli::PlanArgs;
use crate::commands::check::qos_routing;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;
use congestion::CongestionPlan;

mod congestion;
mod setup;

pub fn run(args: &PlanArgs) -> Result<Outcome> {
    let path = args
        .opensm_conf
        .as_ref()
        .or(args.toml.as_ref())
        .expect("clap requires one");
    let mut loaded = load_config(path)?;
    let mut report = Report::new(args.diagnostics.strict);
    report.extend(qos_routing::diagnostics(&loaded));
    report.extend(std::mem::take(&mut loaded.diagnostics));
    if let Some(topology) = &args.topology {
        // The file's diagnostics are of its own engines; the fabric is routed as asked.
        if let Some(names) = &args.routing_engine {
            loaded.set_routing_engine(names);
        }
        return setup::run(args, path, &loaded.settings, topology, report);
    }
    // clap requires these without --topology.
    let (Some(class), Some(vls), Some(low_cap), Some(high_cap)) =
        (args.class, args.vls, args.low_cap, args.high_cap)
    else {
        bail!("--class, --vls, --low-cap and --high-cap are needed without --topology");
    };
    let caps = PortCaps {
        vl_cap: vls,
        oper_vls: args.oper_vls.unwrap_or(vls),
        vlarb_low_cap: low_cap,
        vlarb_high_cap: high_cap,
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
    let port = plan(qos, class, &caps)?;
    let congestion = CongestionPlan::new(&congestion_options(&loaded.settings), class);
    let mut out = std::io::stdout().lock();
    if args.json {
        let entries = |e: Vec<VlArbEntry>| -> Vec<_> {
            e.iter()
                .map(|e| json!({"vl": e.vl, "weight": e.weight}))
                .collect()
        };
        let mut object = json!({
            "class": class.name(),
            "qos_enabled": qos.enabled,
            "sl2vl": port.sl2vl.map(|t| t.0.map(|vl| vl.get())),
            "vlarb_low": entries(port.vlarb_low()),
            "vlarb_high": entries(port.vlarb_high()),
            "vl_high_limit": port.vl_high_limit,
            "diagnostics": report.to_json(),
        });
        if let Some(congestion) = &congestion {
            object["congestion"] = congestion.to_json();
        }
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
        if let Some(congestion) = &congestion {
            write!(out, "{}", congestion.describe())?;
        }
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
            let wire: Vec<String> = table.to_wire().iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(out, "\nSL2VL  (payload {})", wire.join(" "));
            out.push_str(&sl2vl_rows(table, "  "));
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
        out.push('\n');
        out.push_str(&vlarb_line(set));
    }
    let _ = writeln!(out, "\nVLHighLimit {}", port.vl_high_limit);
    out
}

/// The SL and VL rows of an SL-to-VL table, each line starting with `indent`.
fn sl2vl_rows(table: &Sl2VlTable, indent: &str) -> String {
    let sls: Vec<String> = (0..16).map(|sl| format!("{sl:>2}")).collect();
    let vls: Vec<String> = table
        .0
        .iter()
        .map(|vl| format!("{:>2}", vl.get()))
        .collect();
    format!(
        "{indent}SL {}\n{indent}VL {}\n",
        sls.join(" "),
        vls.join(" ")
    )
}

/// One VLArb block as programmed: its priority, number, length and `vl:weight` entries.
fn vlarb_line(set: &VlArbSet) -> String {
    let entries: Vec<String> = set
        .programmed()
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect();
    format!(
        "VLArb {} block {} ({} entries): {}\n",
        set.block.priority(),
        set.block.number(),
        set.len,
        entries.join(" ")
    )
}
