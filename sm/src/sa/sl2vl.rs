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
    /// Per pair (`input * ports + output`), 1 + the table's index in `distinct`; 0 for none.
    by_pair: Vec<u16>,
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
        let tables = self.nodes.entry(node).or_insert_with(|| NodeTables {
            ports,
            distinct: Vec::new(),
            by_pair: vec![0; ports * ports],
        });
        let index = match tables.distinct.iter().position(|t| *t == table) {
            Some(index) => index,
            None => {
                tables.distinct.push(table);
                tables.distinct.len() - 1
            }
        };
        // At most 255 * 255 pairs, so at most that many distinct tables: the index fits.
        let entry = u16::try_from(index + 1).unwrap_or(u16::MAX);
        for (input, output) in pairs {
            if let Some(slot) = tables.slot(input, output) {
                tables.by_pair[slot] = entry;
            }
        }
    }

    /// The table of (`input`, `output`) of `node`, if one was recorded.
    pub fn get(&self, node: u64, input: u8, output: u8) -> Option<&SlToVlMappingTableRepr> {
        let tables = self.nodes.get(&node)?;
        let entry = *tables.by_pair.get(tables.slot(input, output)?)?;
        tables.distinct.get(usize::from(entry).checked_sub(1)?)
    }
}

impl NodeTables {
    fn slot(&self, input: u8, output: u8) -> Option<usize> {
        let (input, output) = (usize::from(input), usize::from(output));
        (input < self.ports && output < self.ports).then_some(input * self.ports + output)
    }
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
