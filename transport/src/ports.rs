//! The host's RDMA ports as sysfs shows them (`/sys/class/infiniband/DEVICE/ports/N/`): which
//! are InfiniBand (`link_layer`; RoCE and iWARP ports are `Ethernet` and have no SMI, so no SM
//! can run on them), their port GUIDs (`gids/0`, whose low 64 bits are the port GUID), their
//! logical link state (`state`, e.g. `4: ACTIVE`) and rate (`rate`, e.g. `100 Gb/sec (4X EDR)`);
//! and the rule that picks the port an SM or a client opens.
//!
//! Files are read through umad's intercepted `open`/`read`/`opendir`, so ibsim's umad2sim shim
//! shows its simulated ports here as it does to libibumad. The root is injectable
//! ([`SysfsRoot`]) so that tests lay out a fake tree in a temporary directory.

use std::fmt;
use std::io;

use crate::TransportError;
use crate::umad::{list_dir, read_sysfs};

/// The directory that holds the kernel's `infiniband` and `infiniband_mad` classes: `/sys/class`
/// on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsRoot(String);

impl SysfsRoot {
    /// The environment variable that moves the root elsewhere, for tests that fake the tree:
    /// a directory with `infiniband/` and `infiniband_mad/` laid out as under `/sys/class`.
    pub const ENV: &'static str = "IBQOS_SYSFS_ROOT";

    /// `$IBQOS_SYSFS_ROOT` if set, else `/sys/class`.
    pub fn from_env() -> SysfsRoot {
        SysfsRoot(std::env::var(Self::ENV).unwrap_or_else(|_| "/sys/class".to_owned()))
    }

    /// The class directory of the RDMA devices: `/sys/class/infiniband`.
    pub fn infiniband(&self) -> String {
        format!("{}/infiniband", self.0)
    }

    /// The class directory of the umad devices: `/sys/class/infiniband_mad`.
    pub fn infiniband_mad(&self) -> String {
        format!("{}/infiniband_mad", self.0)
    }

    /// The directory of one port: `/sys/class/infiniband/DEVICE/ports/N`.
    fn port_dir(&self, device: &str, port: u8) -> String {
        format!("{}/{device}/ports/{port}", self.infiniband())
    }
}

/// Which port to open: `umad`, `umad:DEVICE`, `umad:DEVICE:PORT` or `umad:GUID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortSelector {
    /// The first InfiniBand port, devices and ports in order.
    First,
    /// The first InfiniBand port of the device, or its port `port`.
    Device { name: String, port: Option<u8> },
    /// The port with this port GUID, as OpenSM's `--guid` names it.
    Guid(u64),
}

impl fmt::Display for PortSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortSelector::First => f.write_str("an InfiniBand port"),
            PortSelector::Device { name, port: None } => write!(f, "an InfiniBand port of {name}"),
            PortSelector::Device {
                name,
                port: Some(port),
            } => write!(f, "{name} port {port}"),
            PortSelector::Guid(guid) => write!(f, "port {guid:#018x}"),
        }
    }
}

/// One port of one device, found in sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlace {
    pub device: String,
    pub port: u8,
}

/// A port's logical state, as its `state` file gives it (`4: ACTIVE`): the PortInfo.PortState
/// number and the kernel's name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub code: u8,
    pub name: String,
}

impl LinkState {
    /// Whether the physical link is up: INIT (the SM's to bring further), ARMED or ACTIVE.
    /// DOWN (1) means no link to manage yet.
    pub fn is_up(&self) -> bool {
        self.code >= 2
    }
}

/// What `ibqos ports` shows of an InfiniBand port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbPort {
    pub place: PortPlace,
    pub port_guid: u64,
    pub state: LinkState,
    /// The kernel's text, e.g. `100 Gb/sec (4X EDR)`.
    pub rate: String,
}

/// Whether the port a selector names is there to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// No such port yet (no driver, no device, no such GUID): why.
    Absent(String),
    /// The port is there but its link is down.
    LinkDown { port_guid: u64 },
    /// The port is there with its link up.
    Ready,
}

/// Every port of every RDMA device, devices and ports in order, with its link layer.
fn all_ports(root: &SysfsRoot) -> Result<Vec<(PortPlace, String)>, TransportError> {
    let class = root.infiniband();
    let mut devices = match list_dir(&class) {
        Ok(devices) => devices,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(TransportError::NoDevice {
                reason: format!("{class} does not exist (no RDMA driver loaded)"),
            });
        }
        Err(e) => return Err(TransportError::os(class, "opendir", e)),
    };
    devices.sort();
    let mut found = Vec::new();
    for device in devices {
        let ports_dir = format!("{class}/{device}/ports");
        let mut ports: Vec<u8> = list_dir(&ports_dir)
            .map_err(|e| TransportError::os(ports_dir.clone(), "opendir", e))?
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        ports.sort_unstable();
        for port in ports {
            let layer = link_layer(root, &device, port)?;
            let place = PortPlace {
                device: device.clone(),
                port,
            };
            found.push((place, layer));
        }
    }
    Ok(found)
}

/// A port's link layer; libibumad's rule: a port without the file (old kernels, umad2sim's fake
/// sysfs) is InfiniBand.
fn link_layer(root: &SysfsRoot, device: &str, port: u8) -> Result<String, TransportError> {
    let path = format!("{}/link_layer", root.port_dir(device, port));
    match read_sysfs(&path) {
        Ok(layer) => Ok(layer),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok("InfiniBand".into()),
        Err(e) => Err(TransportError::os(path, "read", e)),
    }
}

fn read_port_file(
    root: &SysfsRoot,
    place: &PortPlace,
    file: &str,
) -> Result<(String, String), TransportError> {
    let path = format!("{}/{file}", root.port_dir(&place.device, place.port));
    read_sysfs(&path)
        .map_err(|e| TransportError::os(path.clone(), "read", e))
        .map(|text| (path, text))
}

fn unexpected(path: String, text: &str, what: &str) -> TransportError {
    TransportError::Sysfs {
        path,
        reason: format!("`{text}` is not {what}"),
    }
}

/// The port GUID: the low 64 bits of GID 0 (`fe80:0000:0000:0000:0002:c903:00a1:b2c3`).
pub fn port_guid(root: &SysfsRoot, place: &PortPlace) -> Result<u64, TransportError> {
    let (path, text) = read_port_file(root, place, "gids/0")?;
    let groups: Vec<&str> = text.split(':').collect();
    (groups.len() == 8)
        .then(|| parse_guid(&groups[4..].join(":")))
        .flatten()
        .ok_or_else(|| unexpected(path, &text, "a GID"))
}

/// `xxxx:xxxx:xxxx:xxxx`, as sysfs writes GUIDs.
pub(crate) fn parse_guid(text: &str) -> Option<u64> {
    let groups: Vec<&str> = text.split(':').collect();
    if groups.len() != 4 || groups.iter().any(|g| g.len() != 4) {
        return None;
    }
    u64::from_str_radix(&groups.concat(), 16).ok()
}

/// The port's logical state from `state` (`4: ACTIVE`).
pub fn link_state(root: &SysfsRoot, place: &PortPlace) -> Result<LinkState, TransportError> {
    let (path, text) = read_port_file(root, place, "state")?;
    text.split_once(": ")
        .and_then(|(code, name)| {
            Some(LinkState {
                code: code.parse().ok()?,
                name: name.to_owned(),
            })
        })
        .ok_or_else(|| unexpected(path, &text, "a port state (`N: NAME`)"))
}

/// The host's InfiniBand ports, in order; Ethernet (RoCE, iWARP) ports are left out.
pub fn infiniband_ports(root: &SysfsRoot) -> Result<Vec<IbPort>, TransportError> {
    all_ports(root)?
        .into_iter()
        .filter(|(_, layer)| layer == "InfiniBand")
        .map(|(place, _)| {
            Ok(IbPort {
                port_guid: port_guid(root, &place)?,
                state: link_state(root, &place)?,
                rate: read_port_file(root, &place, "rate")?.1,
                place,
            })
        })
        .collect()
}

/// The InfiniBand port `selector` names; [`TransportError::NoDevice`] when there is none (yet).
pub fn find_port(root: &SysfsRoot, selector: &PortSelector) -> Result<PortPlace, TransportError> {
    let ports = all_ports(root)?;
    let absent = |reason: String| Err(TransportError::NoDevice { reason });
    let candidates: Vec<&(PortPlace, String)> = match selector {
        PortSelector::First => ports.iter().collect(),
        PortSelector::Device { name, port } => {
            let of_device: Vec<_> = ports.iter().filter(|(p, _)| &p.device == name).collect();
            if of_device.is_empty() {
                return absent(format!("no device `{name}`"));
            }
            match port {
                None => of_device,
                Some(port) => {
                    let one: Vec<_> = of_device
                        .into_iter()
                        .filter(|(p, _)| p.port == *port)
                        .collect();
                    if one.is_empty() {
                        return absent(format!("{name} has no port {port}"));
                    }
                    one
                }
            }
        }
        PortSelector::Guid(guid) => {
            for (place, layer) in &ports {
                if port_guid(root, place)? == *guid {
                    if layer != "InfiniBand" {
                        return absent(format!(
                            "port {guid:#018x} ({} port {}) is {layer}",
                            place.device, place.port
                        ));
                    }
                    return Ok(place.clone());
                }
            }
            return absent(format!("no port has GUID {guid:#018x}"));
        }
    };
    let mut skipped = Vec::new();
    for (place, layer) in candidates {
        if layer == "InfiniBand" {
            return Ok(place.clone());
        }
        skipped.push(format!("{} port {} is {layer}", place.device, place.port));
    }
    absent(if skipped.is_empty() {
        format!("{} is empty", root.infiniband())
    } else {
        format!("no InfiniBand port ({})", skipped.join(", "))
    })
}

/// Whether the port `selector` names is there and its link up: what an SM waits for before it
/// opens the port.
pub fn readiness(root: &SysfsRoot, selector: &PortSelector) -> Result<Readiness, TransportError> {
    let place = match find_port(root, selector) {
        Ok(place) => place,
        Err(TransportError::NoDevice { reason }) => return Ok(Readiness::Absent(reason)),
        Err(other) => return Err(other),
    };
    Ok(if link_state(root, &place)?.is_up() {
        Readiness::Ready
    } else {
        Readiness::LinkDown {
            port_guid: port_guid(root, &place)?,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn parses_sysfs_guids() {
        assert_eq!(
            parse_guid("0002:c903:00a1:b2c3"),
            Some(0x0002_c903_00a1_b2c3)
        );
        assert_eq!(parse_guid("0002:c903:00a1"), None);
        assert_eq!(parse_guid("0002:c903:00a1:b2c"), None);
        assert_eq!(parse_guid("zzzz:c903:00a1:b2c3"), None);
    }

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    }

    /// mlx5_0 port 1 is Ethernet (RoCE) with GUID ...01; mlx5_1 port 1 InfiniBand, GUID ...02.
    fn fake_tree(dir: &Path) -> SysfsRoot {
        for (device, layer, guid, state) in [
            ("mlx5_0", "Ethernet", "0001", "4: ACTIVE"),
            ("mlx5_1", "InfiniBand", "0002", "1: DOWN"),
        ] {
            let port = format!("infiniband/{device}/ports/1");
            write(dir, &format!("{port}/link_layer"), layer);
            write(
                dir,
                &format!("{port}/gids/0"),
                &format!("fe80:0000:0000:0000:0002:c903:0000:{guid}"),
            );
            write(dir, &format!("{port}/state"), state);
            write(dir, &format!("{port}/rate"), "100 Gb/sec (4X EDR)");
        }
        SysfsRoot(dir.to_str().unwrap().to_owned())
    }

    #[test]
    fn an_ethernet_port_is_never_chosen_nor_listed() {
        let dir = tempfile::tempdir().unwrap();
        let root = fake_tree(dir.path());
        let ib = PortPlace {
            device: "mlx5_1".into(),
            port: 1,
        };
        assert_eq!(find_port(&root, &PortSelector::First).unwrap(), ib);
        assert_eq!(
            find_port(&root, &PortSelector::Guid(0x0002_c903_0000_0002)).unwrap(),
            ib
        );
        let roce = find_port(&root, &PortSelector::Guid(0x0002_c903_0000_0001)).unwrap_err();
        assert!(roce.to_string().contains("is Ethernet"), "{roce}");
        let ports = infiniband_ports(&root).unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].place, ib);
        assert_eq!(ports[0].state.name, "DOWN");
    }

    #[test]
    fn readiness_follows_the_port_and_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = fake_tree(dir.path());
        let guid = 0x0002_c903_0000_0002;
        assert_eq!(
            readiness(&root, &PortSelector::Guid(guid)).unwrap(),
            Readiness::LinkDown { port_guid: guid }
        );
        write(dir.path(), "infiniband/mlx5_1/ports/1/state", "2: INIT");
        assert_eq!(
            readiness(&root, &PortSelector::Guid(guid)).unwrap(),
            Readiness::Ready
        );
        assert!(matches!(
            readiness(&root, &PortSelector::Guid(7)).unwrap(),
            Readiness::Absent(reason) if reason.contains("0x0000000000000007")
        ));
        write(dir.path(), "infiniband/mlx5_1/ports/1/state", "DOWN");
        let bad = readiness(&root, &PortSelector::Guid(guid)).unwrap_err();
        assert!(bad.to_string().contains("is not a port state"), "{bad}");
    }
}
