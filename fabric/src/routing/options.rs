//! What opensm.conf tells the routing engines beyond the fabric itself: the options and GUID
//! files of OpenSM's `osm_subn_opt_t` that `osm_ucast_*.c` read. The LMC is not here: the
//! topology's LIDs carry it.
//!
//! The GUID files and torus-2QoS.conf arrive parsed (reading and checking them is the configuration's job), so an
//! engine stays a pure function of its inputs.

use std::collections::BTreeSet;

use ibqos_opensm::torus_config::TorusConfig;
use ibqos_qos::VlCount;

/// A GUID file an engine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GuidFile {
    /// `root_guid_file`.
    Root,
    /// `cn_guid_file`.
    ComputeNodes,
    /// `io_guid_file`.
    IoNodes,
    /// `guid_routing_order_file`.
    RoutingOrder,
}

impl GuidFile {
    /// The opensm.conf option that names the file.
    pub fn option(self) -> &'static str {
        match self {
            GuidFile::Root => "root_guid_file",
            GuidFile::ComputeNodes => "cn_guid_file",
            GuidFile::IoNodes => "io_guid_file",
            GuidFile::RoutingOrder => "guid_routing_order_file",
        }
    }
}

/// `nue_max_num_vls`: the most VL layers Nue spreads its destinations over; 0 is as many as
/// the switch ports run, and OpenSM's default is 1. Nue keeps to one layer without `qos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NueMaxVls(pub u8);

impl Default for NueMaxVls {
    fn default() -> NueMaxVls {
        NueMaxVls(1)
    }
}

/// The options that feed the engines; [`Default`] is OpenSM's default for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoutingOptions {
    /// `root_guid_file`: the NodeGUIDs of the root switches (updn, ftree), in file order;
    /// `None` when unset, and the engine finds its roots itself.
    pub root_guids: Option<Vec<u64>>,
    /// `cn_guid_file`: the port GUIDs of the compute nodes (ftree); `None`: every CA is one.
    pub cn_guids: Option<Vec<u64>>,
    /// `io_guid_file`: the port GUIDs of the I/O nodes (ftree).
    pub io_guids: Option<Vec<u64>>,
    /// `max_reverse_hops`: how many times ftree may route to an I/O node down and up again.
    pub max_reverse_hops: u16,
    /// `guid_routing_order_file`: port GUIDs routed first, in this order (minhop, updn, dnup).
    pub guid_routing_order: Option<Vec<u64>>,
    /// `guid_routing_order_no_scatter`: the ports of the order file are not scattered.
    pub guid_routing_order_no_scatter: bool,
    /// `port_shifting`: successive LIDs start their port search further on.
    pub port_shifting: bool,
    /// `scatter_ports`: the seed of a random choice among tied ports; 0 is off.
    pub scatter_ports: u32,
    /// `connect_roots`: routes between roots too (updn, dnup, ftree), at the price of deadlock
    /// freedom.
    pub connect_roots: bool,
    /// `avoid_throttled_links`: links running below what both ends enable are not used.
    pub avoid_throttled_links: bool,
    /// `lash_start_vl`: the first SL (and VL) LASH hands out.
    pub lash_start_vl: u8,
    /// `do_mesh_analysis`: LASH merges parallel links and orders ports by the mesh's geometry.
    pub do_mesh_analysis: bool,
    /// `nue_max_num_vls`: the most VL layers Nue spreads its destinations over.
    pub nue_max_num_vls: NueMaxVls,
    /// `nue_include_switches`: Nue routes to switches on its layers too, deadlock-free, not
    /// afterwards on plain shortest paths.
    pub nue_include_switches: bool,
    /// The GUID files OpenSM did not read to their end: missing, unreadable, or stopped at a
    /// line that is not a GUID. Their field holds the GUIDs read before that (none for a file
    /// that would not open), and each engine reacts as OpenSM's does to a file that failed.
    pub failed_files: BTreeSet<GuidFile>,
    /// `qos`: whether the QoS manager programs SL2VL and VLArb tables. torus-2QoS writes its
    /// own through them, so it refuses to route without (OpenSM's `ERR 4E44`).
    pub qos: bool,
    /// The torus-2QoS.conf `torus_config` names, as read (torus-2QoS); `None` when it was not
    /// read, which torus-2QoS takes as a file it could not open.
    pub torus_config: Option<TorusConfig>,
    /// `max_op_vls` as a cap on the data VLs a port may run; `None` caps nothing below 15
    /// (OpenSM's default, and its 0).
    /// torus-2QoS counts its VLs from each port's VLCap under this cap, not from OperVLs.
    pub max_op_vls: Option<VlCount>,
}
