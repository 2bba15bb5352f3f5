//! The floor on more than one core, giving what one core gives, by the engine's windows
//! ([`ibqos_sim::window`]): the same events in the same order at every port, so the same
//! packets delivered at the same times.

use ibqos_sim::Network;
use ibqos_sim::window::{self, PROVISIONAL, Slot, Windows};

use super::{Event, Floor, Packet, Start};

/// An event pushed for another partition's port, with the packet of an arrival (it leaves this
/// partition's store).
#[derive(Clone, Copy)]
pub(super) struct Crossing {
    pub(super) class: usize,
    pub(super) rank: u128,
    pub(super) event: Event,
    pub(super) packet: Option<Packet>,
}

/// The partition of each port: its node's ([`window::partition_nodes`]).
pub(super) fn partition(network: &Network, node_base: &[u32], ports: usize, k: usize) -> Vec<u8> {
    let node_owner = window::partition_nodes(network, k);
    let mut owner = vec![0u8; ports];
    for (n, base) in node_base.iter().enumerate() {
        for num in 0..=u32::from(network.nodes[n].num_ports) {
            owner[(base + num) as usize] = node_owner[n];
        }
    }
    owner
}

/// Runs the fabric from `start` in `k` partitions until `until`; the floors that ran.
pub(super) fn run<'n>(start: &Start<'n>, k: usize, until: u64) -> Vec<Floor<'n, true>> {
    let lookahead = start.queue.delays[super::ARRIVE].min(start.queue.delays[super::CREDIT]);
    let mut floors: Vec<Floor<true>> = (0..k)
        .map(|me| {
            let mut floor = Floor::<true>::new(start.clone(), me as u8, k);
            // Time 0, handed over at the first window's end.
            floor.start();
            floor
        })
        .collect();
    Windows::new(k, lookahead, 0).run(&mut floors, until);
    floors
}

impl window::Partition for Floor<'_, true> {
    type Crossing = Crossing;

    fn run(&mut self, until: u64) {
        Floor::run(self, until);
    }

    fn hand_over(&mut self, slot: &mut Slot<Crossing>) {
        slot.take_window(self.queue.pushed as u32, &mut self.log, &mut self.outbox);
        self.queue.pushed = 0;
    }

    /// Renumbers what the floor pushed in the window and takes in what others pushed to it,
    /// each FIFO kept in rank order: what it held from earlier windows comes before any of
    /// these, as its events were pushed earlier with the same delay.
    fn take_back(&mut self, me: usize, slots: &[&Slot<Crossing>], numbers: &[Vec<u64>]) {
        for class in 0..3 {
            let mut fresh = Vec::new();
            let fifo = &mut self.queue.fifos[class];
            while let Some(&(rank, event)) = fifo.back() {
                if rank as u64 & PROVISIONAL == 0 {
                    break;
                }
                fifo.pop_back();
                fresh.push((window::resolve(rank, &numbers[me]), event));
            }
            for (slot, numbers) in slots.iter().zip(numbers) {
                for crossing in slot.outboxes[me].iter().filter(|c| c.class == class) {
                    let event = match (crossing.event, crossing.packet) {
                        (Event::Arrive { port, .. }, Some(packet)) => Event::Arrive {
                            port,
                            packet: self.store(packet),
                        },
                        (event, _) => event,
                    };
                    fresh.push((window::resolve(crossing.rank, numbers), event));
                }
            }
            // Runs already in order (this floor's, taken from the back, and each partition's
            // inbox), which a stable sort finds and merges.
            fresh.sort_by_key(|&(rank, _)| rank);
            self.queue.fifos[class].extend(fresh);
        }
    }
}
