//! The event queue: one FIFO per delay, merged by time, and a heap for everything else.
//!
//! Almost every event the engine schedules is `now + d` for one of a handful of delays `d`: a
//! packet's serialization time, that plus the link's propagation, the credit latency plus the
//! propagation. Events pushed with the same delay come out of a FIFO already in time order
//! (time only moves forward), so each such class needs no sorting at all, and a push or a pop
//! touches only the two ends of a ring buffer: memory the next push or pop reads again. A pop
//! takes the earliest head among the classes; the queue keeps which that is (a push changes
//! it only by making a new head), so that asking whether the next event is due reads one
//! field, and a pop scans the heads once. Events of any other delay (a rate-limited
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

/// An event and its place in the order: time (ps) in the high 64 bits, push number in the low.
#[derive(Debug)]
struct Entry<E> {
    rank: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> u64 {
        (self.rank >> 64) as u64
    }
}

/// The rank of an empty class: after every event's. No event has it: its time would be
/// 2^64 - 1 ps, 213 days.
const EMPTY: u128 = u128::MAX;

/// Where the earliest event is: [`FROM_HEAP`] for the heap, else a class.
const FROM_HEAP: usize = usize::MAX;

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
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
        self.rank.cmp(&other.rank)
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
    /// The rank of the earliest event ([`EMPTY`]: none) and where it is, kept by every push
    /// and pop: a push changes it only when its event goes first, and asking whether the
    /// next event is due reads no class.
    earliest: u128,
    earliest_from: usize,
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
            earliest: EMPTY,
            earliest_from: FROM_HEAP,
            now: 0,
            pushed: 0,
        }
    }
}

impl<E> Queue<E> {
    /// Schedules `event` at `time`, seen from `now`: the pusher's clock, which never goes
    /// back, and `time` is not before it. Inlined, as a call's prologue and epilogue would
    /// cost a fifth of the push.
    #[inline(always)]
    pub fn push(&mut self, now: u64, time: u64, event: E) {
        self.now = self.now.max(now);
        let rank = u128::from(time) << 64 | u128::from(self.pushed);
        self.pushed += 1;
        let entry = Entry { rank, event };
        let delay = time.saturating_sub(self.now);
        let from = match self.delays.iter().position(|d| *d == delay) {
            Some(class) => {
                let fifo = &mut self.classes[class];
                // A FIFO's tail is its latest event: only a push into an empty one makes a
                // new head.
                if !fifo.is_empty() {
                    fifo.push_back(entry);
                    return;
                }
                self.fronts[class] = rank;
                fifo.push_back(entry);
                class
            }
            None if self.delays.len() < MAX_CLASSES && time >= self.now => {
                self.delays.push(delay);
                self.fronts.push(rank);
                self.classes.push(VecDeque::from([entry]));
                self.classes.len() - 1
            }
            None => {
                self.heap.push(Reverse(entry));
                FROM_HEAP
            }
        };
        if rank < self.earliest {
            self.earliest = rank;
            self.earliest_from = from;
        }
    }

    /// The earliest event if its time is before `limit`, else `None` (and nothing is taken),
    /// with its rank: its time in the high 64 bits, its push number in the low. Inlined into
    /// the engine's one loop, which then keeps the event in registers.
    #[inline(always)]
    pub fn pop_before(&mut self, limit: u64) -> Option<(u128, E)> {
        if (self.earliest >> 64) as u64 >= limit {
            return None;
        }
        let entry = match self.earliest_from {
            FROM_HEAP => self.heap.pop()?.0,
            class => {
                let fifo = &mut self.classes[class];
                let entry = fifo.pop_front()?;
                self.fronts[class] = fifo.front().map_or(EMPTY, |e| e.rank);
                entry
            }
        };
        self.find_earliest();
        self.now = self.now.max(entry.time());
        Some((entry.rank, entry.event))
    }

    /// The earliest event, if any, without taking it: what the next pop takes if it is due.
    #[inline(always)]
    pub fn peek(&self) -> Option<&E> {
        match self.earliest_from {
            FROM_HEAP => self.heap.peek().map(|Reverse(e)| &e.event),
            class => self.classes[class].front().map(|e| &e.event),
        }
    }

    /// The number the next push takes.
    pub fn next_number(&self) -> u64 {
        self.pushed
    }

    /// Numbers the pushes from here on from `number` up: a partition of a run numbers each
    /// window's pushes provisionally ([`crate::window`]).
    pub fn number_from(&mut self, number: u64) {
        self.pushed = number;
    }

    /// Takes a push number without pushing: the number of an event pushed elsewhere (to
    /// another partition's queue), as if it had been pushed here.
    pub fn take_number(&mut self) -> u64 {
        self.pushed += 1;
        self.pushed - 1
    }

    /// A window's end in a partition of a run ([`crate::window`]): gives every queued event
    /// whose push number is provisional (`from` or above) the number `number` gives it, and
    /// queues `taken`, the events pushed for this queue elsewhere, each with the delay it was
    /// pushed at and its rank. `number` must keep the order of the numbers it is given and put
    /// them above every number below `from`, so that the queue's order stays as it was and
    /// only the ranks change. An event taken in comes after every event of its delay pushed
    /// before the window (it was pushed later with that delay): it goes at or near its FIFO's
    /// end.
    pub fn end_window(
        &mut self,
        from: u64,
        number: impl Fn(u64) -> u64,
        taken: impl IntoIterator<Item = (u64, u128, E)>,
    ) {
        let renumbered = |entry: &mut Entry<E>| {
            let pushed = entry.rank as u64;
            if pushed < from {
                return false;
            }
            entry.rank = entry.rank >> 64 << 64 | u128::from(number(pushed));
            true
        };
        for (fifo, front) in self.classes.iter_mut().zip(&mut self.fronts) {
            // A FIFO's provisional events are its last: they were pushed after the others.
            for entry in fifo.iter_mut().rev() {
                if !renumbered(entry) {
                    break;
                }
            }
            *front = fifo.front().map_or(EMPTY, |e| e.rank);
        }
        if self.heap.iter().any(|Reverse(e)| e.rank as u64 >= from) {
            let mut entries = std::mem::take(&mut self.heap).into_vec();
            for Reverse(entry) in &mut entries {
                renumbered(entry);
            }
            self.heap = BinaryHeap::from(entries);
        }
        for (delay, rank, event) in taken {
            let entry = Entry { rank, event };
            match self.delays.iter().position(|d| *d == delay) {
                Some(class) => {
                    let fifo = &mut self.classes[class];
                    let at = fifo.partition_point(|e| e.rank < rank);
                    fifo.insert(at, entry);
                    self.fronts[class] = self.fronts[class].min(rank);
                }
                None if self.delays.len() < MAX_CLASSES => {
                    self.delays.push(delay);
                    self.fronts.push(rank);
                    self.classes.push(VecDeque::from([entry]));
                }
                None => self.heap.push(Reverse(entry)),
            }
        }
        self.find_earliest();
    }

    /// Finds the earliest head among the classes and the heap.
    fn find_earliest(&mut self) {
        let mut best = self.heap.peek().map_or(EMPTY, |Reverse(e)| e.rank);
        let mut from = FROM_HEAP;
        for (class, &rank) in self.fronts.iter().enumerate() {
            if rank < best {
                best = rank;
                from = class;
            }
        }
        self.earliest = best;
        self.earliest_from = from;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl<E> Queue<E> {
        /// The earliest event before `limit` and its time.
        fn pop_timed(&mut self, limit: u64) -> Option<(u64, E)> {
            self.pop_before(limit)
                .map(|(rank, event)| ((rank >> 64) as u64, event))
        }

        fn pop(&mut self) -> Option<(u64, E)> {
            self.pop_timed(u64::MAX)
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
        /// A window's end in a partition: pushes numbered provisionally, then renumbered with
        /// their place among every push, and events pushed elsewhere taken in with theirs,
        /// pop as one sorted queue of every push would pop them (time, then place).
        #[test]
        fn renumbered_and_taken_in_events_pop_in_the_whole_order(
            before in proptest::collection::vec((0u64..4, 0u64..60), 0..40),
            window in proptest::collection::vec((0u64..4, 0u64..60, any::<bool>()), 0..80),
        ) {
            let mut queue = Queue::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut now = 0u64;
            // Pushes of earlier windows, with their numbers already: 0, 1, 2 ...
            for (step, delay) in before {
                now += step;
                let number = model.len() as u64;
                queue.push(now, now + delay, number);
                model.push((now + delay, number));
            }
            queue.number_from(crate::window::PROVISIONAL);
            let first = model.len() as u64;
            let (mut places, mut elsewhere) = (Vec::new(), Vec::new());
            for (i, (step, delay, here)) in (first..).zip(window) {
                now += step;
                model.push((now + delay, i));
                if here {
                    queue.push(now, now + delay, i);
                    places.push(i);
                } else {
                    elsewhere.push((delay, now + delay, i));
                }
            }
            let taken = elsewhere
                .into_iter()
                .map(|(delay, time, i)| (delay, u128::from(time) << 64 | u128::from(i), i));
            queue.end_window(
                crate::window::PROVISIONAL,
                |n| places[(n - crate::window::PROVISIONAL) as usize],
                taken,
            );
            model.sort();
            let got: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
            prop_assert_eq!(got, model);
        }

        /// Any interleaving of pushes (each at or after the last pop) and pops, with or
        /// without a limit, gives the order a sorted list of (time, push number) gives. This
        /// holds with more delays than classes. A pop with a limit takes nothing at or after
        /// it, and a peek shows the event a pop without a limit would take.
        #[test]
        fn the_order_of_one_sorted_queue(
            steps in proptest::collection::vec((0u64..80, 0u8..3), 1..400),
        ) {
            let mut queue = Queue::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let (mut now, mut pushed) = (0u64, 0u64);
            for (delay, step) in steps {
                if step == 0 {
                    queue.push(now, now + delay, pushed);
                    model.push((now + delay, pushed));
                    pushed += 1;
                    continue;
                }
                let limit = if step == 1 { u64::MAX } else { now + delay };
                model.sort();
                prop_assert_eq!(queue.peek(), model.first().map(|(_, pushed)| pushed));
                let expected = model
                    .first()
                    .is_some_and(|(t, _)| *t < limit)
                    .then(|| model.remove(0));
                let got = queue.pop_timed(limit);
                prop_assert_eq!(got, expected);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
        }
    }
}
