//! A switch's packet buffer after NVIDIA Onyx's shared-buffer model ("Shared Buffers", Onyx
//! User Manual 3.10): pools, the four regions every packet is counted in, reserved and shared
//! quotas with static or dynamic thresholds, and headroom with Xoff/Xon for lossless priority
//! groups.
//!
//! # The model
//! A packet arrives on an ingress port (iPort) with a switch priority, which names its priority
//! group (PG, the ingress buffer) and its traffic class (TC, the egress queue). It is counted in
//! four regions: iPort.PG, iPort (the port's share of the PG's ingress pool), ePort.TC and ePort
//! (the port's share of the TC's egress pool). Each region has a reserved quota (its own, not
//! shared) and a shared quota (a threshold on its use of its pool). A pool's size bounds the
//! shared use of all regions mapped to it ("The pool size does not include the reserved sizes of
//! regions"); a pool may be infinite.
//!
//! Admission follows the manual's "Buffer eligibility" rules:
//! 1. if every one of the four regions is below its shared threshold (and the packet fits in
//!    both pools), the packet is stored in shared space, counted in all four regions and in the
//!    ingress and egress pools;
//! 2. else, if one of the regions has reserved space for the whole packet, it is stored there,
//!    counted in that region's reserved quota only. For lossy traffic any of the four regions
//!    may give it; for lossless traffic only ePort.TC or ePort ("Ingress check is not performed
//!    since all the ingress reserved space is allocated for headroom");
//! 3. else a lossy packet is dropped, and a lossless one "stays in headroom on which Xon/Xoff
//!    thresholds are applied". The PG's reserved size is its headroom (the manual's example
//!    sets "headroom (reserved size) of 85KB"). Xoff and Xon are thresholds on the headroom's
//!    occupancy, and a packet that does not fit in the headroom is dropped.
//!
//! A packet stays where it was admitted until it leaves ([`SwitchBuffer::release`]).
//!
//! A shared threshold is static (bytes, or a percentage of the pool) or dynamic: alpha, one of
//! 0, 1/128 ... 1/2, 1, 2 ... 64, infinity, admits while `region_usage < alpha x free pool
//! space`, where a region's usage is its shared use. With N regions of one pool congested, each
//! settles at `alpha x B / (1 + N x alpha)` of a pool of B bytes (Choudhury and Hahne's dynamic
//! threshold).
//!
//! Not modelled:
//! - multicast (MC.SP, ePort.mc, ePool15) and control traffic (iPoolCtrl, ePoolCtrl, pg9,
//!   tc16), which the simulator does not carry;
//! - the pipeline headroom of a lossy PG (the out-of-box "20KB headroom" of pg0), which holds a
//!   packet only while the switch decides where it goes;
//! - per-interface differences: one [`BufferConfig`] applies to every port of a switch.
//!
//! Sizes are bytes; the manual's "KB" is taken as 1024 bytes.

use std::fmt;

use serde::Deserialize;

use crate::ethernet::pfc::{PRIORITIES, Transition, XoffXon};

/// Priority groups 0-7 (pg9, control, is not modelled).
pub const PGS: usize = 8;
/// Unicast traffic classes 0-7 (8-15 are multicast, 16 control).
pub const TCS: usize = 8;
/// Data pools per direction: iPool0-iPool7 and ePool0-ePool7, at most one per PG or TC.
pub const POOLS: usize = 8;

const KB: u64 = 1024;

/// The bytes of a whole shared buffer by default: 13,680,063, the size the Onyx manual's
/// example gives a pool that is to take all of it (`pool iPool1 size 13680063`).
pub const DEFAULT_SHARED_BUFFER_BYTES: u64 = 13_680_063;

/// Whether a pool counts packets as they arrive or as they leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ingress,
    Egress,
}

/// A data pool under its Onyx name: `iPool0`-`iPool7` or `ePool0`-`ePool7`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct PoolId {
    pub direction: Direction,
    pub index: u8,
}

impl PoolId {
    pub const fn ingress(index: u8) -> PoolId {
        PoolId {
            direction: Direction::Ingress,
            index,
        }
    }

    pub const fn egress(index: u8) -> PoolId {
        PoolId {
            direction: Direction::Egress,
            index,
        }
    }
}

impl fmt::Display for PoolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.direction {
            Direction::Ingress => "iPool",
            Direction::Egress => "ePool",
        };
        write!(f, "{prefix}{}", self.index)
    }
}

impl TryFrom<String> for PoolId {
    type Error = String;
    fn try_from(name: String) -> Result<PoolId, String> {
        let parsed = [("iPool", Direction::Ingress), ("ePool", Direction::Egress)]
            .iter()
            .find_map(|&(prefix, direction)| {
                let index = name.strip_prefix(prefix)?.parse::<u8>().ok()?;
                (usize::from(index) < POOLS).then_some(PoolId { direction, index })
            });
        parsed.ok_or_else(|| {
            format!(
                "`{name}` is not a data pool: give iPool0-iPool7 or ePool0-ePool7 (control and multicast pools are not modelled)"
            )
        })
    }
}

/// A pool's size: bytes, or `"inf"` ("occupancy of this pool will not be taken into
/// consideration upon admittance").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SizeText")]
pub enum PoolSize {
    Bytes(u64),
    Infinite,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SizeText {
    Bytes(u64),
    Text(String),
}

impl TryFrom<SizeText> for PoolSize {
    type Error = String;
    fn try_from(size: SizeText) -> Result<PoolSize, String> {
        match size {
            SizeText::Bytes(bytes) => Ok(PoolSize::Bytes(bytes)),
            SizeText::Text(text) if text == "inf" => Ok(PoolSize::Infinite),
            SizeText::Text(text) => Err(format!(
                "pool size `{text}` is neither a number of bytes nor \"inf\""
            )),
        }
    }
}

/// How a pool's regions set their shared quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolMode {
    /// A fixed threshold per region: bytes, or a percentage of the pool.
    Static,
    /// A threshold that follows the pool's free space: alpha.
    Dynamic,
}

/// A pool (Onyx `pool iPool1 size 13680063 type dynamic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub name: PoolId,
    pub size: PoolSize,
    #[serde(rename = "type")]
    pub mode: PoolMode,
}

/// The dynamic-threshold factor alpha: 0, 2^k for k from -7 to 6 (1/128 ... 64), or infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "AlphaText")]
pub struct Alpha(AlphaValue);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AlphaValue {
    Zero,
    /// 2^k.
    Power(i8),
    Infinity,
}

impl Alpha {
    /// Alpha 0: no shared space at all.
    pub const ZERO: Alpha = Alpha(AlphaValue::Zero);
    /// Alpha infinity: no shared limit but the pool's.
    pub const INFINITY: Alpha = Alpha(AlphaValue::Infinity);

    /// 2^`exponent`, for an exponent from -7 (1/128) to 6 (64).
    pub fn power_of_two(exponent: i8) -> Option<Alpha> {
        (-7..=6)
            .contains(&exponent)
            .then_some(Alpha(AlphaValue::Power(exponent)))
    }

    /// Whether a region using `usage` bytes of shared space may take more while its pool has
    /// `free` bytes left (`None`: an infinite pool): `usage < alpha x free`, in integers.
    fn allows(self, usage: u64, free: Option<u64>) -> bool {
        let (usage, free) = (u128::from(usage), free.map(u128::from));
        match (self.0, free) {
            (AlphaValue::Zero, _) => false,
            (AlphaValue::Infinity, _) | (_, None) => true,
            (AlphaValue::Power(k), Some(free)) if k >= 0 => usage < free << k,
            (AlphaValue::Power(k), Some(free)) => usage << -k < free,
        }
    }
}

impl fmt::Display for Alpha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            AlphaValue::Zero => write!(f, "0"),
            AlphaValue::Infinity => write!(f, "infinity"),
            AlphaValue::Power(k) if k >= 0 => write!(f, "{}", 1u32 << k),
            AlphaValue::Power(k) => write!(f, "1/{}", 1u32 << -k),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AlphaText {
    Number(i64),
    Text(String),
}

impl TryFrom<AlphaText> for Alpha {
    type Error = String;
    fn try_from(text: AlphaText) -> Result<Alpha, String> {
        let text = match text {
            AlphaText::Number(n) => n.to_string(),
            AlphaText::Text(text) => text,
        };
        let parsed = match text.as_str() {
            "0" => Some(Alpha::ZERO),
            "infinity" | "inf" => Some(Alpha::INFINITY),
            other => {
                let (numerator, denominator) = other.split_once('/').unwrap_or((other, "1"));
                match (numerator.parse::<u32>(), denominator.parse::<u32>()) {
                    (Ok(1), Ok(d)) if d.is_power_of_two() => {
                        Alpha::power_of_two(-(d.trailing_zeros() as i8))
                    }
                    (Ok(n), Ok(1)) if n.is_power_of_two() => {
                        Alpha::power_of_two(n.trailing_zeros() as i8)
                    }
                    _ => None,
                }
            }
        };
        parsed.ok_or_else(|| {
            format!(
                "alpha `{text}` is not one of 0, 1/128, 1/64, 1/32, 1/16, 1/8, 1/4, 1/2, 1, 2, 4, 8, 16, 32, 64, infinity"
            )
        })
    }
}

/// A region's shared quota: `{ alpha = 8 }` (dynamic pool), `{ bytes = 92160 }` or
/// `{ percent = 50 }` (static pool; percent of a finite pool) or `"inf"` (no limit but the
/// pool's; Onyx `shared size inf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shared {
    Alpha(Alpha),
    Bytes(u64),
    Percent(u8),
    #[serde(rename = "inf")]
    Infinite,
}

impl fmt::Display for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shared::Alpha(alpha) => write!(f, "alpha {alpha}"),
            Shared::Bytes(bytes) => write!(f, "{bytes} bytes"),
            Shared::Percent(percent) => write!(f, "{percent}%"),
            Shared::Infinite => write!(f, "inf"),
        }
    }
}

/// Whether a PG's traffic may be dropped or must be paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficType {
    Lossy,
    Lossless,
}

/// An iPort.PG buffer (Onyx `ingress-buffer iPort.pg1 map pool iPool1 type lossless reserved
/// 85k xoff 20k xon 20k shared alpha 1`). For a lossless PG `reserved` is the headroom, which
/// must hold `xoff` plus what is in flight once the pause is sent
/// ([`crate::pfc::headroom_bytes`]); `xoff` and `xon` are thresholds on the headroom's
/// occupancy and are given for lossless PGs only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgConfig {
    pub pg: u8,
    pub pool: PoolId,
    #[serde(rename = "type")]
    pub kind: TrafficType,
    #[serde(default)]
    pub reserved: u64,
    #[serde(default)]
    pub xoff: Option<u64>,
    #[serde(default)]
    pub xon: Option<u64>,
    pub shared: Shared,
}

/// An ePort.TC buffer (Onyx `egress-buffer ePort.tc1 map pool ePool1 reserved 0 shared size
/// inf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcConfig {
    pub tc: u8,
    pub pool: PoolId,
    #[serde(default)]
    pub reserved: u64,
    pub shared: Shared,
}

/// An iPort or ePort buffer: a port's share of one pool (Onyx `ingress-buffer iPort pool iPool1
/// reserved 10k shared alpha 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortPoolConfig {
    pub pool: PoolId,
    #[serde(default)]
    pub reserved: u64,
    pub shared: Shared,
}

/// A switch's buffer configuration, in Onyx's advanced buffer terms. [`Default`] is the
/// manual's out-of-box configuration: iPool0 and ePool0 dynamic, each the whole shared buffer;
/// every switch priority in PG0 and in the TC of its own number; iPort.iPool0 and ePort.ePool0
/// reserved 10KB, shared alpha 8; iPort.pg0 lossy, reserved 0, shared alpha 8; ePort.tc0-7
/// reserved 1KB, shared alpha 8.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferConfig {
    /// The switch's whole shared buffer: no pool is larger.
    pub shared_buffer_bytes: u64,
    pub pool: Vec<PoolConfig>,
    /// The PG of each switch priority (Onyx `iPort.pgN bind switch-priority P`).
    pub priority_pg: [u8; PRIORITIES],
    /// The TC of each switch priority.
    pub priority_tc: [u8; PRIORITIES],
    pub pg: Vec<PgConfig>,
    pub tc: Vec<TcConfig>,
    pub iport: Vec<PortPoolConfig>,
    pub eport: Vec<PortPoolConfig>,
}

impl Default for BufferConfig {
    fn default() -> Self {
        let alpha_8 = Shared::Alpha(Alpha(AlphaValue::Power(3)));
        let whole = PoolSize::Bytes(DEFAULT_SHARED_BUFFER_BYTES);
        BufferConfig {
            shared_buffer_bytes: DEFAULT_SHARED_BUFFER_BYTES,
            pool: vec![
                PoolConfig {
                    name: PoolId::ingress(0),
                    size: whole,
                    mode: PoolMode::Dynamic,
                },
                PoolConfig {
                    name: PoolId::egress(0),
                    size: whole,
                    mode: PoolMode::Dynamic,
                },
            ],
            priority_pg: [0; PRIORITIES],
            priority_tc: [0, 1, 2, 3, 4, 5, 6, 7],
            pg: vec![PgConfig {
                pg: 0,
                pool: PoolId::ingress(0),
                kind: TrafficType::Lossy,
                reserved: 0,
                xoff: None,
                xon: None,
                shared: alpha_8,
            }],
            tc: (0..8)
                .map(|tc| TcConfig {
                    tc,
                    pool: PoolId::egress(0),
                    reserved: KB,
                    shared: alpha_8,
                })
                .collect(),
            iport: vec![PortPoolConfig {
                pool: PoolId::ingress(0),
                reserved: 10 * KB,
                shared: alpha_8,
            }],
            eport: vec![PortPoolConfig {
                pool: PoolId::egress(0),
                reserved: 10 * KB,
                shared: alpha_8,
            }],
        }
    }
}

/// The four regions a packet is counted in, under the manual's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// iPort.PG: the ingress port and priority group.
    IPortPg,
    /// iPort: the ingress port's use of the PG's pool.
    IPort,
    /// ePort.TC: the egress port and traffic class.
    EPortTc,
    /// ePort: the egress port's use of the TC's pool.
    EPort,
}

/// A region of one port, as named in configuration and messages (`iPort.pg3`, `ePort.ePool0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionName {
    pub region: Region,
    /// The PG, TC or pool number.
    pub index: u8,
}

impl fmt::Display for RegionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.region {
            Region::IPortPg => write!(f, "iPort.pg{}", self.index),
            Region::IPort => write!(f, "iPort.iPool{}", self.index),
            Region::EPortTc => write!(f, "ePort.tc{}", self.index),
            Region::EPort => write!(f, "ePort.ePool{}", self.index),
        }
    }
}

/// An impossible buffer configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BufferError {
    #[error("shared_buffer_bytes = 0: a switch has a buffer")]
    NoBuffer,
    #[error("{0} is defined twice")]
    DuplicatePool(PoolId),
    #[error("{pool} size {size} is larger than the whole shared buffer ({buffer} bytes)")]
    PoolTooLarge {
        pool: PoolId,
        size: u64,
        buffer: u64,
    },
    #[error("{0} is out of range: PGs and TCs are 0-7")]
    OutOfRange(RegionName),
    #[error("{0} is configured twice")]
    DuplicateRegion(RegionName),
    #[error("{region} maps to {pool}, which is not defined")]
    UnknownPool { region: RegionName, pool: PoolId },
    #[error("{region} maps to {pool}, but an {side} buffer needs an {wanted} pool")]
    WrongDirection {
        region: RegionName,
        pool: PoolId,
        side: &'static str,
        wanted: &'static str,
    },
    #[error("switch priority {priority} is bound to {region}, which is not configured")]
    MissingRegion { priority: u8, region: RegionName },
    #[error(
        "{region} has shared {shared}, but {pool} is {mode}: alpha is for dynamic pools, bytes and percent for static ones"
    )]
    SharedModeMismatch {
        region: RegionName,
        shared: Shared,
        pool: PoolId,
        mode: &'static str,
    },
    #[error("{region} has shared {percent}% of {pool}, which is infinite: give bytes")]
    PercentOfInfinitePool {
        region: RegionName,
        percent: u8,
        pool: PoolId,
    },
    #[error("{region} has shared {percent}%: give 0-100")]
    BadPercent { region: RegionName, percent: u8 },
    #[error("{0} is lossless: give its xoff and xon (bytes of headroom occupancy)")]
    LosslessWithoutThresholds(RegionName),
    #[error("{0} is lossy: xoff and xon are for lossless PGs")]
    ThresholdsOnLossy(RegionName),
    #[error(
        "{region} has xon {xon}, xoff {xoff}, reserved (headroom) {reserved}: give 0 <= xon <= xoff, 1 <= xoff <= reserved"
    )]
    BadThresholds {
        region: RegionName,
        xon: u64,
        xoff: u64,
        reserved: u64,
    },
}

/// A shared quota resolved against its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threshold {
    /// Static: admit while the region's shared use is below this many bytes.
    Bytes(u64),
    Alpha(Alpha),
    Unlimited,
}

/// A region's quotas, the same on every port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quota {
    reserved: u64,
    threshold: Threshold,
    /// The pool's index in its direction.
    pool: u8,
}

impl Quota {
    const UNUSED: Quota = Quota {
        reserved: 0,
        threshold: Threshold::Unlimited,
        pool: 0,
    };
}

/// A region's use: bytes stored in its reserved quota and in shared space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionUsage {
    pub reserved: u64,
    pub shared: u64,
}

/// A pool's size (`None`: infinite) and the shared bytes its regions hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pool {
    size: Option<u64>,
    used: u64,
}

impl Pool {
    fn free(&self) -> Option<u64> {
        self.size.map(|size| size.saturating_sub(self.used))
    }

    fn fits(&self, bytes: u64) -> bool {
        self.size.is_none_or(|size| self.used + bytes <= size)
    }
}

/// A lossless PG's headroom on one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Headroom {
    used: u64,
    peak: u64,
    paused: bool,
}

/// Where an admitted packet is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Shared space: counted in all four regions and both pools.
    Shared,
    /// The reserved quota of this region.
    Reserved(Region),
    /// The headroom of its (lossless) PG.
    Headroom,
}

/// An admitted packet: what [`SwitchBuffer::release`] needs when it leaves. Small and `Copy`,
/// for the engine to keep with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub in_port: u16,
    pub out_port: u16,
    pub priority: u8,
    pub place: Place,
    pub bytes: u32,
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// This region was at its shared threshold (and no region had reserved space).
    Threshold(Region),
    /// This pool had no room for the packet (and no region had reserved space).
    PoolFull(Direction),
    /// A lossless packet found its PG's headroom full.
    HeadroomFull,
}

/// A lossless PG crossed Xoff or fell to Xon: the pause frames for its priorities are the
/// flow control's business ([`crate::pfc::PauseGenerator::request`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgFlowControl {
    pub in_port: u16,
    pub pg: u8,
    /// The switch priorities bound to the PG, as a bit mask.
    pub priorities: u8,
    pub transition: Transition,
}

/// What [`SwitchBuffer::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Stored {
        stored: Stored,
        /// Set when the packet took its PG's headroom to Xoff.
        flow_control: Option<PgFlowControl>,
    },
    Dropped(Refusal),
}

/// The buffer of one switch: its pools, the regions of every port, the headroom of its
/// lossless PGs, and the counters a switch would show. Flat arrays indexed by
/// `port x 8 + PG, TC or pool`; no allocation after [`SwitchBuffer::new`].
#[derive(Debug, Clone)]
pub struct SwitchBuffer {
    ports: usize,
    priority_pg: [u8; PRIORITIES],
    priority_tc: [u8; PRIORITIES],
    /// Per PG, the switch priorities bound to it.
    pg_priorities: [u8; PGS],
    /// Per PG, its Xoff/Xon if lossless.
    lossless: [Option<XoffXon>; PGS],
    pg_quota: [Quota; PGS],
    tc_quota: [Quota; TCS],
    iport_quota: [Quota; POOLS],
    eport_quota: [Quota; POOLS],
    ipools: [Pool; POOLS],
    epools: [Pool; POOLS],
    ipg: Vec<RegionUsage>,
    iport: Vec<RegionUsage>,
    etc: Vec<RegionUsage>,
    eport: Vec<RegionUsage>,
    headroom: Vec<Headroom>,
    /// Per ingress port and switch priority.
    drops: Vec<u64>,
}

/// The name of a PG's, TC's or port pool's region.
fn name(region: Region, index: u8) -> RegionName {
    RegionName { region, index }
}

impl BufferConfig {
    /// Checks the configuration; the error names the pool or region (`iPort.pg3`) that is
    /// impossible and why.
    pub fn validate(&self) -> Result<(), BufferError> {
        self.resolve().map(drop)
    }

    /// The pools, each checked, by direction and index.
    fn pools(&self) -> Result<[[Option<PoolConfig>; POOLS]; 2], BufferError> {
        if self.shared_buffer_bytes == 0 {
            return Err(BufferError::NoBuffer);
        }
        let mut pools = [[None; POOLS]; 2];
        for pool in &self.pool {
            if let PoolSize::Bytes(size) = pool.size
                && size > self.shared_buffer_bytes
            {
                return Err(BufferError::PoolTooLarge {
                    pool: pool.name,
                    size,
                    buffer: self.shared_buffer_bytes,
                });
            }
            let slot = &mut pools[pool.name.direction as usize][usize::from(pool.name.index)];
            if slot.replace(*pool).is_some() {
                return Err(BufferError::DuplicatePool(pool.name));
            }
        }
        Ok(pools)
    }

    /// Everything [`SwitchBuffer::new`] needs, checked.
    fn resolve(&self) -> Result<Resolved, BufferError> {
        let pools = self.pools()?;
        let quota = |region: RegionName, pool: PoolId, reserved: u64, shared: Shared| {
            resolve_quota(&pools, region, pool, reserved, shared)
        };
        let mut resolved = Resolved {
            pg_quota: [None; PGS],
            tc_quota: [None; TCS],
            iport_quota: [None; POOLS],
            eport_quota: [None; POOLS],
            lossless: [None; PGS],
            pools,
        };
        for pg in &self.pg {
            let region = name(Region::IPortPg, pg.pg);
            let slot = slot(&mut resolved.pg_quota, region)?;
            *slot = Some(quota(region, pg.pool, pg.reserved, pg.shared)?);
            resolved.lossless[usize::from(pg.pg)] = lossless_thresholds(pg, region)?;
        }
        for tc in &self.tc {
            let region = name(Region::EPortTc, tc.tc);
            let slot = slot(&mut resolved.tc_quota, region)?;
            *slot = Some(quota(region, tc.pool, tc.reserved, tc.shared)?);
        }
        for (configs, kind, quotas) in [
            (&self.iport, Region::IPort, &mut resolved.iport_quota),
            (&self.eport, Region::EPort, &mut resolved.eport_quota),
        ] {
            for port in configs {
                let region = name(kind, port.pool.index);
                let slot = slot(quotas, region)?;
                *slot = Some(quota(region, port.pool, port.reserved, port.shared)?);
            }
        }
        for priority in 0..PRIORITIES as u8 {
            resolved.check_bound(
                priority,
                name(Region::IPortPg, self.priority_pg[usize::from(priority)]),
            )?;
            resolved.check_bound(
                priority,
                name(Region::EPortTc, self.priority_tc[usize::from(priority)]),
            )?;
        }
        Ok(resolved)
    }
}

/// The slot of `region` in `quotas`, if in range and not yet taken.
fn slot<const N: usize>(
    quotas: &mut [Option<Quota>; N],
    region: RegionName,
) -> Result<&mut Option<Quota>, BufferError> {
    let slot = quotas
        .get_mut(usize::from(region.index))
        .ok_or(BufferError::OutOfRange(region))?;
    if slot.is_some() {
        return Err(BufferError::DuplicateRegion(region));
    }
    Ok(slot)
}

/// A region's quota against its pool: the pool exists, is on the region's side, and suits the
/// shared quota's kind.
fn resolve_quota(
    pools: &[[Option<PoolConfig>; POOLS]; 2],
    region: RegionName,
    pool: PoolId,
    reserved: u64,
    shared: Shared,
) -> Result<Quota, BufferError> {
    let (side, wanted, direction) = match region.region {
        Region::IPortPg | Region::IPort => ("ingress", "iPool", Direction::Ingress),
        Region::EPortTc | Region::EPort => ("egress", "ePool", Direction::Egress),
    };
    if pool.direction != direction {
        return Err(BufferError::WrongDirection {
            region,
            pool,
            side,
            wanted,
        });
    }
    let config = pools[direction as usize][usize::from(pool.index)]
        .ok_or(BufferError::UnknownPool { region, pool })?;
    let mismatch = |mode| BufferError::SharedModeMismatch {
        region,
        shared,
        pool,
        mode,
    };
    let threshold = match (shared, config.mode) {
        (Shared::Infinite, _) => Threshold::Unlimited,
        (Shared::Alpha(alpha), PoolMode::Dynamic) => Threshold::Alpha(alpha),
        (Shared::Bytes(bytes), PoolMode::Static) => Threshold::Bytes(bytes),
        (Shared::Percent(percent), PoolMode::Static) => {
            if percent > 100 {
                return Err(BufferError::BadPercent { region, percent });
            }
            let PoolSize::Bytes(size) = config.size else {
                return Err(BufferError::PercentOfInfinitePool {
                    region,
                    percent,
                    pool,
                });
            };
            Threshold::Bytes(size * u64::from(percent) / 100)
        }
        (Shared::Alpha(_), PoolMode::Static) => return Err(mismatch("static")),
        (Shared::Bytes(_) | Shared::Percent(_), PoolMode::Dynamic) => {
            return Err(mismatch("dynamic"));
        }
    };
    Ok(Quota {
        reserved,
        threshold,
        pool: pool.index,
    })
}

/// A PG's Xoff/Xon: present and sound for a lossless PG, absent for a lossy one.
fn lossless_thresholds(pg: &PgConfig, region: RegionName) -> Result<Option<XoffXon>, BufferError> {
    match (pg.kind, pg.xoff, pg.xon) {
        (TrafficType::Lossy, None, None) => Ok(None),
        (TrafficType::Lossy, _, _) => Err(BufferError::ThresholdsOnLossy(region)),
        (TrafficType::Lossless, Some(xoff), Some(xon)) => {
            if xoff == 0 || xon > xoff || xoff > pg.reserved {
                return Err(BufferError::BadThresholds {
                    region,
                    xon,
                    xoff,
                    reserved: pg.reserved,
                });
            }
            Ok(Some(XoffXon { xoff, xon }))
        }
        (TrafficType::Lossless, _, _) => Err(BufferError::LosslessWithoutThresholds(region)),
    }
}

/// A configuration resolved: quotas by region kind and index, pools by direction and index.
struct Resolved {
    pg_quota: [Option<Quota>; PGS],
    tc_quota: [Option<Quota>; TCS],
    iport_quota: [Option<Quota>; POOLS],
    eport_quota: [Option<Quota>; POOLS],
    lossless: [Option<XoffXon>; PGS],
    pools: [[Option<PoolConfig>; POOLS]; 2],
}

impl Resolved {
    /// `priority` is bound to `region` (a PG or TC): it must exist, and so must the port
    /// region of its pool.
    fn check_bound(&self, priority: u8, region: RegionName) -> Result<(), BufferError> {
        let (quotas, port_quotas, port_region) = match region.region {
            Region::IPortPg => (&self.pg_quota[..], &self.iport_quota, Region::IPort),
            _ => (&self.tc_quota[..], &self.eport_quota, Region::EPort),
        };
        let missing = |region| BufferError::MissingRegion { priority, region };
        let quota = quotas
            .get(usize::from(region.index))
            .copied()
            .flatten()
            .ok_or(missing(region))?;
        let port = name(port_region, quota.pool);
        port_quotas[usize::from(quota.pool)].ok_or(missing(port))?;
        Ok(())
    }
}

impl SwitchBuffer {
    /// The buffer of a switch with `ports` ports (numbered from 0) and `config`, checked.
    pub fn new(config: &BufferConfig, ports: u16) -> Result<SwitchBuffer, BufferError> {
        let resolved = config.resolve()?;
        let ports = usize::from(ports);
        let unwrap_all = |quotas: [Option<Quota>; 8]| quotas.map(|q| q.unwrap_or(Quota::UNUSED));
        let pools = |direction: Direction| {
            resolved.pools[direction as usize].map(|pool| Pool {
                size: match pool.map(|p| p.size) {
                    Some(PoolSize::Bytes(size)) => Some(size),
                    _ => None,
                },
                used: 0,
            })
        };
        let mut pg_priorities = [0u8; PGS];
        for (priority, &pg) in config.priority_pg.iter().enumerate() {
            pg_priorities[usize::from(pg)] |= 1 << priority;
        }
        Ok(SwitchBuffer {
            ports,
            priority_pg: config.priority_pg,
            priority_tc: config.priority_tc,
            pg_priorities,
            lossless: resolved.lossless,
            pg_quota: unwrap_all(resolved.pg_quota),
            tc_quota: unwrap_all(resolved.tc_quota),
            iport_quota: unwrap_all(resolved.iport_quota),
            eport_quota: unwrap_all(resolved.eport_quota),
            ipools: pools(Direction::Ingress),
            epools: pools(Direction::Egress),
            ipg: vec![RegionUsage::default(); ports * PGS],
            iport: vec![RegionUsage::default(); ports * POOLS],
            etc: vec![RegionUsage::default(); ports * TCS],
            eport: vec![RegionUsage::default(); ports * POOLS],
            headroom: vec![Headroom::default(); ports * PGS],
            drops: vec![0; ports * PRIORITIES],
        })
    }

    /// The flat index of each of the four regions of a packet, in [`Region`] order, and its
    /// ingress and egress pool indices.
    fn regions(&self, in_port: usize, out_port: usize, priority: usize) -> ([usize; 4], u8, u8) {
        let pg = usize::from(self.priority_pg[priority]);
        let tc = usize::from(self.priority_tc[priority]);
        let ipool = self.pg_quota[pg].pool;
        let epool = self.tc_quota[tc].pool;
        (
            [
                in_port * PGS + pg,
                in_port * POOLS + usize::from(ipool),
                out_port * TCS + tc,
                out_port * POOLS + usize::from(epool),
            ],
            ipool,
            epool,
        )
    }

    /// The quota of the region at flat `index` (port x 8 + PG, TC or pool).
    fn quota(&self, region: Region, index: usize) -> Quota {
        let quotas = match region {
            Region::IPortPg => &self.pg_quota,
            Region::IPort => &self.iport_quota,
            Region::EPortTc => &self.tc_quota,
            Region::EPort => &self.eport_quota,
        };
        quotas[index % 8]
    }

    /// The usage counters of the region at flat `index`.
    fn usage_mut(&mut self, region: Region, index: usize) -> &mut RegionUsage {
        let usages = match region {
            Region::IPortPg => &mut self.ipg,
            Region::IPort => &mut self.iport,
            Region::EPortTc => &mut self.etc,
            Region::EPort => &mut self.eport,
        };
        &mut usages[index]
    }

    fn usage(&self, region: Region, index: usize) -> RegionUsage {
        let usages = match region {
            Region::IPortPg => &self.ipg,
            Region::IPort => &self.iport,
            Region::EPortTc => &self.etc,
            Region::EPort => &self.eport,
        };
        usages[index]
    }

    /// The first reason shared space refuses `bytes` in these regions and pools, if any.
    fn shared_refusal(
        &self,
        regions: [usize; 4],
        ipool: u8,
        epool: u8,
        bytes: u64,
    ) -> Option<Refusal> {
        let (ipool, epool) = (
            self.ipools[usize::from(ipool)],
            self.epools[usize::from(epool)],
        );
        for (kind, index) in REGIONS.into_iter().zip(regions) {
            let pool = match kind {
                Region::IPortPg | Region::IPort => ipool,
                Region::EPortTc | Region::EPort => epool,
            };
            let usage = self.usage(kind, index);
            let allowed = match self.quota(kind, index).threshold {
                Threshold::Unlimited => true,
                Threshold::Bytes(limit) => usage.shared < limit,
                Threshold::Alpha(alpha) => alpha.allows(usage.shared, pool.free()),
            };
            if !allowed {
                return Some(Refusal::Threshold(kind));
            }
        }
        if !ipool.fits(bytes) {
            return Some(Refusal::PoolFull(Direction::Ingress));
        }
        if !epool.fits(bytes) {
            return Some(Refusal::PoolFull(Direction::Egress));
        }
        None
    }

    /// A packet of `bytes` from `in_port` to `out_port` with switch `priority` arrives: where it
    /// is stored, or why it is dropped (counted per ingress port and priority).
    ///
    /// # Panics
    /// If a port is not below the switch's port count or the priority is above 7.
    pub fn admit(&mut self, in_port: u16, out_port: u16, priority: u8, bytes: u32) -> Admission {
        let (in_index, out_index, p) = (
            usize::from(in_port),
            usize::from(out_port),
            usize::from(priority),
        );
        assert!(
            in_index < self.ports && out_index < self.ports,
            "port out of range"
        );
        let (regions, ipool, epool) = self.regions(in_index, out_index, p);
        let size = u64::from(bytes);
        let pg = self.priority_pg[p];
        let lossless = self.lossless[usize::from(pg)];
        let stored = |place| Stored {
            in_port,
            out_port,
            priority,
            place,
            bytes,
        };
        let Some(refusal) = self.shared_refusal(regions, ipool, epool, size) else {
            self.count(regions, ipool, epool, size, true);
            return Admission::Stored {
                stored: stored(Place::Shared),
                flow_control: None,
            };
        };
        // Lossless traffic may not take ingress reserved space: it is all headroom.
        let candidates = if lossless.is_some() { 2 } else { 0 };
        for (kind, index) in REGIONS.into_iter().zip(regions).skip(candidates) {
            let reserved = self.quota(kind, index).reserved;
            let usage = self.usage_mut(kind, index);
            if usage.reserved + size <= reserved {
                usage.reserved += size;
                return Admission::Stored {
                    stored: stored(Place::Reserved(kind)),
                    flow_control: None,
                };
            }
        }
        let Some(thresholds) = lossless else {
            self.drops[in_index * PRIORITIES + p] += 1;
            return Admission::Dropped(refusal);
        };
        let headroom_size = self.pg_quota[usize::from(pg)].reserved;
        let headroom = &mut self.headroom[in_index * PGS + usize::from(pg)];
        if headroom.used + size > headroom_size {
            self.drops[in_index * PRIORITIES + p] += 1;
            return Admission::Dropped(Refusal::HeadroomFull);
        }
        headroom.used += size;
        headroom.peak = headroom.peak.max(headroom.used);
        Admission::Stored {
            stored: stored(Place::Headroom),
            flow_control: self.flow_control(in_port, pg, thresholds),
        }
    }

    /// The headroom of (`in_port`, `pg`) changed: its Xoff/Xon transition, if any.
    fn flow_control(&mut self, in_port: u16, pg: u8, thresholds: XoffXon) -> Option<PgFlowControl> {
        let headroom = &mut self.headroom[usize::from(in_port) * PGS + usize::from(pg)];
        let transition = thresholds.transition(headroom.paused, headroom.used)?;
        headroom.paused = transition == Transition::Xoff;
        Some(PgFlowControl {
            in_port,
            pg,
            priorities: self.pg_priorities[usize::from(pg)],
            transition,
        })
    }

    /// Adds (`add`) or takes away a shared packet's bytes in its four regions and two pools.
    fn count(&mut self, regions: [usize; 4], ipool: u8, epool: u8, size: u64, add: bool) {
        let change = |value: &mut u64| {
            if add {
                *value += size;
            } else {
                *value -= size;
            }
        };
        for (kind, index) in REGIONS.into_iter().zip(regions) {
            change(&mut self.usage_mut(kind, index).shared);
        }
        change(&mut self.ipools[usize::from(ipool)].used);
        change(&mut self.epools[usize::from(epool)].used);
    }

    /// The packet `stored` leaves the switch: its bytes are freed where they were. A lossless
    /// PG whose headroom falls to Xon says so.
    pub fn release(&mut self, stored: Stored) -> Option<PgFlowControl> {
        let (regions, ipool, epool) = self.regions(
            usize::from(stored.in_port),
            usize::from(stored.out_port),
            usize::from(stored.priority),
        );
        let size = u64::from(stored.bytes);
        match stored.place {
            Place::Shared => {
                self.count(regions, ipool, epool, size, false);
                None
            }
            Place::Reserved(kind) => {
                let index = regions[kind as usize];
                self.usage_mut(kind, index).reserved -= size;
                None
            }
            Place::Headroom => {
                let pg = self.priority_pg[usize::from(stored.priority)];
                let thresholds = self.lossless[usize::from(pg)]?;
                self.headroom[usize::from(stored.in_port) * PGS + usize::from(pg)].used -= size;
                self.flow_control(stored.in_port, pg, thresholds)
            }
        }
    }

    /// The use of `region` number `index` (its PG, TC or pool number) on `port`.
    pub fn region_usage(&self, region: Region, port: u16, index: u8) -> RegionUsage {
        self.usage(region, usize::from(port) * 8 + usize::from(index))
    }

    /// The shared bytes held in `pool`.
    pub fn pool_used(&self, pool: PoolId) -> u64 {
        let pools = match pool.direction {
            Direction::Ingress => &self.ipools,
            Direction::Egress => &self.epools,
        };
        pools[usize::from(pool.index)].used
    }

    /// The bytes in the headroom of `pg` on `port` now.
    pub fn headroom_used(&self, port: u16, pg: u8) -> u64 {
        self.headroom[usize::from(port) * PGS + usize::from(pg)].used
    }

    /// The most the headroom of `pg` on `port` has held.
    pub fn headroom_peak(&self, port: u16, pg: u8) -> u64 {
        self.headroom[usize::from(port) * PGS + usize::from(pg)].peak
    }

    /// Packets dropped on arrival at `port` with switch `priority`.
    pub fn drops(&self, port: u16, priority: u8) -> u64 {
        self.drops[usize::from(port) * PRIORITIES + usize::from(priority)]
    }

    /// The PG a switch priority is bound to.
    pub fn pg_of(&self, priority: u8) -> u8 {
        self.priority_pg[usize::from(priority)]
    }
}

/// The four regions in the manual's order.
const REGIONS: [Region; 4] = [
    Region::IPortPg,
    Region::IPort,
    Region::EPortTc,
    Region::EPort,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha(text: &str) -> Alpha {
        Alpha::try_from(AlphaText::Text(text.to_string())).unwrap()
    }

    /// A switch whose every priority goes to PG0 and TC0; ingress unlimited (iPool0 infinite,
    /// shared inf, no reserved) so the egress side alone decides, unless a test changes it.
    fn egress_only(epool: PoolConfig, tc0: Shared, tc_reserved: u64) -> BufferConfig {
        BufferConfig {
            shared_buffer_bytes: 100_000_000,
            pool: vec![
                PoolConfig {
                    name: PoolId::ingress(0),
                    size: PoolSize::Infinite,
                    mode: PoolMode::Static,
                },
                epool,
            ],
            priority_pg: [0; 8],
            priority_tc: [0; 8],
            pg: vec![PgConfig {
                pg: 0,
                pool: PoolId::ingress(0),
                kind: TrafficType::Lossy,
                reserved: 0,
                xoff: None,
                xon: None,
                shared: Shared::Infinite,
            }],
            tc: vec![TcConfig {
                tc: 0,
                pool: PoolId::egress(0),
                reserved: tc_reserved,
                shared: tc0,
            }],
            iport: vec![PortPoolConfig {
                pool: PoolId::ingress(0),
                reserved: 0,
                shared: Shared::Infinite,
            }],
            eport: vec![PortPoolConfig {
                pool: PoolId::egress(0),
                reserved: 0,
                shared: Shared::Infinite,
            }],
        }
    }

    fn dynamic_pool(bytes: u64) -> PoolConfig {
        PoolConfig {
            name: PoolId::egress(0),
            size: PoolSize::Bytes(bytes),
            mode: PoolMode::Dynamic,
        }
    }

    fn static_pool(size: PoolSize) -> PoolConfig {
        PoolConfig {
            name: PoolId::egress(0),
            size,
            mode: PoolMode::Static,
        }
    }

    /// Fills ePort.tc0 of ports 1..=`regions` from port 0, one packet each in turn, until each
    /// is refused; returns each region's occupancy. Panics if the regions take more than
    /// 100 MB between them: some bound is not working.
    fn fill_round_robin(buffer: &mut SwitchBuffer, regions: u16, packet: u32) -> Vec<u64> {
        let mut refused = vec![false; usize::from(regions)];
        for round in 0.. {
            assert!(
                round * u64::from(packet) < 100_000_000,
                "the regions never refuse a packet"
            );
            if !refused.contains(&false) {
                break;
            }
            for port in 1..=regions {
                let done = &mut refused[usize::from(port - 1)];
                if !*done {
                    *done = matches!(buffer.admit(0, port, 0, packet), Admission::Dropped(_));
                }
            }
        }
        (1..=regions)
            .map(|port| buffer.region_usage(Region::EPortTc, port, 0).shared)
            .collect()
    }

    #[test]
    fn dynamic_threshold_share_is_alpha_over_one_plus_n_alpha() {
        // B = 9,000,000 bytes, 1000-byte packets; each of N congested regions should hold
        // alpha x B / (1 + N x alpha), within one packet (1000 bytes):
        //   alpha 1/8, N 1: (B/8) / (9/8)   = B/9  = 1,000,000  (0.111 B)
        //   alpha 1/8, N 8: (B/8) / 2       = B/16 =   562,500  (0.0625 B)
        //   alpha 1,   N 1: B / 2                  = 4,500,000  (0.5 B)
        //   alpha 1,   N 8: B / 9                  = 1,000,000  (0.111 B)
        //   alpha 8,   N 1: 8B / 9                 = 8,000,000  (0.889 B)
        //   alpha 2,   N 4: 2B / 9                 = 2,000,000  (0.222 B)
        //   alpha 1/128, N 2: (B/128) / (130/128) = B/130 = 69,230.8
        const B: u64 = 9_000_000;
        const PACKET: u32 = 1000;
        let cases: [(&str, u16, f64); 7] = [
            ("1/8", 1, 1_000_000.0),
            ("1/8", 8, 562_500.0),
            ("1", 1, 4_500_000.0),
            ("1", 8, 1_000_000.0),
            ("8", 1, 8_000_000.0),
            ("2", 4, 2_000_000.0),
            ("1/128", 2, 69_230.8),
        ];
        for (text, n, expected) in cases {
            let config = egress_only(dynamic_pool(B), Shared::Alpha(alpha(text)), 0);
            let mut buffer = SwitchBuffer::new(&config, n + 1).unwrap();
            for (region, occupancy) in fill_round_robin(&mut buffer, n, PACKET)
                .into_iter()
                .enumerate()
            {
                let error = (occupancy as f64 - expected).abs();
                assert!(
                    error <= f64::from(PACKET),
                    "alpha {text}, N {n}, region {region}: {occupancy} bytes, expected {expected} +- {PACKET}"
                );
            }
        }
    }

    #[test]
    fn alpha_zero_and_infinity() {
        // Alpha 0: no shared space; the first packet is refused by ePort.tc0.
        let zero = egress_only(dynamic_pool(1_000_000), Shared::Alpha(Alpha::ZERO), 0);
        let mut buffer = SwitchBuffer::new(&zero, 2).unwrap();
        assert_eq!(
            buffer.admit(0, 1, 0, 100),
            Admission::Dropped(Refusal::Threshold(Region::EPortTc))
        );
        // Alpha infinity: one region takes the whole pool, 1,000,000 / 1000 = 1000 packets,
        // and the 1001st finds the pool full.
        let inf = egress_only(dynamic_pool(1_000_000), Shared::Alpha(Alpha::INFINITY), 0);
        let mut buffer = SwitchBuffer::new(&inf, 2).unwrap();
        assert_eq!(fill_round_robin(&mut buffer, 1, 1000), [1_000_000]);
        assert_eq!(
            buffer.admit(0, 1, 0, 1000),
            Admission::Dropped(Refusal::PoolFull(Direction::Egress))
        );
    }

    #[test]
    fn static_thresholds_in_bytes_and_percent() {
        // Static 30,000 bytes, 1000-byte packets: admitted while usage < 30,000, so 30 packets
        // (30,000 bytes) and the 31st refused; two regions each get theirs, the pool has room.
        let bytes = egress_only(
            static_pool(PoolSize::Bytes(100_000)),
            Shared::Bytes(30_000),
            0,
        );
        let mut buffer = SwitchBuffer::new(&bytes, 3).unwrap();
        assert_eq!(fill_round_robin(&mut buffer, 2, 1000), [30_000, 30_000]);
        assert_eq!(buffer.pool_used(PoolId::egress(0)), 60_000);
        // 25% of a 100,000-byte pool = 25,000 bytes: 25 packets.
        let percent = egress_only(
            static_pool(PoolSize::Bytes(100_000)),
            Shared::Percent(25),
            0,
        );
        let mut buffer = SwitchBuffer::new(&percent, 2).unwrap();
        assert_eq!(fill_round_robin(&mut buffer, 1, 1000), [25_000]);
        // 60% each of 100,000 for two regions: 60,000 + 60,000 is more than the pool, so the
        // pool stops them at 50,000 each (the pool binds the sum of shared use).
        let over = egress_only(
            static_pool(PoolSize::Bytes(100_000)),
            Shared::Percent(60),
            0,
        );
        let mut buffer = SwitchBuffer::new(&over, 3).unwrap();
        assert_eq!(fill_round_robin(&mut buffer, 2, 1000), [50_000, 50_000]);
        // Bytes in an infinite static pool ("shared quota ... gets set in bytes").
        let infinite = egress_only(static_pool(PoolSize::Infinite), Shared::Bytes(7_500), 0);
        let mut buffer = SwitchBuffer::new(&infinite, 2).unwrap();
        // 7 packets (7,000 < 7,500) then an 8th (7,000 < 7,500 still): 8,000, then refused.
        assert_eq!(fill_round_robin(&mut buffer, 1, 1000), [8_000]);
    }

    #[test]
    fn reserved_space_admits_when_shared_is_full() {
        // ePort.tc0: alpha 0 (no shared), reserved 5,000: five 1000-byte packets go to the
        // reserved quota, the sixth is dropped, counted for port 0 priority 2.
        let config = egress_only(dynamic_pool(1_000_000), Shared::Alpha(Alpha::ZERO), 5_000);
        let mut buffer = SwitchBuffer::new(&config, 2).unwrap();
        let mut stored = Vec::new();
        for _ in 0..5 {
            let Admission::Stored { stored: packet, .. } = buffer.admit(0, 1, 2, 1000) else {
                panic!("reserved space refused a packet")
            };
            assert_eq!(packet.place, Place::Reserved(Region::EPortTc));
            stored.push(packet);
        }
        assert_eq!(
            buffer.region_usage(Region::EPortTc, 1, 0),
            RegionUsage {
                reserved: 5_000,
                shared: 0
            }
        );
        assert_eq!(buffer.pool_used(PoolId::egress(0)), 0);
        assert_eq!(
            buffer.admit(0, 1, 2, 1000),
            Admission::Dropped(Refusal::Threshold(Region::EPortTc))
        );
        assert_eq!(buffer.drops(0, 2), 1);
        assert_eq!(buffer.drops(0, 0), 0);
        // One leaves: there is room for one more.
        assert_eq!(buffer.release(stored.pop().unwrap()), None);
        assert!(matches!(
            buffer.admit(0, 1, 2, 1000),
            Admission::Stored { .. }
        ));
    }

    /// Priority 0 lossy in PG0, priority 3 lossless in PG3 with headroom 10,000, Xoff 4,000,
    /// Xon 2,000; ePort.tc0 has no shared space and no reserved, and PG0 and iPort have
    /// reserved 3,000 each.
    fn lossy_and_lossless() -> BufferConfig {
        let mut config = egress_only(dynamic_pool(1_000_000), Shared::Alpha(Alpha::ZERO), 0);
        config.priority_pg[3] = 3;
        config.pg[0].reserved = 3_000;
        config.iport[0].reserved = 3_000;
        config.pg.push(PgConfig {
            pg: 3,
            pool: PoolId::ingress(0),
            kind: TrafficType::Lossless,
            reserved: 10_000,
            xoff: Some(4_000),
            xon: Some(2_000),
            shared: Shared::Infinite,
        });
        config
    }

    #[test]
    fn lossy_drops_where_lossless_goes_to_headroom() {
        let mut buffer = SwitchBuffer::new(&lossy_and_lossless(), 2).unwrap();
        // Lossy: shared refuses (ePort.tc0 alpha 0), then iPort.pg0's reserved takes three
        // 1000-byte packets and iPort's three more; the seventh is dropped.
        let places: Vec<_> = (0..7)
            .map(|_| match buffer.admit(0, 1, 0, 1000) {
                Admission::Stored { stored, .. } => Some(stored.place),
                Admission::Dropped(_) => None,
            })
            .collect();
        let pg = Some(Place::Reserved(Region::IPortPg));
        let port = Some(Place::Reserved(Region::IPort));
        assert_eq!(places, [pg, pg, pg, port, port, port, None]);
        assert_eq!(buffer.drops(0, 0), 1);
        // Lossless: ingress reserved space is not for it; it goes to headroom and is not
        // dropped.
        let Admission::Stored { stored, .. } = buffer.admit(0, 1, 3, 1000) else {
            panic!("lossless packet dropped")
        };
        assert_eq!(stored.place, Place::Headroom);
        assert_eq!(buffer.headroom_used(0, 3), 1000);
        assert_eq!(buffer.drops(0, 3), 0);
    }

    #[test]
    fn headroom_xoff_xon_and_full() {
        let mut buffer = SwitchBuffer::new(&lossy_and_lossless(), 2).unwrap();
        let mut stored = Vec::new();
        let mut events = Vec::new();
        for _ in 0..10 {
            let Admission::Stored {
                stored: packet,
                flow_control,
            } = buffer.admit(0, 1, 3, 1000)
            else {
                panic!("headroom refused a packet below its size")
            };
            stored.push(packet);
            events.push(flow_control.map(|event| event.transition));
        }
        // The 4th packet takes the headroom to 4,000 = Xoff; nothing before or after.
        let mut expected = [None; 10];
        expected[3] = Some(Transition::Xoff);
        assert_eq!(events, expected);
        // Full at 10,000: the 11th is dropped and counted against priority 3.
        assert_eq!(
            buffer.admit(0, 1, 3, 1000),
            Admission::Dropped(Refusal::HeadroomFull)
        );
        assert_eq!(buffer.drops(0, 3), 1);
        assert_eq!(buffer.headroom_peak(0, 3), 10_000);
        // Leaving: the 8th release takes it to 2,000 = Xon, with PG3's priorities.
        let releases: Vec<_> = stored.drain(..8).map(|p| buffer.release(p)).collect();
        assert_eq!(releases[..7], [None; 7]);
        assert_eq!(
            releases[7],
            Some(PgFlowControl {
                in_port: 0,
                pg: 3,
                priorities: 1 << 3,
                transition: Transition::Xon
            })
        );
        assert_eq!(buffer.headroom_used(0, 3), 2_000);
        assert_eq!(buffer.headroom_peak(0, 3), 10_000);
    }

    #[test]
    fn defaults_are_the_manuals_out_of_box_configuration() {
        let config = BufferConfig::default();
        config.validate().unwrap();
        let whole = PoolSize::Bytes(DEFAULT_SHARED_BUFFER_BYTES);
        assert_eq!(
            config.pool,
            [
                PoolConfig {
                    name: PoolId::ingress(0),
                    size: whole,
                    mode: PoolMode::Dynamic
                },
                PoolConfig {
                    name: PoolId::egress(0),
                    size: whole,
                    mode: PoolMode::Dynamic
                },
            ]
        );
        let alpha_8 = Shared::Alpha(alpha("8"));
        assert_eq!(config.priority_pg, [0; 8]);
        assert_eq!(config.priority_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(config.pg.len(), 1);
        assert_eq!(
            (
                config.pg[0].pg,
                config.pg[0].kind,
                config.pg[0].reserved,
                config.pg[0].shared
            ),
            (0, TrafficType::Lossy, 0, alpha_8)
        );
        assert!(
            config
                .tc
                .iter()
                .enumerate()
                .all(|(i, tc)| usize::from(tc.tc) == i
                    && tc.reserved == 1024
                    && tc.shared == alpha_8)
        );
        assert_eq!(config.tc.len(), 8);
        for port in [&config.iport, &config.eport] {
            assert_eq!(port.len(), 1);
            assert_eq!((port[0].reserved, port[0].shared), (10 * 1024, alpha_8));
        }
        // A packet goes to shared space in an empty default switch.
        let mut buffer = SwitchBuffer::new(&config, 4).unwrap();
        let Admission::Stored { stored, .. } = buffer.admit(0, 3, 5, 1500) else {
            panic!("default switch dropped a packet")
        };
        assert_eq!(stored.place, Place::Shared);
        assert_eq!(buffer.region_usage(Region::EPortTc, 3, 5).shared, 1500);
        assert_eq!(buffer.pool_used(PoolId::ingress(0)), 1500);
    }

    #[test]
    fn the_manuals_lossless_example_parses() {
        // The manual's "Configuration Example": lossless switch-priority 1 in PG1 on iPool1
        // (13680063 bytes, dynamic), headroom 85k with Xoff and Xon 20k, alpha 1; egress
        // ePool1 static infinite with shared inf.
        let text = r#"
            priority_pg = [0, 1, 0, 0, 0, 0, 0, 0]
            [[pool]]
            name = "iPool0"
            size = 13680063
            type = "dynamic"
            [[pool]]
            name = "ePool0"
            size = 13680063
            type = "dynamic"
            [[pool]]
            name = "iPool1"
            size = 13680063
            type = "dynamic"
            [[pool]]
            name = "ePool1"
            size = "inf"
            type = "static"
            [[pg]]
            pg = 0
            pool = "iPool0"
            type = "lossy"
            shared = { alpha = 8 }
            [[pg]]
            pg = 1
            pool = "iPool1"
            type = "lossless"
            reserved = 87040
            xoff = 20480
            xon = 20480
            shared = { alpha = 1 }
            [[tc]]
            tc = 0
            pool = "ePool0"
            reserved = 1024
            shared = { alpha = "8" }
            [[tc]]
            tc = 1
            pool = "ePool1"
            shared = "inf"
            [[tc]]
            tc = 2
            pool = "ePool0"
            shared = { alpha = "1/128" }
            [[iport]]
            pool = "iPool0"
            reserved = 10240
            shared = { alpha = 8 }
            [[iport]]
            pool = "iPool1"
            reserved = 10240
            shared = { alpha = 1 }
            [[eport]]
            pool = "ePool0"
            reserved = 10240
            shared = { alpha = 8 }
            [[eport]]
            pool = "ePool1"
            shared = "inf"
        "#;
        let mut config: BufferConfig = toml::from_str(text).unwrap();
        // TCs 3-7 are bound by default (i to i); bind them to TC 2 here.
        config.priority_tc = [0, 1, 2, 2, 2, 2, 2, 2];
        config.validate().unwrap();
        assert_eq!(config.pg[1].xoff, Some(20_480));
        assert_eq!(
            config.tc[2].shared,
            Shared::Alpha(Alpha::power_of_two(-7).unwrap())
        );
        let buffer = SwitchBuffer::new(&config, 2).unwrap();
        assert_eq!(buffer.pg_of(1), 1);
    }

    #[test]
    fn alpha_values_and_errors() {
        for (text, shown) in [
            ("0", "0"),
            ("1/128", "1/128"),
            ("1/2", "1/2"),
            ("1", "1"),
            ("64", "64"),
            ("infinity", "infinity"),
        ] {
            assert_eq!(alpha(text).to_string(), shown);
        }
        assert_eq!(
            Alpha::try_from(AlphaText::Number(16)),
            Ok(Alpha::power_of_two(4).unwrap())
        );
        for bad in ["3", "1/3", "128", "1/256", "-1", "2/4", "x"] {
            let error = Alpha::try_from(AlphaText::Text(bad.to_string())).unwrap_err();
            assert!(error.contains(&format!("`{bad}`")), "{error}");
        }
        let error = toml::from_str::<PgConfig>(
            "pg = 0\npool = \"iPool0\"\ntype = \"lossy\"\nshared = { alpha = 3 }\n",
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("alpha `3` is not one of"),
            "{error}"
        );
        let error =
            toml::from_str::<PoolConfig>("name = \"iPool9\"\nsize = 1\ntype = \"static\"\n")
                .unwrap_err();
        assert!(
            error.to_string().contains("`iPool9` is not a data pool"),
            "{error}"
        );
    }

    #[test]
    fn validate_errors() {
        let lossy = lossy_and_lossless;
        let cases: Vec<(BufferConfig, BufferError)> = vec![
            (
                BufferConfig {
                    shared_buffer_bytes: 0,
                    ..BufferConfig::default()
                },
                BufferError::NoBuffer,
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.pool.push(c.pool[0]);
                    c
                },
                BufferError::DuplicatePool(PoolId::ingress(0)),
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.pool[1].size = PoolSize::Bytes(DEFAULT_SHARED_BUFFER_BYTES + 1);
                    c
                },
                BufferError::PoolTooLarge {
                    pool: PoolId::egress(0),
                    size: DEFAULT_SHARED_BUFFER_BYTES + 1,
                    buffer: DEFAULT_SHARED_BUFFER_BYTES,
                },
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.tc[7].tc = 8;
                    c
                },
                BufferError::OutOfRange(name(Region::EPortTc, 8)),
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.tc[7].tc = 6;
                    c
                },
                BufferError::DuplicateRegion(name(Region::EPortTc, 6)),
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.pg[0].pool = PoolId::ingress(2);
                    c
                },
                BufferError::UnknownPool {
                    region: name(Region::IPortPg, 0),
                    pool: PoolId::ingress(2),
                },
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.eport[0].pool = PoolId::ingress(0);
                    c
                },
                BufferError::WrongDirection {
                    region: name(Region::EPort, 0),
                    pool: PoolId::ingress(0),
                    side: "egress",
                    wanted: "ePool",
                },
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.priority_pg[5] = 2;
                    c
                },
                BufferError::MissingRegion {
                    priority: 5,
                    region: name(Region::IPortPg, 2),
                },
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.eport.clear();
                    c
                },
                BufferError::MissingRegion {
                    priority: 0,
                    region: name(Region::EPort, 0),
                },
            ),
            (
                {
                    let mut c = BufferConfig::default();
                    c.tc[0].shared = Shared::Bytes(100);
                    c
                },
                BufferError::SharedModeMismatch {
                    region: name(Region::EPortTc, 0),
                    shared: Shared::Bytes(100),
                    pool: PoolId::egress(0),
                    mode: "dynamic",
                },
            ),
            (
                egress_only(
                    static_pool(PoolSize::Bytes(1000)),
                    Shared::Alpha(Alpha::ZERO),
                    0,
                ),
                BufferError::SharedModeMismatch {
                    region: name(Region::EPortTc, 0),
                    shared: Shared::Alpha(Alpha::ZERO),
                    pool: PoolId::egress(0),
                    mode: "static",
                },
            ),
            (
                egress_only(static_pool(PoolSize::Infinite), Shared::Percent(10), 0),
                BufferError::PercentOfInfinitePool {
                    region: name(Region::EPortTc, 0),
                    percent: 10,
                    pool: PoolId::egress(0),
                },
            ),
            (
                egress_only(static_pool(PoolSize::Bytes(1000)), Shared::Percent(101), 0),
                BufferError::BadPercent {
                    region: name(Region::EPortTc, 0),
                    percent: 101,
                },
            ),
            (
                {
                    let mut c = lossy();
                    c.pg[1].xon = None;
                    c
                },
                BufferError::LosslessWithoutThresholds(name(Region::IPortPg, 3)),
            ),
            (
                {
                    let mut c = lossy();
                    c.pg[0].xoff = Some(1);
                    c
                },
                BufferError::ThresholdsOnLossy(name(Region::IPortPg, 0)),
            ),
            (
                {
                    let mut c = lossy();
                    c.pg[1].xoff = Some(10_001);
                    c
                },
                BufferError::BadThresholds {
                    region: name(Region::IPortPg, 3),
                    xon: 2_000,
                    xoff: 10_001,
                    reserved: 10_000,
                },
            ),
            (
                {
                    let mut c = lossy();
                    c.pg[1].xon = Some(5_000);
                    c
                },
                BufferError::BadThresholds {
                    region: name(Region::IPortPg, 3),
                    xon: 5_000,
                    xoff: 4_000,
                    reserved: 10_000,
                },
            ),
        ];
        for (config, expected) in cases {
            assert_eq!(config.validate(), Err(expected.clone()), "{expected}");
            assert!(SwitchBuffer::new(&config, 2).is_err());
        }
        // The messages name the region as the manual does.
        assert_eq!(
            BufferError::BadPercent {
                region: name(Region::EPortTc, 0),
                percent: 101
            }
            .to_string(),
            "ePort.tc0 has shared 101%: give 0-100"
        );
        assert_eq!(
            BufferError::MissingRegion {
                priority: 0,
                region: name(Region::EPort, 0)
            }
            .to_string(),
            "switch priority 0 is bound to ePort.ePool0, which is not configured"
        );
    }

    mod invariants {
        use super::*;
        use proptest::prelude::*;

        /// A small switch: 3 ports, priorities 0-3 lossy in PG0, 4-7 lossless in PG1 (when
        /// `lossless`), TCs by priority / 2 on two egress pools; quotas from the arguments.
        fn config(
            exponent: i8,
            pool: u64,
            reserved: u64,
            headroom: u64,
            lossless: bool,
        ) -> BufferConfig {
            let shared = Shared::Alpha(Alpha::power_of_two(exponent).unwrap());
            let dynamic = |name, size| PoolConfig {
                name,
                size: PoolSize::Bytes(size),
                mode: PoolMode::Dynamic,
            };
            let pg = |pg, kind, xoff: Option<u64>| PgConfig {
                pg,
                pool: PoolId::ingress(0),
                kind,
                reserved: if xoff.is_some() { headroom } else { reserved },
                xoff,
                xon: xoff.map(|x| x / 2),
                shared,
            };
            BufferConfig {
                shared_buffer_bytes: 1 << 40,
                pool: vec![
                    dynamic(PoolId::ingress(0), pool),
                    dynamic(PoolId::egress(0), pool),
                    dynamic(PoolId::egress(1), pool / 2),
                ],
                priority_pg: [0, 0, 0, 0, 1, 1, 1, 1],
                priority_tc: [0, 0, 1, 1, 2, 2, 3, 3],
                pg: vec![
                    pg(0, TrafficType::Lossy, None),
                    if lossless {
                        pg(1, TrafficType::Lossless, Some(headroom / 2))
                    } else {
                        pg(1, TrafficType::Lossy, None)
                    },
                ],
                tc: (0..4)
                    .map(|tc| TcConfig {
                        tc,
                        pool: PoolId::egress(tc / 2),
                        reserved,
                        shared,
                    })
                    .collect(),
                iport: vec![PortPoolConfig {
                    pool: PoolId::ingress(0),
                    reserved,
                    shared,
                }],
                eport: (0..2)
                    .map(|p| PortPoolConfig {
                        pool: PoolId::egress(p),
                        reserved,
                        shared,
                    })
                    .collect(),
            }
        }

        /// The byte counters of a buffer (not its pause flags or counters).
        fn occupancy(buffer: &SwitchBuffer) -> impl PartialEq + std::fmt::Debug + use<> {
            (
                buffer.ipg.clone(),
                buffer.iport.clone(),
                buffer.etc.clone(),
                buffer.eport.clone(),
                buffer.ipools,
                buffer.epools,
                buffer.headroom.iter().map(|h| h.used).collect::<Vec<_>>(),
            )
        }

        fn check_bounds(buffer: &SwitchBuffer) -> Result<(), TestCaseError> {
            for pool in buffer.ipools.iter().chain(&buffer.epools) {
                if let Some(size) = pool.size {
                    prop_assert!(pool.used <= size, "pool {pool:?} over its size");
                }
            }
            for (kind, usages) in [
                (Region::IPortPg, &buffer.ipg),
                (Region::IPort, &buffer.iport),
                (Region::EPortTc, &buffer.etc),
                (Region::EPort, &buffer.eport),
            ] {
                for (index, usage) in usages.iter().enumerate() {
                    prop_assert!(usage.reserved <= buffer.quota(kind, index).reserved);
                }
            }
            for (index, headroom) in buffer.headroom.iter().enumerate() {
                prop_assert!(headroom.used <= buffer.pg_quota[index % PGS].reserved);
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn never_over_quota_and_release_restores(
                exponent in -7i8..=6,
                pool in 1_000u64..200_000,
                reserved in 0u64..5_000,
                headroom in 2u64..20_000,
                lossless: bool,
                ops in proptest::collection::vec(
                    (any::<bool>(), 0u16..3, 0u16..3, 0u8..8, 64u32..9_000, any::<prop::sample::Index>()),
                    1..300,
                ),
            ) {
                let config = config(exponent, pool, reserved, headroom, lossless);
                let mut buffer = SwitchBuffer::new(&config, 3).unwrap();
                let mut held = Vec::new();
                for (arrive, in_port, out_port, priority, bytes, pick) in ops {
                    if arrive || held.is_empty() {
                        // Admitting and at once releasing leaves every byte counter as it was.
                        let before = occupancy(&buffer);
                        let mut probe = buffer.clone();
                        if let Admission::Stored { stored, .. } =
                            probe.admit(in_port, out_port, priority, bytes)
                        {
                            probe.release(stored);
                        }
                        prop_assert_eq!(occupancy(&probe), before);
                        if let Admission::Stored { stored, .. } =
                            buffer.admit(in_port, out_port, priority, bytes)
                        {
                            held.push(stored);
                        }
                    } else {
                        buffer.release(held.swap_remove(pick.index(held.len())));
                    }
                    check_bounds(&buffer)?;
                }
                for stored in held.drain(..) {
                    buffer.release(stored);
                }
                let empty = SwitchBuffer::new(&config, 3).unwrap();
                prop_assert_eq!(occupancy(&buffer), occupancy(&empty));
            }
        }
    }
}
