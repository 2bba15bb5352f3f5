//! A run on more than one core that gives what one core gives: the same events in the same
//! order at every port, so the same report, byte for byte.
//!
//! The fabric's nodes are split into partitions, a thread each. An event at one port can push
//! an event for another partition's port only across a link, at least a `lookahead` later (the
//! shortest of an arrival's and a credit return's delay). So the run goes in windows of that
//! length. Within a window no partition can receive anything from another, and each takes its
//! own events in order, alone.
//!
//! What the order needs is every push's number in the one-core run, where equal times go by
//! push number. Within a window a partition does not know those numbers for its own pushes:
//! they interleave with the other partitions' pushes. It numbers them provisionally (from
//! [`PROVISIONAL`] up, above every number of an earlier window, in its own push order), which
//! is right for comparing any two events it holds. At the window's end every partition merges
//! what all of them took, in the one-core order, and hands out the real numbers in that order.
//! Comparing two events of different partitions in that merge needs their numbers; a number
//! given in this window is already known by then, because the event that pushed it was taken
//! earlier and so merged earlier. Each partition then renumbers what it pushed in the window,
//! and takes in what others pushed to it. The run's order never depends on which thread got
//! there first, so the results are the same as on one core, whatever the machine does.
//!
//! Every partition works the merge out itself, from every partition's log: one barrier a
//! window instead of two (a window's work is tens of microseconds, as long as a futex
//! wait-and-wake), at the price of a merge that does not shrink with more threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use crate::network::{Network, NodeKind};
use crate::ranks::{Handed, Portable, Ranks};

/// Push numbers given in a window (with the window's count in the low bits): above every
/// number of an earlier window, and ordered among themselves as the partition pushed them,
/// until the window's end gives each its place in the whole run.
pub const PROVISIONAL: u64 = 1 << 63;

/// `rank` (time in the high 64 bits, push number in the low) with its push number made the
/// whole run's, if it was provisional: `numbers` are the pushing partition's, by provisional
/// number.
pub fn resolve(rank: u128, numbers: &[u64]) -> u128 {
    let number = rank as u64;
    if number & PROVISIONAL == 0 {
        return rank;
    }
    rank >> 64 << 64 | u128::from(numbers[(number & !PROVISIONAL) as usize])
}

/// The partition of each node, `k` of them.
///
/// Pods go whole to a partition where the fabric has at least `k`: a pod is a connected group
/// of leaf switches (those with hosts) and the switches one link above them (the edge and
/// aggregation switches of a three-level fat tree). Then only the links above the pods cross
/// partitions. Pods go largest first, each to the partition with the fewest hosts so far; the
/// switches above them are dealt out in turn.
///
/// Other fabrics (a two-level fat tree is one pod, a torus or a dragonfly another) deal their
/// leaf switches out in turn, then the other switches. Dealt, not cut in blocks: routes favour
/// some spines, and on fat-tree-648 the first half of them took 44 % more events than the
/// second. Each host goes with the switch its first link reaches.
pub fn partition_nodes(network: &Network, k: usize) -> Vec<u8> {
    assert!((1..=255).contains(&k), "1 to 255 partitions");
    let mut neighbours = vec![Vec::new(); network.nodes.len()];
    for l in &network.links {
        neighbours[l.a.node].push(l.b.node);
        neighbours[l.b.node].push(l.a.node);
    }
    let is_host = |n: usize| network.nodes[n].kind == NodeKind::Host;
    let (leaves, others): (Vec<usize>, Vec<usize>) = (0..network.nodes.len())
        .filter(|&n| !is_host(n))
        .partition(|&n| neighbours[n].iter().any(|&m| is_host(m)));
    let pods = pods(&neighbours, &leaves, &is_host);
    let mut owner = vec![0u8; network.nodes.len()];
    if k > 1 && pods.len() >= k {
        let mut hosts = vec![0usize; k];
        let mut by_size: Vec<&Pod> = pods.iter().collect();
        by_size.sort_by_key(|pod| std::cmp::Reverse(pod.hosts));
        for pod in by_size {
            let fewest = (0..k)
                .min_by_key(|&p| hosts[p])
                .expect("a partition at least");
            hosts[fewest] += pod.hosts;
            for &n in &pod.switches {
                owner[n] = fewest as u8;
            }
        }
        let in_pod: std::collections::HashSet<usize> = pods
            .iter()
            .flat_map(|pod| pod.switches.iter().copied())
            .collect();
        let above = others.iter().filter(|n| !in_pod.contains(n));
        for (i, &n) in above.enumerate() {
            owner[n] = (i % k) as u8;
        }
    } else {
        for group in [&leaves, &others] {
            for (i, &n) in group.iter().enumerate() {
                owner[n] = (i % k) as u8;
            }
        }
    }
    for n in (0..network.nodes.len()).filter(|&n| is_host(n)) {
        if let Some(&switch) = neighbours[n].first() {
            owner[n] = owner[switch];
        }
    }
    owner
}

/// A pod: switches that go to one partition together, and the hosts below them.
#[derive(Debug)]
struct Pod {
    switches: Vec<usize>,
    hosts: usize,
}

/// The pods of a fabric whose nodes' links are `neighbours` and whose leaf switches are
/// `leaves`: each connected group of leaves and the switches one link above a leaf, over the
/// links among them, in the order of their first leaf.
fn pods(neighbours: &[Vec<usize>], leaves: &[usize], is_host: &dyn Fn(usize) -> bool) -> Vec<Pod> {
    let mut member = vec![false; neighbours.len()];
    for &leaf in leaves {
        member[leaf] = true;
        for &above in &neighbours[leaf] {
            member[above] = !is_host(above);
        }
    }
    let mut seen = vec![false; neighbours.len()];
    let mut pods = Vec::new();
    for &leaf in leaves {
        if seen[leaf] {
            continue;
        }
        seen[leaf] = true;
        let (mut switches, mut next) = (Vec::new(), vec![leaf]);
        while let Some(n) = next.pop() {
            switches.push(n);
            for &m in &neighbours[n] {
                if member[m] && !seen[m] {
                    seen[m] = true;
                    next.push(m);
                }
            }
        }
        switches.sort_unstable();
        let hosts = switches
            .iter()
            .map(|&n| neighbours[n].iter().filter(|&&m| is_host(m)).count())
            .sum();
        pods.push(Pod { switches, hosts });
    }
    pods
}

/// What a partition hands over at a window's end: every partition reads it.
#[derive(Debug)]
pub struct Slot<C> {
    /// Each event taken in the window that pushed any (the others leave the numbering as it
    /// is): its rank, and the partition's pushes before it.
    pub log: Vec<(u128, u32)>,
    /// The partition's pushes in the window.
    pub pushes: u32,
    /// Its pushes for other partitions' ports, by partition.
    pub outboxes: Vec<Vec<C>>,
}

impl<C> Slot<C> {
    /// Takes a partition's window: its `pushes`, and its `log` and `outboxes`, which it leaves
    /// empty (with the capacity of what this slot held before, for the next window).
    pub fn take_window(
        &mut self,
        pushes: u32,
        log: &mut Vec<(u128, u32)>,
        outboxes: &mut [Vec<C>],
    ) {
        self.pushes = pushes;
        std::mem::swap(&mut self.log, log);
        log.clear();
        for (handed, mine) in self.outboxes.iter_mut().zip(outboxes) {
            std::mem::swap(handed, mine);
            mine.clear();
        }
    }
}

/// One partition of a run, as [`Windows`] drives it.
pub trait Partition: Send {
    /// An event it pushes for another partition's port.
    type Crossing: Portable;
    /// Takes its events up to `until` (inclusive), logging each.
    fn run(&mut self, until: u64);
    /// Moves its window's log and outboxes into `slot`, and numbers the next window's pushes
    /// from [`PROVISIONAL`] again.
    fn hand_over(&mut self, slot: &mut Slot<Self::Crossing>);
    /// Gives its window's pushes their numbers (`numbers[p]`: partition `p`'s, by provisional
    /// number), and takes in what the partitions pushed to it, partition `me`.
    fn take_back(&mut self, me: usize, slots: &[&Slot<Self::Crossing>], numbers: &[Vec<u64>]);
}

/// A barrier that spins: a window's work is tens of microseconds, a futex wait-and-wake as
/// long.
#[derive(Debug)]
struct SpinBarrier {
    parties: usize,
    /// Spins before each yield: none when the parties outnumber the cores, as one spinning
    /// then keeps another from its work.
    spins: u32,
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
            if spins < self.spins {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The windows of a run in partitions: where the run is, and what the windows' ends need.
///
/// A run may span processes ([`Ranks`], MPI's say): each holds `per_rank` partitions, a thread
/// each, and the slots of every partition; at a window's end its first thread fills the other
/// processes' slots from theirs (see [`crate::ranks`]) before any partition merges.
pub struct Windows<C> {
    lookahead: u64,
    /// Every partition's slots, in each process. Slots alternate between windows, so that a
    /// partition writes one while others may still read the other.
    slots: [Vec<RwLock<Slot<C>>>; 2],
    barrier: SpinBarrier,
    /// The first of this process's partitions.
    first: usize,
    /// Each of this process's partitions' thread: its numbering (the same in each, worked out
    /// by each) and where its time went.
    threads: Vec<Thread>,
    /// The other processes of a run that spans several.
    ranks: Option<Box<dyn Ranks>>,
    /// The clock the caller gave, to tell where the threads' time goes.
    clock: Option<fn() -> Instant>,
    /// The windows ended so far, and the time the next starts at.
    ended: usize,
    next: u64,
}

impl<C> std::fmt::Debug for Windows<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Windows")
            .field("lookahead", &self.lookahead)
            .field("partitions", &self.slots[0].len())
            .field("first", &self.first)
            .field("ranks", &self.ranks.as_ref().map(|r| (r.rank(), r.size())))
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<C: Portable> Windows<C> {
    /// The windows of `per_rank` partitions in each of `ranks`' processes (or in this one
    /// alone), `lookahead` long (at least 1 ps), whose first push number is `first_number`
    /// (numbers below it are taken before the run).
    pub fn new(
        per_rank: usize,
        ranks: Option<Box<dyn Ranks>>,
        lookahead: u64,
        first_number: u64,
    ) -> Self {
        assert!(lookahead > 0, "a window of no time");
        let (rank, size) = ranks.as_ref().map_or((0, 1), |r| (r.rank(), r.size()));
        let k = per_rank * size;
        // Every thread of every process on this machine waits at the windows' ends.
        let threads_here = per_rank * ranks.as_ref().map_or(1, |r| r.on_this_machine());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let slot = || {
            RwLock::new(Slot {
                log: Vec::new(),
                pushes: 0,
                outboxes: (0..k).map(|_| Vec::new()).collect(),
            })
        };
        Windows {
            lookahead,
            slots: std::array::from_fn(|_| (0..k).map(|_| slot()).collect()),
            barrier: SpinBarrier {
                parties: per_rank,
                spins: if threads_here <= cores { 1 << 12 } else { 0 },
                arrived: AtomicUsize::new(0),
                generation: AtomicUsize::new(0),
            },
            first: rank * per_rank,
            threads: (0..per_rank)
                .map(|_| Thread {
                    merge: Merge {
                        pushed: first_number,
                        numbers: vec![Vec::new(); k],
                    },
                    spent: Spent::default(),
                    handed: Handed::default(),
                })
                .collect(),
            ranks,
            clock: None,
            ended: 0,
            next: 0,
        }
    }

    /// This process's place among the run's processes, and how many there are.
    pub fn process(&self) -> (usize, usize) {
        self.ranks.as_ref().map_or((0, 1), |r| (r.rank(), r.size()))
    }

    /// The windows ended so far, and their length.
    pub fn ended(&self) -> (usize, u64) {
        (self.ended, self.lookahead)
    }

    /// Times the threads' work, waits and merges on `clock` from now on ([`Windows::spent`]);
    /// without one they take no time.
    pub fn time_with(&mut self, clock: fn() -> Instant) {
        self.clock = Some(clock);
    }

    /// Where this process's threads spent their time so far, summed over them.
    pub fn spent(&self) -> Spent {
        self.threads
            .iter()
            .fold(Spent::default(), |sum, thread| sum + thread.spent)
    }

    /// What this process handed the others so far.
    pub fn handed(&self) -> Handed {
        self.threads[0].handed
    }

    /// The processes of a run that spans several.
    pub fn ranks(&mut self) -> Option<&mut (dyn Ranks + 'static)> {
        self.ranks.as_deref_mut()
    }

    /// Runs `parts` (this process's partitions, a thread each: the first on the caller's)
    /// through every event up to `until` (inclusive), window by window, from where the last
    /// call left them. What they did before the first call (at time 0) is the first window's
    /// end. Every process of the run makes the same calls.
    pub fn run<P: Partition<Crossing = C>>(&mut self, parts: &mut [P], until: u64) {
        assert_eq!(parts.len(), self.threads.len(), "a partition per thread");
        let driver = Driver {
            slots: &self.slots,
            barrier: &self.barrier,
            lookahead: self.lookahead,
            until,
            window: self.ended,
            start: self.next,
            spans_ranks: self.ranks.is_some(),
            clock: self.clock,
        };
        let first = self.first;
        let ranks = self.ranks.as_deref_mut();
        let ((part, others), (thread, other_threads)) = (
            parts.split_first_mut().expect("a partition at least"),
            self.threads
                .split_first_mut()
                .expect("a partition at least"),
        );
        (self.ended, self.next) = std::thread::scope(|scope| {
            let threads: Vec<_> = others
                .iter_mut()
                .zip(other_threads)
                .enumerate()
                .map(|(i, (part, thread))| {
                    scope.spawn(move || driver.drive(first + 1 + i, part, thread, None))
                })
                .collect();
            let end = driver.drive(first, part, thread, ranks);
            for thread in threads {
                thread.join().expect("a partition's thread");
            }
            end
        });
    }
}

/// What every thread of a [`Windows::run`] shares.
struct Driver<'w, C> {
    slots: &'w [Vec<RwLock<Slot<C>>>; 2],
    barrier: &'w SpinBarrier,
    lookahead: u64,
    until: u64,
    /// The first window of the call, and the time it starts at.
    window: usize,
    start: u64,
    spans_ranks: bool,
    clock: Option<fn() -> Instant>,
}

impl<C> Clone for Driver<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Driver<'_, C> {}

impl<C: Portable> Driver<'_, C> {
    /// Drives partition `me` window by window; the thread given `ranks` exchanges this
    /// process's slots with the others'. Returns the windows ended and where the next starts.
    fn drive<P: Partition<Crossing = C>>(
        self,
        me: usize,
        part: &mut P,
        thread: &mut Thread,
        mut ranks: Option<&mut (dyn Ranks + 'static)>,
    ) -> (usize, u64) {
        let (mut window, mut start) = (self.window, self.start);
        let mut clock = Laps::new(self.clock);
        loop {
            let slots = &self.slots[window % 2];
            part.hand_over(&mut slots[me].write().expect("slot"));
            thread.spent.merging += clock.lap();
            self.barrier.wait();
            if self.spans_ranks {
                if let Some(ranks) = ranks.as_deref_mut() {
                    let parties = self.barrier.parties;
                    crate::ranks::exchange(ranks, slots, parties, &mut thread.handed);
                }
                self.barrier.wait();
            }
            thread.spent.waiting += clock.lap();
            {
                let guards: Vec<RwLockReadGuard<Slot<C>>> =
                    slots.iter().map(|s| s.read().expect("slot")).collect();
                let views: Vec<&Slot<C>> = guards.iter().map(|g| &**g).collect();
                thread.merge.run(&views);
                part.take_back(me, &views, &thread.merge.numbers);
            }
            thread.spent.merging += clock.lap();
            window += 1;
            if start > self.until {
                return (window, start);
            }
            let end = start.saturating_add(self.lookahead - 1).min(self.until);
            part.run(end);
            thread.spent.working += clock.lap();
            start = end + 1;
        }
    }
}

/// A thread's laps, on the clock the caller gave (none: every lap takes no time).
struct Laps {
    clock: Option<fn() -> Instant>,
    last: Option<Instant>,
}

impl Laps {
    fn new(clock: Option<fn() -> Instant>) -> Self {
        Laps {
            last: clock.map(|now| now()),
            clock,
        }
    }

    /// The time since the last lap.
    fn lap(&mut self) -> Duration {
        let (Some(now), Some(last)) = (self.clock, self.last) else {
            return Duration::ZERO;
        };
        let now = now();
        self.last = Some(now);
        now - last
    }
}

/// One thread of a [`Windows::run`]: its partition's numbering, and where its time went.
#[derive(Debug)]
struct Thread {
    merge: Merge,
    spent: Spent,
    /// What the thread that exchanges with other processes handed them.
    handed: Handed,
}

/// Where the threads of a run spent their time, summed over them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Taking their partitions' events.
    pub working: Duration,
    /// At the windows' ends, waiting for the other threads (and processes) to get there, and
    /// for the exchange between processes.
    pub waiting: Duration,
    /// Handing over their windows and merging every partition's.
    pub merging: Duration,
}

impl std::ops::Add for Spent {
    type Output = Spent;
    fn add(self, other: Spent) -> Spent {
        Spent {
            working: self.working + other.working,
            waiting: self.waiting + other.waiting,
            merging: self.merging + other.merging,
        }
    }
}

/// The whole run's numbering of the partitions' pushes.
#[derive(Debug)]
struct Merge {
    /// Pushes before the window being merged.
    pushed: u64,
    /// Per partition, the number of each of its pushes in the window, by provisional number.
    numbers: Vec<Vec<u64>>,
}

impl Merge {
    /// Merges the partitions' windows in the one-core order and numbers every push of the
    /// window in that order.
    fn run<C>(&mut self, slots: &[&Slot<C>]) {
        for (numbers, slot) in self.numbers.iter_mut().zip(slots) {
            numbers.clear();
            numbers.resize(slot.pushes as usize, u64::MAX);
        }
        // Each partition's next event and its rank, the whole run's: a head's rank is worked
        // out once, when it becomes the head, as the event that pushed it is merged by then.
        let mut heads: Vec<(usize, u128)> = slots
            .iter()
            .enumerate()
            .map(|(p, slot)| (0, rank_of(&slot.log, &self.numbers[p], 0)))
            .collect();
        loop {
            // Which partition goes next is a coin toss to the branch predictor: chosen by
            // index arithmetic, not by a branch per partition.
            let p = (1..heads.len()).fold(0, |p, q| if heads[q].1 < heads[p].1 { q } else { p });
            let (mut i, mut rank) = heads[p];
            if rank == u128::MAX {
                break;
            }
            // Partition p's events go first up to the others' earliest (no two ranks are
            // equal): a run of them, each numbering its pushes, without choosing again.
            let others = (0..heads.len())
                .filter(|&q| q != p)
                .fold(u128::MAX, |min, q| min.min(heads[q].1));
            let (log, numbers) = (&slots[p].log, &mut self.numbers[p]);
            while rank < others {
                let first = log[i].1 as usize;
                let end = log.get(i + 1).map_or(slots[p].pushes, |&(_, n)| n) as usize;
                for (number, place) in numbers[first..end].iter_mut().zip(self.pushed..) {
                    *number = place;
                }
                self.pushed += (end - first) as u64;
                i += 1;
                rank = rank_of(log, numbers, i);
            }
            heads[p] = (i, rank);
        }
    }
}

/// The rank of event `i` of a partition's window `log`, the whole run's given the partition's
/// `numbers` so far ([`u128::MAX`] past the last).
fn rank_of(log: &[(u128, u32)], numbers: &[u64], i: usize) -> u128 {
    log.get(i)
        .map_or(u128::MAX, |&(rank, _)| resolve(rank, numbers))
}
