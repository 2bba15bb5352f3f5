//! The SL2VL tables the SA answers from, stored so that one Set for every (input, output) pair
//! of a large switch costs one pass over a small array: a switch of 128 ports has 16,641 pairs,
//! and OpenSM's optimized SL2VL programming covers them all with one SMP.

use std::collections::HashMap;

use ibqos_mad::SlToVlMappingTableRepr;

/// Every node's programmed SL2VL tables, by (input port, output port).
#[derive(Debug, Clone, Default)]
pub struct Sl2VlTables {
    nodes: HashMap<u64, NodeTables>,
}

/// One node's tables: each pair holds an index into the node's distinct tables, which are few
/// (a switch's pairs mostly share one).
#[derive(Debug, Clone)]
struct NodeTables {
    /// Ports 0 to `ports - 1` in each dimension.
    ports: usize,
    distinct: Vec<SlToVlMappingTableRepr>,
    pairs: Pairs,
}

/// Each pair's entry: 1 + its table's index in `distinct`, 0 for none.
#[derive(Debug, Clone)]
enum Pairs {
    /// The same for every pair: one Set for all pairs (OpenSM's optimized SL2VL programming)
    /// needs no matrix, which on a 128-port switch is 33 KB.
    Every(u16),
    /// Per pair, `input * ports + output`.
    ByPair(Vec<u16>),
}

impl Sl2VlTables {
    /// Records `table` for every pair of `pairs` of `node`, whose ports are numbered below
    /// `ports`; a pair beyond them is ignored.
    pub fn insert(
        &mut self,
        node: u64,
        ports: usize,
        pairs: impl IntoIterator<Item = (u8, u8)>,
        table: SlToVlMappingTableRepr,
    ) {
        let tables = self.node(node, ports);
        let entry = tables.entry(table);
        let ports = tables.ports;
        let by_pair = tables.by_pair();
        for (input, output) in pairs {
            if let Some(slot) = slot(ports, input, output) {
                by_pair[slot] = entry;
            }
        }
    }

    /// Records `table` for every pair of ports below `ports` of `node`.
    pub fn insert_every_pair(&mut self, node: u64, ports: usize, table: SlToVlMappingTableRepr) {
        let tables = self.node(node, ports);
        tables.pairs = Pairs::Every(tables.entry(table));
    }

    /// The table of (`input`, `output`) of `node`, if one was recorded.
    pub fn get(&self, node: u64, input: u8, output: u8) -> Option<&SlToVlMappingTableRepr> {
        let tables = self.nodes.get(&node)?;
        let slot = slot(tables.ports, input, output)?;
        let entry = match &tables.pairs {
            Pairs::Every(entry) => *entry,
            Pairs::ByPair(by_pair) => *by_pair.get(slot)?,
        };
        tables.distinct.get(usize::from(entry).checked_sub(1)?)
    }

    fn node(&mut self, node: u64, ports: usize) -> &mut NodeTables {
        self.nodes.entry(node).or_insert_with(|| NodeTables {
            ports,
            distinct: Vec::new(),
            pairs: Pairs::Every(0),
        })
    }
}

impl NodeTables {
    /// 1 + `table`'s index among the node's distinct tables, added if new.
    fn entry(&mut self, table: SlToVlMappingTableRepr) -> u16 {
        let index = match self.distinct.iter().position(|t| *t == table) {
            Some(index) => index,
            None => {
                self.distinct.push(table);
                self.distinct.len() - 1
            }
        };
        // At most 255 * 255 pairs, so at most that many distinct tables: the index fits.
        u16::try_from(index + 1).unwrap_or(u16::MAX)
    }

    /// The entry of every pair, made one per pair if it was one for all.
    fn by_pair(&mut self) -> &mut [u16] {
        if let Pairs::Every(every) = self.pairs {
            self.pairs = Pairs::ByPair(vec![every; self.ports * self.ports]);
        }
        match &mut self.pairs {
            Pairs::ByPair(by_pair) => by_pair,
            Pairs::Every(_) => &mut [],
        }
    }
}

/// Pair (`input`, `output`)'s place among `ports` x `ports` pairs, if both ports are there.
fn slot(ports: usize, input: u8, output: u8) -> Option<usize> {
    let (input, output) = (usize::from(input), usize::from(output));
    (input < ports && output < ports).then_some(input * ports + output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(first: u8) -> SlToVlMappingTableRepr {
        let mut vls = [0; 16];
        vls[0] = first;
        SlToVlMappingTableRepr { vls }
    }

    #[test]
    fn pairs_hold_the_last_table_written_to_them() {
        let mut tables = Sl2VlTables::default();
        let all: Vec<(u8, u8)> = (0..4).flat_map(|i| (0..4).map(move |o| (i, o))).collect();
        tables.insert(7, 4, all, table(1));
        tables.insert(7, 4, [(2, 3)], table(2));
        tables.insert(7, 4, [(1, 1)], table(1));
        assert_eq!(tables.get(7, 0, 0), Some(&table(1)));
        assert_eq!(tables.get(7, 2, 3), Some(&table(2)));
        assert_eq!(tables.get(7, 3, 2), Some(&table(1)));
        assert_eq!(
            tables.nodes[&7].distinct.len(),
            2,
            "tables are shared, not copied"
        );
    }

    #[test]
    fn a_set_for_every_pair_holds_until_a_pair_is_set_again() {
        let mut tables = Sl2VlTables::default();
        tables.insert_every_pair(7, 4, table(1));
        assert_eq!(tables.get(7, 3, 0), Some(&table(1)));
        assert_eq!(tables.get(7, 4, 0), None, "no port 4");
        assert!(
            matches!(tables.nodes[&7].pairs, Pairs::Every(_)),
            "no matrix for one table"
        );
        tables.insert(7, 4, [(2, 3)], table(2));
        assert_eq!(tables.get(7, 2, 3), Some(&table(2)));
        assert_eq!(tables.get(7, 3, 2), Some(&table(1)));
        tables.insert_every_pair(7, 4, table(3));
        assert_eq!(tables.get(7, 2, 3), Some(&table(3)));
    }

    #[test]
    fn nothing_for_pairs_never_written_other_nodes_or_ports_beyond_the_node() {
        let mut tables = Sl2VlTables::default();
        tables.insert(7, 3, [(0, 1), (9, 1)], table(5));
        assert_eq!(tables.get(7, 0, 1), Some(&table(5)));
        assert_eq!(tables.get(7, 1, 0), None);
        assert_eq!(tables.get(7, 9, 1), None);
        assert_eq!(tables.get(7, 0, 3), None);
        assert_eq!(tables.get(8, 0, 1), None);
    }
}
