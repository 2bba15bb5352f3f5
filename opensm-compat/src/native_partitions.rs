//! ibqos.toml's `[partitions]`: a partitions.conf as tables, one `[[partitions.partition]]` per
//! definition in file order, every value of [`Partitions`] kept. P_Keys, GUIDs, Q_Keys and flow
//! labels are strings (`"0x7fff"`, decimal also read) because they are hex numbers, GUIDs too
//! wide for TOML's signed integers.
//!
//! ```toml
//! [[partitions.partition]]
//! name = "Default"
//! pkey = "0x7fff"
//! ipoib = true
//! mtu = 5
//! members = [{ group = "ALL", membership = "full" }]
//! [[partitions.partition]]
//! name = "storage"
//! pkey = "0x8001"
//! defmember = "full"
//! sl = 3
//! scope = [2, 5]
//! members = [
//!   { guid = "0x0002c90000000001" },
//!   { group = "ALL_CAS", membership = "limited" },
//! ]
//! mcgroups = [{ mgid = "ff15::7", tclass = 3, flow_label = "0x12345" }]
//! ```
//!
//! A definition says what its partitions.conf header says: `name`, `pkey` (left out: OpenSM
//! generates one, or adds to the partition of the same name), `ipoib`, `indx0`, `defmember`
//! (`limited`, `full` or `both`; default `limited`), and its group flags `mtu` (default 4),
//! `rate` (3), `sl` (0-15), `scope` (1-15 each), `q_key`, `tclass` and `flow_label` (20 bits).
//! A member names one port by `guid` or ports by `group` (`ALL`, `ALL_CAS`, `ALL_SWITCHES`,
//! `ALL_ROUTERS`, `SELF`); without `membership` it has the definition's `defmember`. An mcgroup
//! is the group as OpenSM creates it: a flag it leaves out is its definition's (but `tclass`,
//! 0), and nothing is filled in: an IPoIB group's mgid carries its P_Key and its `q_key` is
//! given.

use std::net::Ipv6Addr;

use ibqos_mad::{Gid, Guid};
use ibqos_qos::partitions::{
    GroupFlags, McGroup, Member, Members, Membership, Partition, Partitions,
};
use serde::Deserialize;

use crate::native_policy::{Table, number, toml_str};
use crate::partitions::write::{GROUPS, MEMBERSHIPS, group, membership};

/// A number of at most `BITS` bits, written as a string.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "String")]
struct Hex<const BITS: u32>(u64);

impl<const BITS: u32> TryFrom<String> for Hex<BITS> {
    type Error = String;
    fn try_from(s: String) -> Result<Hex<BITS>, String> {
        let n = number(&s)?;
        if BITS < 64 && n >> BITS != 0 {
            return Err(format!("`{s}` is wider than {BITS} bits"));
        }
        Ok(Hex(n))
    }
}

/// An SL, 0-15.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "i64")]
struct Sl(u8);

impl TryFrom<i64> for Sl {
    type Error = String;
    fn try_from(v: i64) -> Result<Sl, String> {
        u8::try_from(v)
            .ok()
            .filter(|sl| *sl <= 15)
            .map(Sl)
            .ok_or_else(|| format!("sl {v} is out of range 0-15"))
    }
}

/// A multicast scope, 1-15.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "i64")]
struct Scope(u8);

impl TryFrom<i64> for Scope {
    type Error = String;
    fn try_from(v: i64) -> Result<Scope, String> {
        u8::try_from(v)
            .ok()
            .filter(|scope| (1..=15).contains(scope))
            .map(Scope)
            .ok_or_else(|| format!("scope {v} is out of range 1-15"))
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(try_from = "String")]
struct MembershipName(Membership);

impl TryFrom<String> for MembershipName {
    type Error = String;
    fn try_from(s: String) -> Result<MembershipName, String> {
        MEMBERSHIPS
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(m, _)| MembershipName(*m))
            .ok_or_else(|| format!("membership `{s}` is not full, limited or both"))
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "String")]
struct GroupName(Members);

impl TryFrom<String> for GroupName {
    type Error = String;
    fn try_from(s: String) -> Result<GroupName, String> {
        GROUPS
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(m, _)| GroupName(*m))
            .ok_or_else(|| {
                let names: Vec<&str> = GROUPS.iter().map(|(_, name)| *name).collect();
                format!("group `{s}` is not one of {}", names.join(", "))
            })
    }
}

/// A multicast GID in IPv6 notation.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "String")]
struct Mgid(Gid);

impl TryFrom<String> for Mgid {
    type Error = String;
    fn try_from(s: String) -> Result<Mgid, String> {
        s.parse::<Ipv6Addr>()
            .ok()
            .filter(|a| a.octets()[0] == 0xff)
            .map(|a| Mgid(Gid::from_bytes(a.octets())))
            .ok_or_else(|| format!("mgid `{s}` is not a multicast GID (ff..::..)"))
    }
}

/// Declares a table with the group flags after its own fields, and `over`: its flags, each
/// left out taken from a base.
macro_rules! with_group_flags {
    ($(#[$meta:meta])* struct $name:ident { $($(#[$fmeta:meta])* $field:ident: $t:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            $($(#[$fmeta])* $field: $t,)*
            mtu: Option<u32>,
            rate: Option<u32>,
            sl: Option<Sl>,
            scope: Option<Vec<Scope>>,
            q_key: Option<Hex<32>>,
            tclass: Option<u8>,
            flow_label: Option<Hex<20>>,
        }

        impl $name {
            fn over(&self, base: &GroupFlags) -> GroupFlags {
                // The `Hex` widths make the casts exact.
                GroupFlags {
                    mtu: self.mtu.unwrap_or(base.mtu),
                    rate: self.rate.unwrap_or(base.rate),
                    sl: self.sl.map_or(base.sl, |sl| sl.0),
                    scope_mask: self.scope.as_ref().map_or(base.scope_mask, |scopes| {
                        scopes.iter().fold(0, |mask, s| mask | 1 << s.0)
                    }),
                    q_key: self.q_key.map_or(base.q_key, |q| q.0 as u32),
                    tclass: self.tclass.unwrap_or(base.tclass),
                    flow_label: self.flow_label.map_or(base.flow_label, |f| f.0 as u32),
                }
            }
        }
    };
}

/// The flags of `flags` that differ from `base`, as `key = value` pairs.
fn flag_pairs(flags: &GroupFlags, base: &GroupFlags) -> Vec<(&'static str, String)> {
    let mut pairs = Vec::new();
    let mut differs = |key, a: u32, b: u32, value: String| {
        if a != b {
            pairs.push((key, value));
        }
    };
    differs("mtu", flags.mtu, base.mtu, flags.mtu.to_string());
    differs("rate", flags.rate, base.rate, flags.rate.to_string());
    differs("sl", flags.sl.into(), base.sl.into(), flags.sl.to_string());
    let scopes = (1..16u8)
        .filter(|s| flags.scope_mask & 1 << s != 0)
        .map(|s| s.to_string());
    let scopes: Vec<String> = scopes.collect();
    differs(
        "scope",
        flags.scope_mask.into(),
        base.scope_mask.into(),
        format!("[{}]", scopes.join(", ")),
    );
    differs(
        "q_key",
        flags.q_key,
        base.q_key,
        toml_str(&format!("0x{:04x}", flags.q_key)),
    );
    differs(
        "tclass",
        flags.tclass.into(),
        base.tclass.into(),
        flags.tclass.to_string(),
    );
    differs(
        "flow_label",
        flags.flow_label,
        base.flow_label,
        toml_str(&format!("0x{:x}", flags.flow_label)),
    );
    pairs
}

/// A member as written; [`NativeMember`] is it checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMember {
    guid: Option<Hex<64>>,
    group: Option<GroupName>,
    membership: Option<MembershipName>,
}

#[derive(Debug, Deserialize)]
#[serde(try_from = "RawMember")]
struct NativeMember {
    ports: Members,
    membership: Option<Membership>,
}

impl TryFrom<RawMember> for NativeMember {
    type Error = String;
    fn try_from(raw: RawMember) -> Result<NativeMember, String> {
        let ports = match (raw.guid, raw.group) {
            (Some(Hex(0)), None) => return Err("guid 0 names no port".to_string()),
            (Some(Hex(guid)), None) => Members::Port(Guid(guid)),
            (None, Some(group)) => group.0,
            _ => return Err("a member has either a guid or a group".to_string()),
        };
        Ok(NativeMember {
            ports,
            membership: raw.membership.map(|m| m.0),
        })
    }
}

with_group_flags! {
    /// An mcgroup: its flags over its definition's.
    struct NativeGroup {
        mgid: Mgid,
    }
}

with_group_flags! {
    /// A definition: its flags over [`GroupFlags::default`].
    struct NativePartition {
        #[serde(default)]
        name: String,
        pkey: Option<Hex<16>>,
        #[serde(default)]
        ipoib: bool,
        #[serde(default)]
        indx0: bool,
        #[serde(default)]
        defmember: MembershipName,
        #[serde(default)]
        members: Vec<NativeMember>,
        #[serde(default)]
        mcgroups: Vec<NativeGroup>,
    }
}

/// `[partitions]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NativePartitions {
    #[serde(default)]
    partition: Vec<NativePartition>,
}

impl NativePartitions {
    /// The partitions the tables say; every value was checked as it was read.
    pub(crate) fn into_partitions(self) -> Partitions {
        let partitions = self.partition.into_iter().map(partition).collect();
        Partitions { partitions }
    }
}

fn partition(p: NativePartition) -> Partition {
    let flags = p.over(&GroupFlags::default());
    let default_membership = p.defmember.0;
    let members = p.members.into_iter().map(|m| Member {
        ports: m.ports,
        membership: m.membership.unwrap_or(default_membership),
    });
    let mcgroups = p.mcgroups.iter().map(|g| McGroup {
        mgid: g.mgid.0,
        flags: g.over(&inherited(&flags)),
    });
    Partition {
        name: p.name,
        pkey: p.pkey.map(|k| k.0 as u16),
        ipoib: p.ipoib,
        indx0: p.indx0,
        default_membership,
        flags,
        members: members.collect(),
        mcgroups: mcgroups.collect(),
    }
}

/// What an mcgroup takes from its definition: every flag but the TClass.
fn inherited(header: &GroupFlags) -> GroupFlags {
    GroupFlags {
        tclass: 0,
        ..*header
    }
}

/// An inline table of `pairs`.
fn inline(pairs: &[(&str, String)]) -> String {
    let items: Vec<String> = pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{{ {} }}", items.join(", "))
}

/// A TOML array of inline tables, one a line.
fn inline_list(tables: Vec<String>) -> String {
    if tables.is_empty() {
        return "[]".to_string();
    }
    let lines: Vec<String> = tables.iter().map(|t| format!("  {t},")).collect();
    format!("[\n{}\n]", lines.join("\n"))
}

/// The `[partitions]` tables for `p`.
pub(crate) fn write(p: &Partitions) -> String {
    let mut out = String::from("\n[partitions]\n");
    for part in &p.partitions {
        out.push_str("\n[[partitions.partition]]\n");
        let mut t = Table(&mut out);
        t.kv("name", toml_str(&part.name));
        t.opt("pkey", part.pkey.map(|k| toml_str(&format!("0x{k:04x}"))));
        for (key, on) in [("ipoib", part.ipoib), ("indx0", part.indx0)] {
            if on {
                t.kv(key, "true".to_string());
            }
        }
        if part.default_membership != Membership::default() {
            t.kv("defmember", toml_str(membership(part.default_membership)));
        }
        for (key, value) in flag_pairs(&part.flags, &GroupFlags::default()) {
            t.kv(key, value);
        }
        let members = part.members.iter().map(|m| {
            let ports = match (m.ports, group(m.ports)) {
                (Members::Port(guid), _) => ("guid", format!("0x{:016x}", guid.0)),
                (_, name) => ("group", name.unwrap_or_default().to_string()),
            };
            inline(&[
                (ports.0, toml_str(&ports.1)),
                ("membership", toml_str(membership(m.membership))),
            ])
        });
        t.kv("members", inline_list(members.collect()));
        let groups = part.mcgroups.iter().map(|g| {
            let mgid = Ipv6Addr::from(g.mgid.to_bytes()).to_string();
            let mut pairs = vec![("mgid", toml_str(&mgid))];
            pairs.extend(flag_pairs(&g.flags, &inherited(&part.flags)));
            inline(&pairs)
        });
        t.kv("mcgroups", inline_list(groups.collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native;

    fn first_error(text: &str) -> (usize, usize, String) {
        let Err(diags) = native::read("t.toml", text.as_bytes()) else {
            panic!("accepted: {text}");
        };
        let d = &diags[0];
        let l = d.location.as_ref().expect("located");
        (l.line, l.col, d.message.clone())
    }

    /// A value's own mistake points at the value; a member's (or a list's) at its list.
    #[test]
    fn every_mistake_is_an_error_at_its_place() {
        let mut wrong = Vec::new();
        for (text, at, says) in [
            (
                "[[partitions.partition]]\nname = \"a\"\npky = \"0x1\"\n",
                (3, 1),
                "unknown field `pky`",
            ),
            (
                "[[partitions.partition]]\npkey = \"0x10000\"\n",
                (2, 8),
                "16 bits",
            ),
            (
                "[[partitions.partition]]\npkey = \"7fff\"\n",
                (2, 8),
                "not a number",
            ),
            ("[[partitions.partition]]\npkey = 32767\n", (2, 8), "string"),
            (
                "[[partitions.partition]]\nmembers = [{ group = \"ALL\", membership = \"ful\" }]\n",
                (2, 42),
                "membership `ful`",
            ),
            (
                "[[partitions.partition]]\ndefmember = \"partial\"\n",
                (2, 13),
                "membership `partial`",
            ),
            (
                "[[partitions.partition]]\nmembers = [{ group = \"ALL_HCAS\" }]\n",
                (2, 22),
                "group `ALL_HCAS`",
            ),
            (
                "[[partitions.partition]]\nmembers = [{ guid = \"0x1\", group = \"ALL\" }]\n",
                (2, 11),
                "either a guid or a group",
            ),
            (
                "[[partitions.partition]]\nmembers = [{ guid = \"0\" }]\n",
                (2, 11),
                "guid 0",
            ),
            (
                "[[partitions.partition]]\nmembers = [{ guid = \"0x1\", full = true }]\n",
                (2, 28),
                "unknown field `full`",
            ),
            ("[[partitions.partition]]\nsl = 16\n", (2, 6), "0-15"),
            ("[[partitions.partition]]\nscope = [0]\n", (2, 9), "1-15"),
            (
                "[[partitions.partition]]\nflow_label = \"0x100000\"\n",
                (2, 14),
                "20 bits",
            ),
            (
                "[[partitions.partition]]\nmcgroups = [{ mgid = \"fe80::1\" }]\n",
                (2, 22),
                "not a multicast GID",
            ),
            ("[partitions]\npartitions = []\n", (2, 1), "unknown field"),
        ] {
            let (line, col, message) = first_error(text);
            if (line, col) != at || !message.contains(says) {
                wrong.push(format!("{text}: {line}:{col}: {message}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_module_example_is_valid() {
        let example: String = include_str!("native_partitions.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .skip_while(|l| *l != " ```toml")
            .skip(1)
            .take_while(|l| *l != " ```")
            .map(|l| format!("{}\n", l.trim_start()))
            .collect();
        let s = native::read("example.toml", example.as_bytes()).expect("valid");
        assert_eq!(s.partitions.expect("partitions").partitions.len(), 2);
    }

    #[test]
    fn members_take_defmember_and_mcgroups_their_definitions_flags() {
        let s = native::read(
            "t.toml",
            b"[[partitions.partition]]\nname = \"p\"\ndefmember = \"both\"\nmtu = 5\ntclass = 2\n\
              scope = [2]\nmembers = [{ group = \"SELF\" }]\n\
              mcgroups = [{ mgid = \"ff12::1\", rate = 6 }]\n",
        )
        .expect("valid");
        let p = &s.partitions.expect("partitions").partitions[0];
        assert_eq!(p.pkey, None);
        assert_eq!(p.members[0].membership, Membership::Both);
        assert_eq!(p.flags.scope_mask, 1 << 2);
        let g = p.mcgroups[0].flags;
        assert_eq!((g.mtu, g.rate, g.tclass, g.scope_mask), (5, 6, 0, 1 << 2));
    }
}
