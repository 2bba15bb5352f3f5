//! The simulator's runs across processes over MPI: [`MpiRanks`] carries the bytes that
//! `ibqos_sim::ranks::Ranks` asks for between the processes `mpirun` started, with MPI's
//! collectives on its world communicator.
//!
//! The simulator decides what crosses and when; this crate only moves bytes. Each call is two
//! collectives: the byte counts first, then the bytes (MPI wants every count in advance). Both
//! are MPI's nonblocking collectives, waited for by testing and yielding the core in turn.

use ibqos_sim::ranks::Ranks;
use mpi::Count;
use mpi::Threading;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::request::{self, Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

/// Why MPI could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MpiError {
    #[error("MPI was initialized already in this process")]
    AlreadyInitialized,
    #[error(
        "the MPI library gives threading level {0:?}: a run across processes needs `Serialized` (its windows' exchanges run on one thread, not always the one that started MPI)"
    )]
    Threading(Threading),
}

/// This process's place among those `mpirun` started, and MPI's world communicator between
/// them. Dropping it finalizes MPI.
pub struct MpiRanks {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    /// The processes on this machine (those MPI can share memory with).
    on_this_machine: usize,
    /// Kept for its drop, which finalizes MPI (after `world`, declared first, is dropped).
    _universe: Universe,
}

impl std::fmt::Debug for MpiRanks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiRanks")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl MpiRanks {
    /// Initializes MPI for this process (once per process).
    pub fn init() -> Result<Self, MpiError> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or(MpiError::AlreadyInitialized)?;
        if threading < Threading::Serialized {
            return Err(MpiError::Threading(threading));
        }
        let world = universe.world();
        let (rank, size) = (index(world.rank()), index(world.size()));
        let on_this_machine = index(world.split_shared(0).size());
        Ok(MpiRanks {
            world,
            rank,
            size,
            on_this_machine,
            _universe: universe,
        })
    }
}

impl Ranks for MpiRanks {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn on_this_machine(&self) -> usize {
        self.on_this_machine
    }

    fn all_gather(&mut self, mine: &[u8]) -> Vec<Vec<u8>> {
        let world = &self.world;
        let mine_count = count(mine.len());
        let mut counts = vec![0; self.size];
        request::scope(|scope| {
            completed(world.immediate_all_gather_into(scope, &mine_count, &mut counts[..]))
        });
        let (mut all, displs) = buffer_for(&counts);
        let mut into = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        request::scope(|scope| {
            completed(world.immediate_all_gather_varcount_into(scope, mine, &mut into))
        });
        split(&all, &counts, &displs)
    }

    fn all_to_all(&mut self, to: &[Vec<u8>]) -> Vec<Vec<u8>> {
        assert_eq!(to.len(), self.size, "bytes for each process");
        let world = &self.world;
        let send_counts: Vec<Count> = to.iter().map(|bytes| count(bytes.len())).collect();
        let mut counts = vec![0; self.size];
        request::scope(|scope| {
            completed(world.immediate_all_to_all_into(scope, &send_counts[..], &mut counts[..]))
        });
        let send = to.concat();
        let send_displs = displacements(&send_counts);
        let from = Partition::new(&send[..], &send_counts[..], &send_displs[..]);
        let (mut all, displs) = buffer_for(&counts);
        let mut into = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        request::scope(|scope| {
            completed(world.immediate_all_to_all_varcount_into(scope, &from, &mut into))
        });
        split(&all, &counts, &displs)
    }

    fn gather(&mut self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        let root = self.world.process_at_rank(0);
        let mine_count = count(mine.len());
        if self.rank != 0 {
            request::scope(|scope| completed(root.immediate_gather_into(scope, &mine_count)));
            request::scope(|scope| completed(root.immediate_gather_varcount_into(scope, mine)));
            return None;
        }
        let mut counts = vec![0; self.size];
        request::scope(|scope| {
            completed(root.immediate_gather_into_root(scope, &mine_count, &mut counts[..]))
        });
        let (mut all, displs) = buffer_for(&counts);
        let mut into = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        request::scope(|scope| {
            completed(root.immediate_gather_varcount_into_root(scope, mine, &mut into))
        });
        Some(split(&all, &counts, &displs))
    }
}

/// Waits for `request`, yielding the core between tests. MPI's own wait polls without
/// yielding: with more threads than cores (processes and their threads on one machine), the
/// process it waits for may then not run, and a window's end took a hundred times as long.
fn completed<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) {
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => {
                request = pending;
                std::thread::yield_now();
            }
        }
    }
}

/// MPI's count of `len` bytes. A window's exchange or a partition's counts of over 2 GiB would
/// need a run in more partitions.
fn count(len: usize) -> Count {
    Count::try_from(len).unwrap_or_else(|_| {
        panic!("{len} bytes in one MPI message: past MPI's count; run in more partitions")
    })
}

/// A rank or size MPI gives, which is never negative.
fn index(value: i32) -> usize {
    usize::try_from(value).expect("MPI gives ranks and sizes from 0")
}

/// Where each process's bytes start in a buffer of them all.
fn displacements(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |start, &n| {
            let here = *start;
            *start += n;
            Some(here)
        })
        .collect()
}

/// A buffer for every process's bytes, and where each starts in it.
fn buffer_for(counts: &[Count]) -> (Vec<u8>, Vec<Count>) {
    let total: usize = counts.iter().map(|&n| index(n)).sum();
    (vec![0; total], displacements(counts))
}

/// The buffer of every process's bytes cut into each process's.
fn split(all: &[u8], counts: &[Count], displs: &[Count]) -> Vec<Vec<u8>> {
    counts
        .iter()
        .zip(displs)
        .map(|(&n, &start)| all[index(start)..index(start + n)].to_vec())
        .collect()
}
