//! The floor on more than one core, giving what one core gives: the same events in the same
//! order at every port, so the same packets delivered at the same times.
//!
//! The fabric's ports are split into partitions, a thread each. An event at one port can push
//! an event for another partition's port only across a link, at least the `lookahead` later
//! (the shorter of an arrival's and a credit return's delay), so the run goes in windows of
//! that length: within a window no partition can receive anything from another, and each takes
//! its own events in order, alone.
//!
//! What the order needs is every push's number in the one-core run, where equal times go by
//! push number. Within a window a partition does not know those numbers for its own pushes:
//! they interleave with the other partitions' pushes. It numbers them provisionally, above
//! every number of an earlier window and in its own push order, which is right for comparing
//! any two events it holds. At the window's end every partition merges what all of them took,
//! in the one-core order, and hands out the real numbers in that order. Comparing two events
//! of different partitions in that merge needs their numbers; a number given in this window is
//! already known by then, because the event that pushed it was taken earlier and so merged
//! earlier. Each partition then renumbers what it pushed in the window, and takes in what
//! others pushed to it. The run's order never depends on which thread got there first, so the
//! results are the same as on one core, whatever the machine does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use ibqos_sim::{Network, NodeKind};

use super::{Event, Floor, PROVISIONAL, Packet, Start};

/// An event pushed for another partition's port, with the packet of an arrival (it leaves this
/// partition's store).
#[derive(Clone, Copy)]
pub(super) struct Crossing {
    pub(super) class: usize,
    pub(super) rank: u128,
    pub(super) event: Event,
    pub(super) packet: Option<Packet>,
}

/// The partition of each port: leaf switches (those with hosts) dealt out in turn, then the
/// other switches, each host with the switch its first link reaches. Dealt, not cut in blocks:
/// routes favour some spines, and on fat-tree-648 the first half of them took 44 % more
/// events than the second.
pub(super) fn partition(network: &Network, node_base: &[u32], ports: usize, k: usize) -> Vec<u8> {
    assert!((1..=255).contains(&k), "1 to 255 partitions");
    let switches: Vec<usize> = (0..network.nodes.len())
        .filter(|&n| network.nodes[n].kind == NodeKind::Switch)
        .collect();
    let mut neighbours = vec![Vec::new(); network.nodes.len()];
    for l in &network.links {
        neighbours[l.a.node].push(l.b.node);
        neighbours[l.b.node].push(l.a.node);
    }
    let is_host = |n: usize| network.nodes[n].kind == NodeKind::Host;
    let (leaves, others): (Vec<usize>, Vec<usize>) = switches
        .iter()
        .partition(|&&n| neighbours[n].iter().any(|&m| is_host(m)));
    let mut node_owner = vec![0u8; network.nodes.len()];
    for group in [&leaves, &others] {
        for (i, &n) in group.iter().enumerate() {
            node_owner[n] = (i % k) as u8;
        }
    }
    for n in (0..network.nodes.len()).filter(|&n| is_host(n)) {
        if let Some(&switch) = neighbours[n].first() {
            node_owner[n] = node_owner[switch];
        }
    }
    let mut owner = vec![0u8; ports];
    for (n, base) in node_base.iter().enumerate() {
        for num in 0..=u32::from(network.nodes[n].num_ports) {
            owner[(base + num) as usize] = node_owner[n];
        }
    }
    owner
}

/// What a partition hands over at a window's end: every partition reads it.
#[derive(Default)]
struct Slot {
    /// Each event taken in the window: its rank, and the partition's pushes before it.
    log: Vec<(u128, u32)>,
    /// The partition's pushes in the window.
    pushes: u32,
    /// Its pushes for other partitions' ports, by partition.
    outboxes: Vec<Vec<Crossing>>,
}

/// A barrier that spins: a window's work is tens of microseconds, a futex wait-and-wake as
/// long.
struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            spins += 1;
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// `rank` with its push number made the whole run's, if it was provisional.
fn resolve(rank: u128, numbers: &[u64]) -> u128 {
    let number = rank as u64;
    if number & PROVISIONAL == 0 {
        return rank;
    }
    rank >> 64 << 64 | u128::from(numbers[(number & !PROVISIONAL) as usize])
}

/// Runs the fabric from `start` in `k` partitions until `until`; the floors that ran.
///
/// Each window ends with one barrier: every partition then reads every partition's slot and
/// works out all the numbers itself (the merge is cheap beside a second barrier), and slots
/// alternate between windows, so that a partition writes one while others may still read the
/// other.
pub(super) fn run<'n>(start: &Start<'n>, k: usize, until: u64) -> Vec<Floor<'n, true>> {
    let lookahead = start.queue.delays[super::ARRIVE].min(start.queue.delays[super::CREDIT]);
    let slot = || {
        RwLock::new(Slot {
            outboxes: vec![Vec::new(); k],
            ..Slot::default()
        })
    };
    let slots: [Vec<RwLock<Slot>>; 2] = std::array::from_fn(|_| (0..k).map(|_| slot()).collect());
    let barrier = SpinBarrier {
        parties: k,
        arrived: AtomicUsize::new(0),
        generation: AtomicUsize::new(0),
    };
    let (slots, barrier) = (&slots, &barrier);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..k)
            .map(|me| {
                let mut floor = Floor::<true>::new(start.clone(), me as u8, k);
                scope.spawn(move || {
                    // Time 0 is the first window.
                    floor.start();
                    let mut merge = Merge {
                        pushed: 0,
                        numbers: vec![Vec::new(); k],
                    };
                    let mut start = 0u64;
                    for window in 0.. {
                        let slots = &slots[window % 2];
                        hand_over(&mut floor, &slots[me]);
                        barrier.wait();
                        {
                            let slots: Vec<_> =
                                slots.iter().map(|s| s.read().expect("slot")).collect();
                            merge.run(&slots);
                            take_back(&mut floor, &slots, &merge.numbers);
                        }
                        if start > until {
                            break;
                        }
                        floor.run((start + lookahead - 1).min(until));
                        start += lookahead;
                    }
                    floor
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a partition's thread"))
            .collect()
    })
}

fn hand_over(floor: &mut Floor<true>, slot: &RwLock<Slot>) {
    let mut slot = slot.write().expect("slot");
    std::mem::swap(&mut slot.log, &mut floor.log);
    floor.log.clear();
    slot.pushes = floor.queue.pushed as u32;
    for (mine, handed) in floor.outbox.iter_mut().zip(&mut slot.outboxes) {
        std::mem::swap(mine, handed);
        mine.clear();
    }
    floor.queue.pushed = 0;
}

/// The whole run's numbering of the partitions' pushes.
struct Merge {
    /// Pushes before the window being merged.
    pushed: u64,
    /// Per partition, the number of each of its pushes in the window, by provisional number.
    numbers: Vec<Vec<u64>>,
}

impl Merge {
    /// Merges the partitions' windows in the one-core order and numbers every push of the
    /// window in that order.
    fn run(&mut self, slots: &[RwLockReadGuard<Slot>]) {
        for (numbers, slot) in self.numbers.iter_mut().zip(slots) {
            numbers.clear();
            numbers.resize(slot.pushes as usize, u64::MAX);
        }
        // Each partition's next event and its rank, the whole run's: a head's rank is worked
        // out once, when it becomes the head, as the event that pushed it is merged by then.
        let mut heads: Vec<(usize, u128)> = slots
            .iter()
            .enumerate()
            .map(|(p, slot)| (0, self.head_rank(slot, p, 0)))
            .collect();
        loop {
            // Which partition goes next is a coin toss to the branch predictor: chosen by
            // index arithmetic, not by a branch per partition.
            let p = (1..heads.len()).fold(0, |p, q| if heads[q].1 < heads[p].1 { q } else { p });
            let (i, rank) = heads[p];
            if rank == u128::MAX {
                break;
            }
            let log = &slots[p].log;
            let end = log.get(i + 1).map_or(slots[p].pushes, |&(_, n)| n);
            for number in log[i].1..end {
                self.numbers[p][number as usize] = self.pushed;
                self.pushed += 1;
            }
            heads[p] = (i + 1, self.head_rank(&slots[p], p, i + 1));
        }
    }

    /// The rank of partition `p`'s event `i`, the whole run's ([`u128::MAX`] past the last).
    fn head_rank(&self, slot: &Slot, p: usize, i: usize) -> u128 {
        slot.log
            .get(i)
            .map_or(u128::MAX, |&(rank, _)| resolve(rank, &self.numbers[p]))
    }
}

/// Renumbers what `floor` pushed in the window and takes in what others pushed to it, each
/// FIFO kept in rank order: what it held from earlier windows comes before any of these, as
/// its events were pushed earlier with the same delay.
fn take_back(floor: &mut Floor<true>, slots: &[RwLockReadGuard<Slot>], numbers: &[Vec<u64>]) {
    let me = usize::from(floor.me);
    for class in 0..3 {
        let mut fresh = Vec::new();
        let fifo = &mut floor.queue.fifos[class];
        while let Some(&(rank, event)) = fifo.back() {
            if rank as u64 & PROVISIONAL == 0 {
                break;
            }
            fifo.pop_back();
            fresh.push((resolve(rank, &numbers[me]), event));
        }
        for (p, slot) in slots.iter().enumerate() {
            let Some(inbox) = slot.outboxes.get(me) else {
                continue;
            };
            for crossing in inbox.iter().filter(|c| c.class == class) {
                let event = match (crossing.event, crossing.packet) {
                    (Event::Arrive { port, .. }, Some(packet)) => Event::Arrive {
                        port,
                        packet: floor.store(packet),
                    },
                    (event, _) => event,
                };
                fresh.push((resolve(crossing.rank, &numbers[p]), event));
            }
        }
        // Runs already in order (this floor's, taken from the back, and each partition's
        // inbox), which a stable sort finds and merges.
        fresh.sort_by_key(|&(rank, _)| rank);
        floor.queue.fifos[class].extend(fresh);
    }
}
