//! `ibqos ports`: the host's InfiniBand ports as sysfs shows them, as a table or (`--guids`) as
//! the port GUIDs the fan-out unit starts one SM on each of. No port is an answer, not a
//! failure: standard output stays empty (the fan-out unit reads it) and standard error says why.

use std::io::Write as _;

use anyhow::Result;
use ibqos_transport::TransportError;
use ibqos_transport::ports::{SysfsRoot, infiniband_ports};

use crate::cli::PortsArgs;
use crate::commands::Outcome;

pub fn run(args: &PortsArgs) -> Result<Outcome> {
    let (ports, why_none) = match infiniband_ports(&SysfsRoot::from_env()) {
        Ok(ports) => (ports, "no RDMA device has one".to_string()),
        Err(TransportError::NoDevice { reason }) => (Vec::new(), reason),
        Err(other) => return Err(other.into()),
    };
    if ports.is_empty() {
        eprintln!("no InfiniBand port: {why_none}");
        return Ok(Outcome::Success);
    }
    let mut out = std::io::stdout().lock();
    if args.guids {
        for port in &ports {
            writeln!(out, "{:#018x}", port.port_guid)?;
        }
        return Ok(Outcome::Success);
    }
    let ca_width = ports
        .iter()
        .map(|p| p.place.device.len())
        .chain([2])
        .max()
        .unwrap_or(2);
    writeln!(
        out,
        "{:ca_width$}  PORT  {:18}  {:12}  RATE",
        "CA", "GUID", "STATE"
    )?;
    for port in &ports {
        writeln!(
            out,
            "{:ca_width$}  {:4}  {:#018x}  {:12}  {}",
            port.place.device, port.place.port, port.port_guid, port.state.name, port.rate
        )?;
    }
    Ok(Outcome::Success)
}
