//! ibsim's socket protocol (ibsim 0.10, `ibsim/sim.h`): the datagrams a client and the simulator
//! exchange over abstract AF_UNIX sockets, as views in the style of the MAD layouts.
//!
//! Two datagrams exist. A [`SimCtl`] (80 bytes) goes to `NAME:ctl` and back: CONNECT and the
//! other [`CtlType`]s, each with a 64-byte data area whose layout depends on the type
//! ([`SimClientInfo`] for CONNECT, [`SimPort`], [`SimVendor`] and [`SimGid`] for the replies
//! to GET_PORT, GET_VENDOR and GET_GID). A [`SimRequest`] (288 bytes) carries one MAD between a
//! client and `NAME:out<client>`.
//!
//! ibsim sends its structs as they sit in memory. The control fields are in host byte order
//! (the [`HostU16`], [`HostU32`] and [`HostU64`] fields here); in a request, the queue pairs,
//! status and length are big-endian (`htonl`), and dlid and slid are a `u32` holding
//! `htons(lid)` (see [`SimRequest::dlid`]).

use crate::bits::FieldValue;

/// `SIM_MAGIC`: the first field of every control message.
pub const MAGIC: u32 = 0xdead_beef;

/// `IBSIM_MAX_CLIENTS`: ibsim binds exactly this many data sockets, `NAME:out0` to `out9`.
pub const MAX_CLIENTS: usize = 10;

/// The status of a request whose MAD the simulator could not deliver (ETIMEDOUT): ibsim sends
/// the request back to its sender with it.
pub const DROPPED_STATUS: u32 = 110;

/// `sizeof(struct sim_ctl)`: a [`SimCtl`].
pub const CTL_LEN: usize = 80;

/// `sizeof(struct sim_request)`: a [`SimRequest`].
pub const REQUEST_LEN: usize = 288;

/// The size of a MAD inside a [`SimRequest`].
pub const MAD_LEN: usize = 256;

/// The most bytes of a node's id that CONNECT carries (`char nodeid[32]`, NUL-terminated).
pub const NODE_ID_MAX: usize = 31;

macro_rules! host_order {
    ($( $(#[$meta:meta])* $name:ident($int:ty); )+) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub $int);

        impl FieldValue for $name {
            const BITS: usize = <$int>::BITS as usize;
            fn from_bits(bits: u128) -> Self {
                // The layout reads the bytes big-endian; the sender wrote them in its own order.
                Self(<$int>::from_ne_bytes((bits as $int).to_be_bytes()))
            }
            fn to_bits(self) -> u128 {
                <$int>::from_be_bytes(self.0.to_ne_bytes()).into()
            }
        }
    )+};
}

host_order! {
    /// A `uint16_t` in host byte order.
    HostU16(u16);
    /// A `uint32_t` in host byte order.
    HostU32(u32);
    /// A `uint64_t` in host byte order.
    HostU64(u64);
}

open_enum! {
    /// `enum SIM_CTL_TYPES`: what a control message asks. An answer that fails comes back
    /// with its type set to `Error` and the rest as it was sent.
    pub enum CtlType(u32) {
        /// The simulator's answer to a request it refused.
        Error = 0,
        /// Attach as a new client ([`SimClientInfo`]).
        Connect = 1,
        /// Give the client's slot back.
        Disconnect = 2,
        /// The LID and PortState of the client's port ([`SimPort`]).
        GetPort = 3,
        /// The node's vendor, device and revision ([`SimVendor`]).
        GetVendor = 4,
        /// The client's port GID ([`SimGid`]).
        GetGid = 5,
        /// The node's GUID, a [`HostU64`].
        GetGuid = 6,
        /// The node's NodeInfo, in wire order.
        GetNodeInfo = 7,
        /// A PortInfo in wire order: of the port data byte 0 names, or of the client's port.
        GetPortInfo = 8,
        /// The client is the node's SM from now on (data: a non-zero [`HostU32`]), or no longer.
        SetIsSm = 9,
        /// The first 32 P_Keys of the client's port, in wire order.
        GetPkeys = 10,
    }
}

layout! {
    /// `struct sim_ctl`: a control message to `NAME:ctl` and its answer.
    pub struct SimCtl[CTL_LEN];
    {
        /// [`MAGIC`].
        magic / set_magic: HostU32 = 0, 32;
        /// The client's number (in CONNECT, ignored).
        client_id / set_client_id: HostU32 = 32, 32;
        /// The [`CtlType`], raw: see [`SimCtl::ctl_type`].
        raw_type / set_raw_type: HostU32 = 64, 32;
        /// How many bytes of `data` the request uses.
        len / set_len: HostU32 = 96, 32;
        /// The request's data and, in the answer, the reply's.
        data / data_mut: bytes = 128, 512;
    }
}

impl<T: AsRef<[u8]>> SimCtl<T> {
    /// What the message asks, or `Error` in a refused answer.
    pub fn ctl_type(&self) -> CtlType {
        CtlType::from(self.raw_type().0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SimCtl<T> {
    /// Writes the [`CtlType`].
    pub fn set_ctl_type(&mut self, ctl_type: CtlType) {
        self.set_raw_type(HostU32(ctl_type.into()));
    }
}

layout! {
    /// `struct sim_request`: one MAD to or from a client, with the addresses ibsim routes it
    /// by.
    pub struct SimRequest[REQUEST_LEN];
    {
        /// The destination LID, raw: see [`SimRequest::dlid`].
        raw_dlid / set_raw_dlid: HostU32 = 0, 32;
        /// The source LID, raw: see [`SimRequest::slid`].
        raw_slid / set_raw_slid: HostU32 = 32, 32;
        /// Destination queue pair.
        dqp / set_dqp: u32 = 64, 32;
        /// Source queue pair.
        sqp / set_sqp: u32 = 96, 32;
        /// 0, or [`DROPPED_STATUS`] on a request that comes back undelivered.
        status / set_status: u32 = 128, 32;
        /// The MAD's length: [`MAD_LEN`].
        length / set_length: u64 = 192, 64;
        /// The MAD.
        mad / mad_mut: bytes = 256, 2048;
    }
}

/// A LID as ibsim keeps it in a `u32` field: `htons(lid)`.
fn lid_field(lid: u16) -> HostU32 {
    HostU32(u32::from(lid.to_be()))
}

/// The LID in a `u32` field holding `htons(lid)`: its low 16 bits.
fn field_lid(field: HostU32) -> u16 {
    u16::from_be(field.0 as u16)
}

impl<T: AsRef<[u8]>> SimRequest<T> {
    /// The destination LID; 0xFFFF (the permissive LID) for a directed-route SMP.
    pub fn dlid(&self) -> u16 {
        field_lid(self.raw_dlid())
    }

    /// The source LID; 0 in a request from a client, which ibsim fills in with the LID of the
    /// client's port.
    pub fn slid(&self) -> u16 {
        field_lid(self.raw_slid())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SimRequest<T> {
    /// Writes the destination LID.
    pub fn set_dlid(&mut self, lid: u16) {
        self.set_raw_dlid(lid_field(lid));
    }

    /// Writes the source LID.
    pub fn set_slid(&mut self, lid: u16) {
        self.set_raw_slid(lid_field(lid));
    }

    /// Turns a request around, as the answer to it travels: dlid and slid swap, and so do
    /// dqp and sqp.
    pub fn swap_addresses(&mut self) {
        let (dlid, slid) = (self.raw_dlid(), self.raw_slid());
        self.set_raw_dlid(slid);
        self.set_raw_slid(dlid);
        let (dqp, sqp) = (self.dqp(), self.sqp());
        self.set_dqp(sqp);
        self.set_sqp(dqp);
    }
}

layout! {
    /// `struct sim_client_info`: the data of CONNECT, and of its answer (then `id` is the
    /// client's number and `nodeid` the node it is attached at).
    pub struct SimClientInfo[44];
    {
        /// The client's id (its pid): its data socket is `NAME:in<id>`.
        id / set_id: HostU32 = 0, 32;
        /// The queue pair the client takes (0: SMPs, and as SM the GMPs of QP1).
        qp / set_qp: HostU32 = 32, 32;
        /// Non-zero: the client is its node's SM.
        issm / set_issm: HostU32 = 64, 32;
        /// The node to attach at (its id or NodeDescription), NUL-terminated; empty for the
        /// simulator's default.
        raw_node_id / raw_node_id_mut: bytes = 96, 256;
    }
}

impl<T: AsRef<[u8]>> SimClientInfo<T> {
    /// The node id, up to its NUL.
    pub fn node_id(&self) -> String {
        let bytes = self.raw_node_id();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SimClientInfo<T> {
    /// Writes the node id, cut to [`NODE_ID_MAX`] bytes and NUL-terminated.
    pub fn set_node_id(&mut self, node: &str) {
        let field = self.raw_node_id_mut();
        field.fill(0);
        let len = node.len().min(NODE_ID_MAX);
        field[..len].copy_from_slice(&node.as_bytes()[..len]);
    }
}

layout! {
    /// `struct sim_port`: the reply to GET_PORT.
    pub struct SimPort[3];
    {
        /// The port's LID.
        lid / set_lid: HostU16 = 0, 16;
        /// Its PortState.
        state / set_state: u8 = 16, 8;
    }
}

layout! {
    /// `struct sim_vendor`: the reply to GET_VENDOR (ibsim reports firmware version 1).
    pub struct SimVendor[24];
    {
        /// NodeInfo.VendorID.
        vendor_id / set_vendor_id: HostU32 = 0, 32;
        /// NodeInfo.DeviceID.
        vendor_part_id / set_vendor_part_id: HostU32 = 32, 32;
        /// NodeInfo.Revision.
        hw_ver / set_hw_ver: HostU32 = 64, 32;
        /// The firmware version, aligned to byte 16.
        fw_ver / set_fw_ver: HostU64 = 128, 64;
    }
}

layout! {
    /// The reply to GET_GID: the port's GID prefix in wire order, then the NodeGUID as ibsim
    /// copies it from its host-order store.
    pub struct SimGid[16];
    {
        /// PortInfo.GidPrefix.
        gid_prefix / set_gid_prefix: u64 = 0, 64;
        /// The NodeGUID.
        guid / set_guid: HostU64 = 64, 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_message_is_in_host_order() {
        let mut bytes = [0u8; 80];
        let mut ctl = SimCtl::new_unchecked(&mut bytes[..]);
        ctl.set_magic(HostU32(MAGIC));
        ctl.set_client_id(HostU32(3));
        ctl.set_ctl_type(CtlType::SetIsSm);
        ctl.set_len(HostU32(4));
        ctl.data_mut()[..4].copy_from_slice(&1u32.to_ne_bytes());
        assert_eq!(bytes[0..4], MAGIC.to_ne_bytes());
        assert_eq!(bytes[4..8], 3u32.to_ne_bytes());
        assert_eq!(bytes[8..12], 9u32.to_ne_bytes());
        assert_eq!(bytes[12..16], 4u32.to_ne_bytes());
        assert_eq!(bytes[16..20], 1u32.to_ne_bytes());
        let ctl = SimCtl::new_checked(&bytes[..]).unwrap();
        assert_eq!(ctl.magic(), HostU32(MAGIC));
        assert_eq!(ctl.ctl_type(), CtlType::SetIsSm);
        assert_eq!(CtlType::from(42), CtlType::Unknown(42));
    }

    #[test]
    fn a_request_holds_its_lids_as_htons_and_the_rest_big_endian() {
        let mut bytes = [0u8; 288];
        let mut req = SimRequest::new_unchecked(&mut bytes[..]);
        req.set_dlid(0x1234);
        req.set_slid(0xffff);
        req.set_dqp(1);
        req.set_status(DROPPED_STATUS);
        req.set_length(MAD_LEN as u64);
        req.mad_mut()[0] = 0x01;
        assert_eq!(bytes[0..4], u32::from(0x1234u16.to_be()).to_ne_bytes());
        assert_eq!(bytes[4..8], u32::from(0xffffu16).to_ne_bytes());
        assert_eq!(bytes[8..12], [0, 0, 0, 1]);
        assert_eq!(bytes[16..20], [0, 0, 0, 110]);
        assert_eq!(bytes[24..32], 256u64.to_be_bytes());
        assert_eq!(bytes[32], 0x01);
        let mut req = SimRequest::new_checked(&mut bytes[..]).unwrap();
        assert_eq!((req.dlid(), req.slid()), (0x1234, 0xffff));
        req.swap_addresses();
        assert_eq!((req.dlid(), req.slid()), (0xffff, 0x1234));
        assert_eq!((req.dqp(), req.sqp()), (0, 1));
    }

    #[test]
    fn a_node_id_is_cut_to_31_bytes_and_read_up_to_its_nul() {
        let mut bytes = [0xa5u8; 44];
        let mut info = SimClientInfo::new_unchecked(&mut bytes[..]);
        info.set_node_id("H1");
        assert_eq!(info.node_id(), "H1");
        assert_eq!(info.raw_node_id()[2..], [0; 30]);
        info.set_node_id(&"x".repeat(40));
        assert_eq!(info.node_id(), "x".repeat(NODE_ID_MAX));
        assert_eq!(
            SimClientInfo::new_checked(&[0u8; 43][..]),
            Err(crate::Error::Truncated {
                len: 43,
                needed: 44
            })
        );
    }
}
