//! M_Key management (IBA 14.2.4) as OpenSM 3.3.23 does it, plus per-port keys.
//!
//! The SM programs every CA and router port and every switch's port 0 (the ports whose key
//! governs the SMPs their node answers) with the key, MKeyProtectBits and MKeyLeasePeriod the
//! configuration gives (`osm_link_mgr.c:225-265`), and puts in every SMP it sends the key the
//! target port holds, as far as it knows it (`req_determine_mkey`, `osm_req.c:65-150`):
//! - the port an SMP reaches is the one its directed route reached when a NodeInfo answered
//!   there (the SM's own port for the empty route), else the one the neighbours known from
//!   earlier runs lead to hop by hop (OpenSM's persistent `neighbors` file), or the one holding
//!   its destination LID;
//! - that port's key is what the guid2mkey cache holds for it: the last key the SM read from it
//!   or programmed into it (`osm_port.c:779-790`: a PortInfo answer updates the cache when its
//!   M_Key is non-zero or its protection off, since a hidden key reads 0);
//! - otherwise the key the SM would program there; and for a port the SM cannot name, `m_key`.
//!
//! Without `m_key_lookup`, every SMP carries `m_key`, as in OpenSM.
//!
//! Beyond OpenSM (whose upstream has one key for the whole subnet): with a per-port secret,
//! each port's key is derived from the secret and its port GUID, so a key read off one port
//! (from its memory, a trace, a stolen cache line) opens that port alone.
//!
//! A port whose key the SM lost cannot be reprogrammed until its lease runs out: then its
//! protection lapses, a Get reads its key, the cache learns it, and the next Set carries it.
//!
//! Keys are secrets: nothing here logs one, and the cache text is handed to the caller only
//! to be written to its file.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use hmac::{Hmac, KeyInit, Mac};
use ibqos_exchange::OutgoingMad;
use ibqos_mad::{Attribute, PortInfoRepr};
use ibqos_mad::{AttributeId, Guid, Method, NodeType, PortInfoModifier, Routing, Smp, SmpRepr};
use rustc_hash::FxHashMap;
use sha2::Sha256;
use thiserror::Error;

use crate::cache::parse_hex;

/// The M_Key options: OpenSM's four, and ibqos.toml's per-port secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct MKeyConfig {
    /// `m_key`: the subnet's key; 0 (OpenSM's default) protects nothing.
    pub key: u64,
    /// `m_key_protection_level`, 0-3: MKeyProtectBits.
    pub protect_bits: u8,
    /// `m_key_lease_period`, seconds; 0 is no lease (a lost key is lost for good).
    pub lease_period: u16,
    /// `m_key_lookup`: find each port's key; without it every SMP carries `key`.
    pub lookup: bool,
    /// ibqos.toml's `m_key_per_port_secret`: each port's key derived from it.
    pub per_port: Option<PerPortKeys>,
}

/// No key in `Debug`, not even the subnet's.
impl fmt::Debug for MKeyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MKeyConfig")
            .field("key", &(self.key != 0).then_some("<hidden>"))
            .field("protect_bits", &self.protect_bits)
            .field("lease_period", &self.lease_period)
            .field("lookup", &self.lookup)
            .field("per_port", &self.per_port.is_some())
            .finish()
    }
}

/// The secret per-port keys are derived from.
#[derive(Clone, PartialEq, Eq)]
pub struct PerPortKeys {
    secret: Vec<u8>,
}

impl fmt::Debug for PerPortKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PerPortKeys(<hidden>)")
    }
}

impl PerPortKeys {
    pub fn new(secret: &[u8]) -> PerPortKeys {
        PerPortKeys {
            secret: secret.to_vec(),
        }
    }

    /// The key of the port `port_guid`: the first 8 bytes of HMAC-SHA256(secret, GUID as 8
    /// big-endian bytes), never 0 (0 is "no key").
    ///
    /// Why HMAC-SHA256: it is a pseudo-random function keyed by the secret (RFC 2104), so
    /// knowing any number of (GUID, key) pairs tells nothing about the key of another GUID
    /// nor about the secret; truncating its output keeps that for 64 bits (RFC 2104 section 5,
    /// NIST SP 800-107). SipHash is also a keyed PRF but takes only a 128-bit key, and a plain
    /// hash of secret and GUID is open to length extension; HMAC takes a secret of any length
    /// and the RustCrypto `hmac` and `sha2` crates are audited and maintained.
    pub fn key_of(&self, port_guid: u64) -> u64 {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.secret) else {
            unreachable!("HMAC takes a key of any length")
        };
        mac.update(&port_guid.to_be_bytes());
        let digest = mac.finalize().into_bytes();
        let mut first = [0; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first).max(1)
    }
}

impl MKeyConfig {
    /// Whether any M_Key option is set. With none, the SM leaves the ports' M_Key fields as
    /// they are, where OpenSM writes its zeros: they protect nothing then, and a port's power-on
    /// lease (ibsim's ports report one and do not store a new one) would show as a difference
    /// in every diff sweep and dry run.
    pub fn manages(&self) -> bool {
        self.key != 0 || self.per_port.is_some() || self.protect_bits != 0 || self.lease_period != 0
    }

    /// The key the SM programs into the port `port_guid`: its own with per-port keys, else
    /// `m_key`.
    pub fn wanted(&self, port_guid: u64) -> u64 {
        match &self.per_port {
            Some(keys) => keys.key_of(port_guid),
            None => self.key,
        }
    }
}

/// A PortInfo whose `Debug` (in a log line about the request that carried it) shows no key.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyHidden(pub Box<PortInfoRepr>);

impl fmt::Debug for KeyHidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = PortInfoRepr {
            m_key: 0,
            ..*self.0
        };
        write!(f, "KeyHidden(M_Key {}, {hidden:?})", shown(self.0.m_key))
    }
}

/// The port that answers for an SMP arriving at a node: a CA or router port itself, a switch's
/// port 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    port_guid: u64,
    switch: bool,
}

/// What the SM knows of the keys the fabric's ports hold, and where they are.
#[derive(Clone)]
pub struct KeyRing {
    config: MKeyConfig,
    /// guid2mkey: the key each port holds, by port GUID, as last read or programmed.
    held: BTreeMap<u64, u64>,
    /// Directed routes (the egress ports from the SM's node) and the port each reached in
    /// this run. Looked up for every SMP, so hashed with FxHash rather than SipHash.
    routes: FxHashMap<Vec<u8>, Target>,
    /// Links as (port GUID, port number) pairs, both ways: a switch's ports all have its port
    /// GUID. Kept across runs, to name a route's target before it answers.
    neighbors: Neighbors,
    own_guid: u64,
    /// LIDs and the port holding each, from the last sweep.
    lids: BTreeMap<u16, u64>,
    /// The cache changed since it was last handed out.
    changed: bool,
}

/// How many keys, never which.
impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("config", &self.config)
            .field("held", &self.held.len())
            .field("routes", &self.routes.len())
            .finish()
    }
}

/// The M_Key that hides nothing when shown: the summary and the logs say whether a port has a
/// key, never which.
pub fn shown(m_key: u64) -> &'static str {
    if m_key == 0 { "none" } else { "<hidden>" }
}

impl KeyRing {
    /// The key ring of the SM on port `own_guid`, with the guid2mkey cache and the neighbours
    /// of an earlier run.
    pub fn new(
        config: MKeyConfig,
        held: BTreeMap<u64, u64>,
        neighbors: Neighbors,
        own_guid: Guid,
    ) -> KeyRing {
        let own = Target {
            port_guid: own_guid.0,
            switch: false,
        };
        KeyRing {
            config,
            held,
            routes: FxHashMap::from_iter([(Vec::new(), own)]),
            neighbors,
            own_guid: own_guid.0,
            lids: BTreeMap::new(),
            changed: false,
        }
    }

    /// New options (a reload): what was learned of the fabric is kept.
    pub fn set_config(&mut self, config: MKeyConfig) {
        self.config = config;
    }

    pub fn config(&self) -> &MKeyConfig {
        &self.config
    }

    /// The key an SMP to the port `port_guid()` names (`None`: a port the SM cannot name)
    /// carries. With one key for every port, the port is not looked for.
    fn key_for(&self, port_guid: impl FnOnce() -> Option<u64>) -> u64 {
        if !self.config.lookup && self.config.per_port.is_none() {
            return self.config.key;
        }
        match port_guid() {
            Some(guid) => self
                .held
                .get(&guid)
                .copied()
                .unwrap_or_else(|| self.config.wanted(guid)),
            None => self.config.key,
        }
    }

    /// The port a request goes to, if the SM can name it.
    fn target(&self, smp: &SmpRepr, dlid: Option<u16>) -> Option<Target> {
        match (smp.routing, dlid) {
            (Routing::Directed(path), _) => {
                let route = path.egress_ports();
                self.routes.get(route).copied().or_else(|| {
                    let port_guid = self.walk(route)?;
                    Some(Target {
                        port_guid,
                        switch: false,
                    })
                })
            }
            (Routing::Lid, Some(lid)) => {
                let port_guid = *self.lids.get(&lid)?;
                Some(Target {
                    port_guid,
                    switch: false,
                })
            }
            (Routing::Lid, None) => None,
        }
    }

    /// The port GUID `route` leads to through the known neighbours.
    fn walk(&self, route: &[u8]) -> Option<u64> {
        route.iter().try_fold(self.own_guid, |guid, &egress| {
            self.neighbors.get(&(guid, egress)).map(|&(peer, _)| peer)
        })
    }

    /// Puts the target's key in an outgoing SMP request (Get, Set, TrapRepress) already in its
    /// wire form; anything else goes as it is.
    pub fn stamp(&self, outgoing: &mut OutgoingMad) {
        let Ok(smp) = SmpRepr::parse_bytes(&outgoing.mad) else {
            return;
        };
        let dlid = match outgoing.address {
            ibqos_exchange::Address::Lid(lid) => Some(lid),
            _ => None,
        };
        if let Some(key) = self.key_of(&smp, dlid) {
            Smp::new_unchecked(&mut outgoing.mad[..]).set_m_key(key);
        }
    }

    /// [`stamp`](Self::stamp) for an SMP not yet emitted (`dlid` for a LID-routed one), which
    /// spares parsing it back from its bytes.
    pub fn stamp_smp(&self, smp: &mut SmpRepr, dlid: Option<u16>) {
        if let Some(key) = self.key_of(smp, dlid) {
            smp.m_key = key;
        }
    }

    /// The key an outgoing request carries; `None` for what is not a request.
    fn key_of(&self, smp: &SmpRepr, dlid: Option<u16>) -> Option<u64> {
        matches!(smp.method, Method::Get | Method::Set | Method::TrapRepress)
            .then(|| self.key_for(|| self.target(smp, dlid).map(|t| t.port_guid)))
    }

    /// A response from the fabric: a NodeInfo names the port its route reaches; a PortInfo of a
    /// port whose key governs its node tells the key it holds, unless hidden.
    pub fn observe(&mut self, response: &SmpRepr) {
        let Routing::Directed(path) = response.routing else {
            return;
        };
        // Only these two tell anything: the rest (most answers) are not parsed at all.
        if !matches!(
            response.attribute_id,
            AttributeId::NodeInfo | AttributeId::PortInfo
        ) {
            return;
        }
        let route = path.egress_ports();
        match Attribute::parse(response.attribute_id, &response.data) {
            Ok(Attribute::NodeInfo(info)) => {
                let target = Target {
                    port_guid: info.port_guid,
                    switch: info.node_type == NodeType::Switch,
                };
                self.routes.insert(route.to_vec(), target);
                if let Some((&egress, before)) = route.split_last()
                    && let Some(from) = self.routes.get(before)
                {
                    let near = (from.port_guid, egress);
                    let far = (info.port_guid, info.local_port_num);
                    for (a, b) in [(near, far), (far, near)] {
                        if self.neighbors.insert(a, b) != Some(b) {
                            self.changed = true;
                        }
                    }
                }
            }
            Ok(Attribute::PortInfo(info)) if response.attribute_id == AttributeId::PortInfo => {
                let Some(target) = self.routes.get(route).copied() else {
                    return;
                };
                let port = PortInfoModifier::try_from(response.attribute_modifier);
                if !target.switch || port.is_ok_and(|m| m.port == 0) {
                    self.learn(target.port_guid, &info);
                }
            }
            _ => {}
        }
    }

    /// The key a PortInfo shows, kept when it can be trusted: non-zero, or with protection off
    /// (a hidden key reads 0).
    fn learn(&mut self, port_guid: u64, info: &PortInfoRepr) {
        if info.m_key == 0 && info.m_key_protect_bits != 0 {
            return;
        }
        if self.held.insert(port_guid, info.m_key) != Some(info.m_key) {
            self.changed = true;
        }
    }

    /// The LIDs the last sweep gave, by port GUID: where LID-routed SMPs (TrapRepress) go.
    pub fn set_lids(&mut self, ports: impl IntoIterator<Item = (u64, u16)>) {
        self.lids = ports.into_iter().map(|(guid, lid)| (lid, guid)).collect();
    }

    /// The guid2mkey and neighbors files' text, when either changed since the last call.
    pub fn take_changed(&mut self) -> Option<(String, String)> {
        std::mem::take(&mut self.changed).then(|| {
            (
                write_guid2mkey(&self.held),
                write_neighbors(&self.neighbors),
            )
        })
    }

    /// The keys held, by port GUID.
    pub fn held(&self) -> &BTreeMap<u64, u64> {
        &self.held
    }
}

/// A line of a cache file (guid2mkey, neighbors) that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file} line {line}: {problem}")]
pub struct CacheLineError {
    pub file: &'static str,
    /// From 1.
    pub line: usize,
    pub problem: &'static str,
}

/// Links between ports, as (port GUID, port number) to (port GUID, port number).
pub type Neighbors = BTreeMap<(u64, u8), (u64, u8)>;

/// The lines of a cache file that hold something: numbered from 1, trimmed, without blank
/// lines and comments (OpenSM's own files have blank lines between entries).
fn entries(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}

/// The two fields of a cache line, or what is wrong with it.
fn two_fields(line: &str) -> Result<(&str, &str), &'static str> {
    let mut fields = line.split_whitespace();
    match (fields.next(), fields.next(), fields.next()) {
        (Some(a), Some(b), None) => Ok((a, b)),
        (_, _, Some(_)) => Err("more than two fields"),
        // Only a non-blank line reaches here, so its first field is there.
        _ => Err("one field where two are needed"),
    }
}

/// Reads OpenSM's `neighbors` file: `0x<port GUID>:<port> 0x<port GUID>:<port>` per line.
/// Damaged lines are skipped and reported, like guid2mkey's.
pub fn read_neighbors(text: &str) -> (Neighbors, Vec<CacheLineError>) {
    let end = |field: &str| {
        let (guid, port) = field.split_once(':')?;
        Some((parse_hex(guid)?, port.parse::<u8>().ok()?))
    };
    let mut neighbors = Neighbors::new();
    let mut problems = Vec::new();
    for (line, text) in entries(text) {
        let parsed = two_fields(text).and_then(|(a, b)| match (end(a), end(b)) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err("a field is not `0x<port GUID>:<port number>`"),
        });
        match parsed {
            Ok((a, b)) => {
                neighbors.insert(a, b);
            }
            Err(problem) => problems.push(CacheLineError {
                file: "neighbors",
                line,
                problem,
            }),
        }
    }
    (neighbors, problems)
}

/// The neighbors file, as OpenSM writes it.
pub fn write_neighbors(neighbors: &Neighbors) -> String {
    let mut out = String::new();
    for ((a, p), (b, q)) in neighbors {
        let _ = writeln!(out, "{}:{p} {}:{q}", Guid(*a), Guid(*b));
    }
    out
}

/// Reads a guid2mkey file (OpenSM's `$OSM_CACHE_DIR/guid2mkey`: `0x<port GUID> 0x<M_Key>` per
/// line; OpenSM's own files have blank lines between entries). A line that does not parse is
/// skipped and reported: a damaged cache costs the keys it lost, which their leases give back.
/// The error says which line and what is wrong with it, never the key.
pub fn read_guid2mkey(text: &str) -> (BTreeMap<u64, u64>, Vec<CacheLineError>) {
    let mut keys = BTreeMap::new();
    let mut problems = Vec::new();
    for (line, text) in entries(text) {
        let parsed =
            two_fields(text).and_then(|(guid, key)| match (parse_hex(guid), parse_hex(key)) {
                (Some(guid), Some(key)) => Ok((guid, key)),
                (None, _) => Err("the port GUID is not a 0x-prefixed 64-bit hex number"),
                (_, None) => Err("the M_Key is not a 0x-prefixed 64-bit hex number"),
            });
        match parsed {
            Ok((guid, key)) => {
                keys.insert(guid, key);
            }
            Err(problem) => problems.push(CacheLineError {
                file: "guid2mkey",
                line,
                problem,
            }),
        }
    }
    (keys, problems)
}

/// The guid2mkey file for these keys, as OpenSM writes it (`0x%016` both fields).
pub fn write_guid2mkey(keys: &BTreeMap<u64, u64>) -> String {
    let mut out = String::new();
    for (guid, key) in keys {
        let _ = writeln!(out, "{} 0x{key:016x}", Guid(*guid));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_exchange::Transmit;
    use ibqos_mad::{DrPath, NodeInfo, NodeInfoRepr, PortInfo};

    const KEY: u64 = 0x1111_2222_3333_4444;

    fn config(lookup: bool) -> MKeyConfig {
        MKeyConfig {
            key: KEY,
            protect_bits: 2,
            lease_period: 60,
            lookup,
            per_port: None,
        }
    }

    fn outgoing(smp: SmpRepr, dlid: Option<u16>) -> OutgoingMad {
        OutgoingMad::from(&Transmit { mad: smp, dlid })
    }

    /// The key `smp` goes out with, stamped in its wire form and before it is emitted: the
    /// two ways must agree.
    fn stamped(ring: &KeyRing, smp: SmpRepr, dlid: Option<u16>) -> u64 {
        let mut mad = outgoing(smp, dlid);
        ring.stamp(&mut mad);
        let on_the_wire = SmpRepr::parse_bytes(&mad.mad).unwrap().m_key;
        let mut unsent = smp;
        ring.stamp_smp(&mut unsent, dlid);
        assert_eq!(unsent.m_key, on_the_wire, "stamp and stamp_smp differ");
        on_the_wire
    }

    fn dr(path: &[u8]) -> Routing {
        Routing::Directed(DrPath::request(path).unwrap())
    }

    fn answer(attribute: AttributeId, modifier: u32, path: &[u8], data: [u8; 64]) -> SmpRepr {
        SmpRepr {
            method: Method::GetResp,
            data,
            ..SmpRepr::get(attribute, modifier, 1, dr(path))
        }
    }

    fn node_info(path: &[u8], port_guid: u64, node_type: NodeType) -> SmpRepr {
        let blank = NodeInfoRepr::parse(&NodeInfo::new_unchecked([0u8; 64])).unwrap();
        let info = NodeInfoRepr {
            port_guid,
            node_type,
            ..blank
        };
        answer(
            AttributeId::NodeInfo,
            0,
            path,
            Attribute::NodeInfo(info).to_data(),
        )
    }

    fn port_info(path: &[u8], port: u8, m_key: u64, protect: u8) -> SmpRepr {
        let blank = PortInfoRepr::parse(&PortInfo::new_unchecked([0u8; 64])).unwrap();
        let info = PortInfoRepr {
            m_key,
            m_key_protect_bits: protect,
            ..blank
        };
        let modifier = u32::from(PortInfoModifier {
            port,
            extended_speeds: false,
        });
        answer(
            AttributeId::PortInfo,
            modifier,
            path,
            Attribute::PortInfo(info).to_data(),
        )
    }

    #[test]
    fn each_smp_carries_the_key_its_target_holds() {
        let mut ring = KeyRing::new(
            config(true),
            BTreeMap::from([(0xa, 0xaaaa)]),
            Neighbors::new(),
            Guid(0xa),
        );
        let get = |path: &[u8]| SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(path));
        // The SM's own port: from the cache; a route not yet answered: `m_key`.
        assert_eq!(stamped(&ring, get(&[]), None), 0xaaaa);
        assert_eq!(stamped(&ring, get(&[1]), None), KEY);
        // A switch answers at [1]: its port 0 holds another key, read from PortInfo port 0; an
        // external port's PortInfo says nothing about the key that governs the switch.
        ring.observe(&node_info(&[1], 0xb, NodeType::Switch));
        ring.observe(&port_info(&[1], 3, 0x3333, 0));
        assert_eq!(stamped(&ring, get(&[1]), None), KEY);
        ring.observe(&port_info(&[1], 0, 0xbbbb, 2));
        assert_eq!(stamped(&ring, get(&[1]), None), 0xbbbb);
        // A hidden key (0 under protection) is not learned; 0 without protection is.
        ring.observe(&node_info(&[1, 2], 0xc, NodeType::Ca));
        ring.observe(&port_info(&[1, 2], 1, 0, 1));
        assert_eq!(stamped(&ring, get(&[1, 2]), None), KEY);
        ring.observe(&port_info(&[1, 2], 1, 0, 0));
        assert_eq!(stamped(&ring, get(&[1, 2]), None), 0);
        // LID-routed: by the LIDs the last sweep gave; a TrapRepress is stamped too.
        ring.set_lids([(0xb, 7)]);
        let repress = SmpRepr {
            method: Method::TrapRepress,
            ..SmpRepr::get(AttributeId::Notice, 0, 1, Routing::Lid)
        };
        assert_eq!(stamped(&ring, repress, Some(7)), 0xbbbb);
        assert_eq!(stamped(&ring, repress, Some(8)), KEY);
        // A response goes as it is.
        let response = SmpRepr {
            method: Method::GetResp,
            m_key: 5,
            ..get(&[1])
        };
        assert_eq!(stamped(&ring, response, None), 5);
        let (text, neighbors) = ring.take_changed().expect("learned keys");
        // [1] leaves the SM's port 1 for the switch, [1, 2] its port 2 for the CA (whose NodeInfo
        // here says it arrived at port 0).
        let (neighbors, problems) = read_neighbors(&neighbors);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            neighbors,
            Neighbors::from([
                ((0xa, 1), (0xb, 0)),
                ((0xb, 0), (0xa, 1)),
                ((0xb, 2), (0xc, 0)),
                ((0xc, 0), (0xb, 2)),
            ])
        );
        // A new run names the targets of routes through them before they answer.
        let restarted = KeyRing::new(config(true), read_guid2mkey(&text).0, neighbors, Guid(0xa));
        assert_eq!(stamped(&restarted, get(&[1]), None), 0xbbbb);
        assert_eq!(stamped(&restarted, get(&[1, 2]), None), 0);
        assert_eq!(stamped(&restarted, get(&[1, 3]), None), KEY);
        assert_eq!(
            read_guid2mkey(&text).0,
            BTreeMap::from([(0xa, 0xaaaa), (0xb, 0xbbbb), (0xc, 0)])
        );
        assert_eq!(ring.take_changed(), None, "nothing new since");
    }

    #[test]
    fn only_a_set_option_makes_the_sm_touch_the_fields() {
        assert!(!MKeyConfig::default().manages());
        let lease_only = MKeyConfig {
            lease_period: 15,
            ..MKeyConfig::default()
        };
        assert!(lease_only.manages());
        assert!(config(false).manages());
    }

    #[test]
    fn without_lookup_every_smp_carries_m_key() {
        let mut ring = KeyRing::new(
            config(false),
            BTreeMap::from([(0xa, 0xaaaa)]),
            Neighbors::new(),
            Guid(0xa),
        );
        ring.observe(&node_info(&[1], 0xb, NodeType::Switch));
        ring.observe(&port_info(&[1], 0, 0xbbbb, 2));
        let get = |path: &[u8]| SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(path));
        assert_eq!(stamped(&ring, get(&[]), None), KEY);
        assert_eq!(stamped(&ring, get(&[1]), None), KEY);
    }

    #[test]
    fn per_port_keys_are_hmac_sha256_of_the_guid_and_differ() {
        let keys = PerPortKeys::new(b"0123456789abcdef");
        // Computed independently with Python: hmac.new(b"0123456789abcdef",
        // (0x0002c90000000001).to_bytes(8, "big"), hashlib.sha256).digest()[:8].
        assert_eq!(keys.key_of(0x0002_c900_0000_0001), PYTHON_HMAC_0001);
        assert_ne!(keys.key_of(1), keys.key_of(2));
        assert_ne!(
            PerPortKeys::new(b"0123456789abcdeX").key_of(1),
            keys.key_of(1)
        );
        assert!(!format!("{keys:?}").contains("0123"));
        let ring = KeyRing::new(
            MKeyConfig {
                per_port: Some(keys.clone()),
                ..config(true)
            },
            BTreeMap::new(),
            Neighbors::new(),
            Guid(0xa),
        );
        assert_eq!(ring.config().wanted(0xa), keys.key_of(0xa));
        // A port not in the cache gets its derived key; an unnamed one `m_key`.
        let get = |path: &[u8]| SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(path));
        assert_eq!(stamped(&ring, get(&[]), None), keys.key_of(0xa));
        assert_eq!(stamped(&ring, get(&[9]), None), KEY);
    }

    const PYTHON_HMAC_0001: u64 = 0x44ba_970e_8813_9c9c;

    #[test]
    fn guid2mkey_round_trip_in_opensm_format_and_precise_errors() {
        let keys = BTreeMap::from([(0x0002_c900_0000_0001, 0xdead_beef), (2, 0)]);
        let text = write_guid2mkey(&keys);
        assert_eq!(
            text,
            "0x0000000000000002 0x0000000000000000\n0x0002c90000000001 0x00000000deadbeef\n"
        );
        // OpenSM separates entries with blank lines.
        let opensm = text.replace('\n', "\n\n");
        assert_eq!(read_guid2mkey(&opensm), (keys, Vec::new()));
        let (read, problems) = read_guid2mkey(
            "0x1 0x2\nnonsense 0x2\n0x3\n0x4 0x5 0x6\n0x7 99\n0x8 0x1ffffffffffffffff\n",
        );
        assert_eq!(read, BTreeMap::from([(1, 2)]));
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "guid2mkey line 2: the port GUID is not a 0x-prefixed 64-bit hex number",
                "guid2mkey line 3: one field where two are needed",
                "guid2mkey line 4: more than two fields",
                "guid2mkey line 5: the M_Key is not a 0x-prefixed 64-bit hex number",
                "guid2mkey line 6: the M_Key is not a 0x-prefixed 64-bit hex number",
            ]
        );
    }

    #[test]
    fn debug_shows_no_key() {
        let config = MKeyConfig {
            per_port: Some(PerPortKeys::new(b"0123456789abcdef")),
            ..config(true)
        };
        let ring = KeyRing::new(
            config,
            BTreeMap::from([(1, KEY)]),
            Neighbors::new(),
            Guid(1),
        );
        let shown = format!("{ring:?}");
        assert!(!shown.contains("1111222233334444") && !shown.contains(&KEY.to_string()));
        assert!(shown.contains("held: 1"), "{shown}");
    }

    #[test]
    fn neighbors_in_opensm_format_and_precise_errors() {
        let neighbors = Neighbors::from([((0x0002_c900_0000_1000, 3), (0x0002_c900_0000_2000, 4))]);
        let text = write_neighbors(&neighbors);
        assert_eq!(text, "0x0002c90000001000:3 0x0002c90000002000:4\n");
        assert_eq!(read_neighbors(&text), (neighbors, Vec::new()));
        let (read, problems) = read_neighbors("0x1:1 0x2:2\n0x1 0x2:2\n0x1:300 0x2:1\n0x1:1\n");
        assert_eq!(read.len(), 1);
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "neighbors line 2: a field is not `0x<port GUID>:<port number>`",
                "neighbors line 3: a field is not `0x<port GUID>:<port number>`",
                "neighbors line 4: one field where two are needed",
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn cache_readers_never_panic_and_round_trip(
            text in "((0[xX])?[0-9a-fA-F]{0,18}(:[0-9]{1,4})?[ \t]{0,2}|#|\n){0,40}"
        ) {
            let lines = text.lines().count();
            let (keys, problems) = read_guid2mkey(&text);
            proptest::prop_assert!(problems.iter().all(|p| (1..=lines).contains(&p.line)));
            proptest::prop_assert_eq!(read_guid2mkey(&write_guid2mkey(&keys)), (keys, Vec::new()));
            let (neighbors, problems) = read_neighbors(&text);
            proptest::prop_assert!(problems.iter().all(|p| (1..=lines).contains(&p.line)));
            let written = write_neighbors(&neighbors);
            proptest::prop_assert_eq!(read_neighbors(&written), (neighbors, Vec::new()));
        }
    }
}
