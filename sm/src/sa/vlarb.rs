//! The VLArbitration blocks the SA answers from, each distinct block stored once: a fabric's
//! ports share a few tables (one per QoS class of port), and a 10,416-node fat tree has 65,536
//! programmed blocks.

use std::collections::{BTreeMap, HashMap};

use ibqos_mad::VlArbitrationTableRepr;

/// Every programmed VLArb block, by (node, port, block 1-4).
#[derive(Debug, Clone, Default)]
pub struct VlArbTables {
    distinct: Vec<VlArbitrationTableRepr>,
    index: HashMap<VlArbitrationTableRepr, u32>,
    by_block: BTreeMap<(u64, u8, u8), u32>,
}

impl VlArbTables {
    /// Records `table` as block `block` of `port` of `node`.
    pub fn insert(&mut self, node: u64, port: u8, block: u8, table: VlArbitrationTableRepr) {
        let next = u32::try_from(self.distinct.len()).unwrap_or(u32::MAX);
        let index = *self.index.entry(table).or_insert_with(|| {
            self.distinct.push(table);
            next
        });
        self.by_block.insert((node, port, block), index);
    }

    /// Block `block` of `port` of `node`, if one was recorded.
    pub fn get(&self, node: u64, port: u8, block: u8) -> Option<&VlArbitrationTableRepr> {
        let index = self.by_block.get(&(node, port, block))?;
        self.distinct.get(usize::try_from(*index).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use ibqos_mad::VlArbEntry;

    use super::*;

    fn table(weight: u8) -> VlArbitrationTableRepr {
        let mut entries = [VlArbEntry::default(); 32];
        entries[0] = VlArbEntry { vl: 1, weight };
        VlArbitrationTableRepr { entries }
    }

    #[test]
    fn each_block_answers_its_own_table_and_a_shared_one_is_stored_once() {
        let mut tables = VlArbTables::default();
        tables.insert(1, 1, 1, table(10));
        tables.insert(1, 2, 1, table(10));
        tables.insert(1, 2, 3, table(20));
        tables.insert(1, 1, 1, table(30)); // reprogrammed
        assert_eq!(tables.get(1, 1, 1), Some(&table(30)));
        assert_eq!(tables.get(1, 2, 1), Some(&table(10)));
        assert_eq!(tables.get(1, 2, 3), Some(&table(20)));
        assert_eq!(tables.get(1, 2, 2), None);
        assert_eq!(tables.get(2, 1, 1), None);
        assert_eq!(tables.distinct.len(), 3);
    }
}
