//! A table the sweep writes with a Set and verifies by its echo: the QoS manager's SL2VL and
//! VLArb Sets, the partition manager's P_Key blocks, the multicast manager's MFT blocks.

use ibqos_mad::{
    Attribute, Guid, MftModifier, MulticastForwardingTableRepr, PKeyTableModifier, PKeyTableRepr,
    SlToVlMappingTableRepr, SlToVlModifier, VlArbModifier, VlArbitrationTableRepr,
};

use super::subnet::PortKey;

/// One Set: which node, with what modifier, and the ports whose tables it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableWrite {
    pub node: Guid,
    /// The port whose directed route reaches the node (a CA answers for its arrival port).
    pub via: PortKey,
    pub block: TableBlock,
    pub modifier: TableModifier,
    /// The ports this Set programs, for the per-port summary.
    pub ports: Ports,
}

/// The ports a table Set programs: nearly always one (a VLArb block, a P_Key block, a CA's
/// SL2VL), which is kept without an allocation of its own; a sweep plans one Set per port and
/// block, 117,000 on a 10,416-node fat tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ports {
    One(PortKey),
    Many(Box<[PortKey]>),
}

impl std::ops::Deref for Ports {
    type Target = [PortKey];

    fn deref(&self) -> &[PortKey] {
        match self {
            Ports::One(port) => std::slice::from_ref(port),
            Ports::Many(ports) => ports,
        }
    }
}

impl From<PortKey> for Ports {
    fn from(port: PortKey) -> Ports {
        Ports::One(port)
    }
}

impl From<Vec<PortKey>> for Ports {
    fn from(ports: Vec<PortKey>) -> Ports {
        match ports[..] {
            [port] => Ports::One(port),
            _ => Ports::Many(ports.into_boxed_slice()),
        }
    }
}

impl FromIterator<PortKey> for Ports {
    fn from_iter<I: IntoIterator<Item = PortKey>>(ports: I) -> Ports {
        Ports::from(ports.into_iter().collect::<Vec<_>>())
    }
}

impl TableWrite {
    /// How long the Set's answer may take.
    pub fn answer_wait(&self) -> AnswerWait {
        match self.modifier {
            TableModifier::SlToVl(SlToVlModifier::AllInputs { .. } | SlToVlModifier::All) => {
                AnswerWait::Long
            }
            _ => AnswerWait::Usual,
        }
    }
}

/// What a table Set writes: one block of one of the four tables the SM programs. A sweep plans
/// a Set per port and table block (65,536 VLArb blocks on a 10,416-node fat tree), so this is
/// kept to the tables' own size rather than that of any [`Attribute`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableBlock {
    SlToVl(SlToVlMappingTableRepr),
    VlArb(VlArbitrationTableRepr),
    PKey(PKeyTableRepr),
    Mft(MulticastForwardingTableRepr),
}

impl TableBlock {
    /// The attribute a Set of this block carries, and its echo.
    pub fn attribute(self) -> Attribute {
        match self {
            TableBlock::SlToVl(table) => Attribute::SlToVlMappingTable(table),
            TableBlock::VlArb(table) => Attribute::VlArbitrationTable(table),
            TableBlock::PKey(table) => Attribute::PKeyTable(table),
            TableBlock::Mft(table) => Attribute::MulticastForwardingTable(table),
        }
    }
}

/// The attribute modifier of a table Set, in the type mad gives that table's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableModifier {
    SlToVl(SlToVlModifier),
    VlArb(VlArbModifier),
    PKey(PKeyTableModifier),
    Mft(MftModifier),
}

impl From<TableModifier> for u32 {
    fn from(modifier: TableModifier) -> u32 {
        match modifier {
            TableModifier::SlToVl(m) => m.into(),
            TableModifier::VlArb(m) => m.into(),
            TableModifier::PKey(m) => m.into(),
            TableModifier::Mft(m) => m.into(),
        }
    }
}

/// How long a Set waits for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerWait {
    /// The scheduler's timeout, as every SMP.
    Usual,
    /// OpenSM's long transaction timeout: an all-ports SL2VL Set, which a switch takes longer
    /// to apply.
    Long,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::VlArbBlock;

    #[test]
    fn one_port_is_held_inline_and_every_list_reads_as_its_ports() {
        let (a, b) = (PortKey::new(1, 1), PortKey::new(1, 2));
        assert_eq!(Ports::from(vec![a]), Ports::One(a));
        assert_eq!(&*Ports::from(vec![a]), &[a]);
        assert_eq!(&*Ports::from(vec![a, b]), &[a, b]);
        assert!(Ports::from(Vec::new()).is_empty());
        assert_eq!([b].into_iter().collect::<Ports>(), Ports::One(b));
    }

    #[test]
    fn only_an_all_ports_sl2vl_set_waits_long_and_modifiers_are_their_wire_values() {
        let write = |modifier| TableWrite {
            node: Guid(1),
            via: PortKey::new(1, 0),
            block: TableBlock::SlToVl(SlToVlMappingTableRepr { vls: [0; 16] }),
            modifier,
            ports: Ports::from(Vec::new()),
        };
        let pair = SlToVlModifier::Pair {
            input: 1,
            output: 2,
        };
        let vlarb = VlArbModifier {
            block: VlArbBlock::High0To31,
            port: 3,
        };
        // (modifier, its wait)
        let cases = [
            (TableModifier::SlToVl(SlToVlModifier::All), AnswerWait::Long),
            (
                TableModifier::SlToVl(SlToVlModifier::AllInputs { output: 2 }),
                AnswerWait::Long,
            ),
            (TableModifier::SlToVl(pair), AnswerWait::Usual),
            (TableModifier::VlArb(vlarb), AnswerWait::Usual),
            (
                TableModifier::PKey(PKeyTableModifier { port: 1, block: 2 }),
                AnswerWait::Usual,
            ),
        ];
        for (modifier, wait) in cases {
            assert_eq!(write(modifier).answer_wait(), wait, "{modifier:?}");
        }
        assert_eq!(u32::from(TableModifier::SlToVl(pair)), u32::from(pair));
        assert_eq!(u32::from(TableModifier::VlArb(vlarb)), u32::from(vlarb));
    }
}
