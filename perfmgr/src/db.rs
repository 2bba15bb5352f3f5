//! The counter database (OpenSM's `osm_perfmgr_db.c`): per node and port, the totals since the
//! last reset and the previous reading they grow from.

use std::collections::BTreeMap;

use crate::counters::{DataReading, ErrorReading, Reading, UnixTime};

/// One port's totals and previous readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbPort {
    pub error_total: ErrorReading,
    pub error_previous: ErrorReading,
    pub data_total: DataReading,
    pub data_previous: DataReading,
    pub last_reset: UnixTime,
    /// A reading was added: only such ports are printed.
    pub valid: bool,
}

impl DbPort {
    fn new(time: UnixTime) -> DbPort {
        DbPort {
            error_total: Reading::zero(0),
            error_previous: Reading::zero(time),
            data_total: Reading::zero(0),
            data_previous: Reading::zero(time),
            last_reset: time,
            valid: false,
        }
    }
}

/// One node: its name as first seen, whether it is still monitored, and its ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbNode {
    pub guid: u64,
    pub name: String,
    /// Still in the subnet; a node gone stays, inactive, unless `perfmgr_rm_nodes`.
    pub active: bool,
    /// Port 0 is a port of its own (an enhanced switch port 0) and is counted.
    pub enhanced_port0: bool,
    /// Ports 0 to NumPorts, port 0 counted only with `enhanced_port0`.
    pub ports: Vec<DbPort>,
}

impl DbNode {
    /// The first port counted: 0 with an enhanced port 0, else 1.
    pub fn first_port(&self) -> usize {
        usize::from(!self.enhanced_port0)
    }

    fn port_mut(&mut self, port: u8) -> Option<&mut DbPort> {
        let port = usize::from(port);
        if port < self.first_port() {
            return None;
        }
        self.ports.get_mut(port)
    }
}

/// Every node's counters, in host-order GUID order (OpenSM's `cl_qmap` keyed by the GUID as a
/// host number).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Database {
    nodes: BTreeMap<u64, DbNode>,
}

impl Database {
    pub fn nodes(&self) -> impl Iterator<Item = &DbNode> {
        self.nodes.values()
    }

    pub fn node(&self, guid: u64) -> Option<&DbNode> {
        self.nodes.get(&guid)
    }

    /// `perfmgr_db_create_entry`: a node not yet known, with `num_ports` ports counting port 0,
    /// its resets dated `time`. A node already there is left as it is, name included.
    pub fn create_entry(
        &mut self,
        guid: u64,
        enhanced_port0: bool,
        num_ports: usize,
        name: &str,
        time: UnixTime,
    ) {
        self.nodes.entry(guid).or_insert_with(|| DbNode {
            guid,
            name: name.to_owned(),
            active: false,
            enhanced_port0,
            ports: vec![DbPort::new(time); num_ports],
        });
    }

    pub fn mark_active(&mut self, guid: u64, active: bool) {
        if let Some(node) = self.nodes.get_mut(&guid) {
            node.active = active;
        }
    }

    pub fn delete(&mut self, guid: u64) -> bool {
        self.nodes.remove(&guid).is_some()
    }

    /// `perfmgr_db_delete_inactive`: removes the nodes no longer monitored; how many.
    pub fn delete_inactive(&mut self) -> usize {
        let before = self.nodes.len();
        self.nodes.retain(|_, node| node.active);
        before - self.nodes.len()
    }

    fn port_mut(&mut self, guid: u64, port: u8) -> Option<&mut DbPort> {
        self.nodes.get_mut(&guid)?.port_mut(port)
    }

    /// The previous error reading of a port in the database.
    pub fn previous_errors(&self, guid: u64, port: u8) -> Option<&ErrorReading> {
        let node = self.nodes.get(&guid)?;
        let port = usize::from(port);
        (port >= node.first_port()).then_some(&node.ports.get(port)?.error_previous)
    }

    /// The previous data reading of a port in the database.
    pub fn previous_data(&self, guid: u64, port: u8) -> Option<&DataReading> {
        let node = self.nodes.get(&guid)?;
        let port = usize::from(port);
        (port >= node.first_port()).then_some(&node.ports.get(port)?.data_previous)
    }

    /// `perfmgr_db_add_err_reading`: each total grows by the reading less the previous one, the
    /// reading becomes the previous one. Returns the growth (OpenSM's event-plugin data).
    pub fn add_errors(&mut self, guid: u64, port: u8, reading: &ErrorReading) -> Option<[u64; 13]> {
        let port = self.port_mut(guid, port)?;
        port.valid = true;
        let counted = crate::counters::ErrorCounter::ALL.len();
        let growth = accumulate(
            &mut port.error_total,
            &mut port.error_previous,
            reading,
            counted,
        );
        Some(growth)
    }

    /// `perfmgr_db_add_dc_reading`: as [`add_errors`](Self::add_errors); unicast and multicast
    /// only with the IETF PortCountersExtended (`ietf`).
    pub fn add_data(
        &mut self,
        guid: u64,
        port: u8,
        reading: &DataReading,
        ietf: bool,
    ) -> Option<[u64; 8]> {
        let port = self.port_mut(guid, port)?;
        port.valid = true;
        let counted = if ietf {
            8
        } else {
            crate::counters::DataCounter::BASIC
        };
        Some(accumulate(
            &mut port.data_total,
            &mut port.data_previous,
            reading,
            counted,
        ))
    }

    /// `perfmgr_db_clear_prev_err`: the next reading counts from 0, dated `time`.
    pub fn clear_previous_errors(&mut self, guid: u64, port: u8, time: UnixTime) {
        if let Some(port) = self.port_mut(guid, port) {
            port.error_previous = Reading::zero(time);
        }
    }

    /// `perfmgr_db_clear_prev_dc`.
    pub fn clear_previous_data(&mut self, guid: u64, port: u8, time: UnixTime) {
        if let Some(port) = self.port_mut(guid, port) {
            port.data_previous = Reading::zero(time);
        }
    }

    /// `perfmgr_db_clear_counters` (the console's `clear_counters`): every total to 0 and
    /// every port reset at `time`. The fabric's counters are not touched, as in OpenSM.
    pub fn clear_counters(&mut self, time: UnixTime) {
        for port in self.nodes.values_mut().flat_map(|node| &mut node.ports) {
            port.error_total = Reading::zero(time);
            port.data_total = Reading::zero(time);
            port.last_reset = time;
        }
    }
}

/// Adds the first `counted` counters' growth from `previous` to `reading` into `total`, as
/// OpenSM's unsigned arithmetic does (a reading below the previous one wraps; the out-of-band
/// check zeroes the previous reading first), and makes `reading` the previous one.
fn accumulate<const N: usize>(
    total: &mut Reading<N>,
    previous: &mut Reading<N>,
    reading: &Reading<N>,
    counted: usize,
) -> [u64; N] {
    let mut growth = [0; N];
    let counters = growth
        .iter_mut()
        .zip(&mut total.counts)
        .zip(reading.counts.iter().zip(previous.counts));
    for ((grew, total), (now, before)) in counters.take(counted) {
        *grew = now.wrapping_sub(before);
        *total = total.wrapping_add(*grew);
    }
    *previous = *reading;
    total.time = reading.time;
    growth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{DataCounter, ErrorCounter};

    const GUID: u64 = 0x20_0000;

    fn db() -> Database {
        let mut db = Database::default();
        db.create_entry(GUID, false, 3, "S1", 100);
        db
    }

    fn errors(symbol: u64, wait: u64, time: UnixTime) -> ErrorReading {
        let mut reading = Reading::zero(time);
        reading.counts[ErrorCounter::SymbolErrors as usize] = symbol;
        reading.counts[ErrorCounter::XmitWait as usize] = wait;
        reading
    }

    #[test]
    fn totals_grow_by_the_difference_from_the_previous_reading() {
        let mut db = db();
        assert_eq!(db.add_errors(GUID, 1, &errors(5, 2, 110)).unwrap()[0], 5);
        assert_eq!(db.add_errors(GUID, 1, &errors(8, 2, 120)).unwrap()[0], 3);
        let port = &db.node(GUID).unwrap().ports[1];
        assert!(port.valid);
        assert_eq!(port.error_total.get(ErrorCounter::SymbolErrors), 8);
        assert_eq!(port.error_total.get(ErrorCounter::XmitWait), 2);
        assert_eq!((port.error_total.time, port.last_reset), (120, 100));
        // After a clear of the previous reading, the next one counts from 0 again.
        db.clear_previous_errors(GUID, 1, 125);
        db.add_errors(GUID, 1, &errors(1, 0, 130));
        let port = &db.node(GUID).unwrap().ports[1];
        assert_eq!(port.error_total.get(ErrorCounter::SymbolErrors), 9);
    }

    #[test]
    fn unicast_and_multicast_count_only_with_ietf() {
        let mut db = db();
        let mut reading = DataReading::zero(110);
        reading.counts = [1, 2, 3, 4, 5, 6, 7, 8];
        db.add_data(GUID, 2, &reading, false);
        let total = db.node(GUID).unwrap().ports[2].data_total;
        assert_eq!(total.counts, [1, 2, 3, 4, 0, 0, 0, 0]);
        db.add_data(GUID, 1, &reading, true);
        let total = db.node(GUID).unwrap().ports[1].data_total;
        assert_eq!(total.get(DataCounter::MulticastRcvPkts), 8);
    }

    #[test]
    fn port_0_of_a_base_switch_and_ports_beyond_are_not_kept() {
        let mut db = db();
        assert_eq!(db.add_errors(GUID, 0, &errors(1, 0, 1)), None);
        assert_eq!(db.add_errors(GUID, 3, &errors(1, 0, 1)), None);
        assert_eq!(db.add_errors(7, 1, &errors(1, 0, 1)), None);
        db.create_entry(8, true, 2, "esp0", 1);
        assert!(db.add_errors(8, 0, &errors(1, 0, 1)).is_some());
    }

    #[test]
    fn inactive_nodes_are_deleted_on_demand_and_clears_keep_the_readings() {
        let mut db = db();
        db.create_entry(GUID + 1, false, 2, "S2", 100);
        db.mark_active(GUID, true);
        db.add_errors(GUID, 1, &errors(4, 0, 110));
        db.clear_counters(200);
        let port = &db.node(GUID).unwrap().ports[1];
        assert_eq!(port.error_total, Reading::zero(200));
        assert_eq!(port.error_previous.get(ErrorCounter::SymbolErrors), 4);
        assert_eq!(port.last_reset, 200);
        assert_eq!(db.delete_inactive(), 1);
        assert!(db.node(GUID + 1).is_none());
        assert!(db.node(GUID).is_some());
    }
}
