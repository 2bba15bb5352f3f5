//! The event queue: one FIFO per delay, merged by time, and a heap for everything else.
//!
//! Almost every event the engine schedules is `now + d` for one of a handful of delays `d`: a
//! packet's serialization time, that plus the link's propagation, the credit latency plus the
//! propagation. Events pushed with the same delay come out of a FIFO already in time order
//! (time only moves forward), so each such class needs no sorting at all, and a push or a pop
//! touches only the two ends of a ring buffer: memory the next push or pop reads again. A pop
//! takes the earliest head among the classes. Events of any other delay (a rate-limited
//! source's next packet, a delay never seen before once [`MAX_CLASSES`] are in use) go to a
//! binary heap.
//!
//! Every event carries its push number, and the earliest (time, push number) pops first, so
//! events with equal times come out in the order they were pushed, whatever class holds them:
//! a run is reproducible, and pops in exactly the order a single sorted queue would give.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The most delay classes: beyond this, events of a new delay go to the heap. A fabric of one
/// link speed and packet size has three (serialization, arrival, credit return).
pub const MAX_CLASSES: usize = 32;

/// An event and its place in the order: time (ps), then push number.
#[derive(Debug)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }

    /// The key as one number, in the same order.
    fn rank(&self) -> u128 {
        u128::from(self.time) << 64 | u128::from(self.seq)
    }
}

/// The rank of an empty class: after every event's.
const EMPTY: u128 = u128::MAX;

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// A queue of events of type `E` ordered by time (ps), first in first out among equal times.
#[derive(Debug)]
pub struct Queue<E> {
    /// The delay of each class, and its FIFO.
    delays: Vec<u64>,
    classes: Vec<VecDeque<Entry<E>>>,
    /// The rank of each class's head ([`EMPTY`] for none), side by side, so that finding the
    /// earliest reads one short array rather than every FIFO.
    fronts: Vec<u128>,
    /// Events of no class.
    heap: BinaryHeap<Reverse<Entry<E>>>,
    /// The time of the last pop: delays are measured from it.
    now: u64,
    pushed: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            delays: Vec::new(),
            classes: Vec::new(),
            fronts: Vec::new(),
            heap: BinaryHeap::new(),
            now: 0,
            pushed: 0,
        }
    }
}

impl<E> Queue<E> {
    /// Schedules `event` at `time`, seen from `now`: the pusher's clock, which never goes
    /// back, and `time` is not before it.
    pub fn push(&mut self, now: u64, time: u64, event: E) {
        self.now = self.now.max(now);
        let entry = Entry {
            time,
            seq: self.pushed,
            event,
        };
        self.pushed += 1;
        let delay = time.saturating_sub(self.now);
        match self.delays.iter().position(|d| *d == delay) {
            Some(class) => {
                if self.classes[class].is_empty() {
                    self.fronts[class] = entry.rank();
                }
                self.classes[class].push_back(entry);
            }
            None if self.delays.len() < MAX_CLASSES && time >= self.now => {
                self.delays.push(delay);
                self.fronts.push(entry.rank());
                self.classes.push(VecDeque::from([entry]));
            }
            None => self.heap.push(Reverse(entry)),
        }
    }

    /// The class (or `None`: the heap) whose head pops next, and its time, if anything is
    /// queued.
    fn earliest(&self) -> Option<(Option<usize>, u64)> {
        let heap = self.heap.peek().map_or(EMPTY, |Reverse(e)| e.rank());
        let (from, rank) =
            (0..)
                .zip(&self.fronts)
                .fold((None, heap), |(from, best), (class, &rank)| {
                    if rank < best {
                        (Some(class), rank)
                    } else {
                        (from, best)
                    }
                });
        // No event has the rank EMPTY: its time would be 2^64 - 1 ps, 213 days.
        (rank != EMPTY).then_some((from, (rank >> 64) as u64))
    }

    /// The earliest event if `due(its time)`, else `None` (and nothing is taken).
    pub fn pop_if(&mut self, due: impl FnOnce(u64) -> bool) -> Option<(u64, E)> {
        let (from, time) = self.earliest()?;
        if !due(time) {
            return None;
        }
        let entry = match from {
            Some(class) => {
                let fifo = &mut self.classes[class];
                let entry = fifo.pop_front()?;
                self.fronts[class] = fifo.front().map_or(EMPTY, Entry::rank);
                entry
            }
            None => self.heap.pop()?.0,
        };
        self.now = self.now.max(entry.time);
        Some((entry.time, entry.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl<E> Queue<E> {
        fn pop(&mut self) -> Option<(u64, E)> {
            self.pop_if(|_| true)
        }
    }

    /// Pops in time order, ties in push order, across classes and the heap.
    #[test]
    fn pops_in_time_then_push_order() {
        let mut queue = Queue::default();
        let times = [
            5u64,
            1,
            1_000_000_000,
            3_000,
            1,
            40_000_000,
            3_000,
            0,
            17_000_000,
            5,
        ];
        for (i, t) in times.iter().enumerate() {
            queue.push(0, *t, i);
        }
        let mut expected: Vec<(u64, usize)> =
            times.iter().enumerate().map(|(i, t)| (*t, i)).collect();
        expected.sort();
        let got: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(got, expected);
        assert_eq!(queue.pop(), None);
    }

    proptest! {
        /// Any interleaving of pushes (each at or after the last pop) and pops gives the
        /// order a sorted list of (time, push number) gives, with more delays than classes.
        #[test]
        fn the_order_of_one_sorted_queue(
            steps in proptest::collection::vec((0u64..80, any::<bool>()), 1..400),
        ) {
            let mut queue = Queue::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let (mut now, mut pushed) = (0u64, 0u64);
            for (delay, pop) in steps {
                if pop {
                    model.sort();
                    let expected = (!model.is_empty()).then(|| model.remove(0));
                    let got = queue.pop();
                    prop_assert_eq!(got, expected);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    queue.push(now, now + delay, pushed);
                    model.push((now + delay, pushed));
                    pushed += 1;
                }
            }
        }
    }
}
