//! `ibqos ports`: the host's InfiniBand ports as sysfs shows them, as a table or (`--guids`) as
//! the port GUIDs the fan-out unit starts one SM on each of.

use std::io::Write as _;

use anyhow::Result;
use ibqos_transport::TransportError;
use ibqos_transport::ports::{SysfsRoot, infiniband_ports};

use crate::cli::PortsArgs;
use crate::commands::Outcome;

pub fn run(args: &PortsArgs) -> Result<Outcome> {
    let ports = match infiniband_ports(&SysfsRoot::from_env()) {
        Ok(ports) => ports,
        // No RDMA driver: no port, which is an answer (an empty list), not a failure.
        Err(TransportError::NoDevice { .. }) => Vec::new(),
        Err(other) => return Err(other.into()),
    };
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
