//! A run that spans processes: the seam between the windows ([`crate::window`]) and a
//! transport that moves bytes between processes (MPI in `ibqos-sim-mpi`).
//!
//! Each process (a rank) holds some of the run's partitions, a thread each. At a window's end
//! every partition merges every partition's log, but takes in only what was pushed to it. So
//! the logs go to every rank (an all-gather) and each outbox to the rank that owns its
//! partition (an all-to-all). After the run, the first rank gathers what the others' partitions
//! own and puts the report together. The bytes are postcard's encoding of the slots' parts.

use std::sync::RwLock;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::window::Slot;

/// What crosses from one partition to another: between threads as it is, between processes as
/// bytes.
pub trait Portable: Send + Sync + Serialize + DeserializeOwned {}

impl<C: Send + Sync + Serialize + DeserializeOwned> Portable for C {}

/// The processes of a run, as a transport (MPI's communicator, say) links them. Every process
/// makes the same calls in the same order; each call returns once every process made it.
pub trait Ranks {
    /// This process's place among them, from 0.
    fn rank(&self) -> usize;
    /// How many there are.
    fn size(&self) -> usize;
    /// How many of them share this machine's cores (this one included).
    fn on_this_machine(&self) -> usize;
    /// Every process's `mine`, in rank order (this one's included).
    fn all_gather(&mut self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// Sends `to[r]` to process `r` (`to` has one entry per process); returns what each sent
    /// this one, in rank order.
    fn all_to_all(&mut self, to: &[Vec<u8>]) -> Vec<Vec<u8>>;
    /// Every process's `mine` on the first, in rank order; `None` on the others.
    fn gather(&mut self, mine: &[u8]) -> Option<Vec<Vec<u8>>>;
}

/// A window's log and pushes, as the slot holds them.
type Log = (u32, Vec<(u128, u32)>);

/// Encodes what this process hands to others. Its own values only: an encoding failure is a
/// bug (a type serde cannot write), not input.
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("a run's own state encodes")
}

/// Decodes what another process of the same run (the same program, on the same inputs) handed
/// over. [`check_agreement`] made sure at the start that the processes run the same thing.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> T {
    postcard::from_bytes(bytes).expect("another rank of the same run sent what this one reads")
}

/// What a process handed the others at the windows' ends: its logs' bytes (each to every other
/// process) and its crossings' bytes (each to the process it is for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handed {
    pub log_bytes: u64,
    pub crossing_bytes: u64,
}

/// At a window's end, after every partition of this process handed over its slot in `slots`
/// (every partition's, `per_rank` to a process): fills the other processes' partitions' slots
/// with their logs and with what they pushed to this process's partitions. Adds what it sent
/// to `handed`.
pub(crate) fn exchange<C: Portable>(
    ranks: &mut dyn Ranks,
    slots: &[RwLock<Slot<C>>],
    per_rank: usize,
    handed: &mut Handed,
) {
    let (me, size) = (ranks.rank(), ranks.size());
    let mine = me * per_rank..(me + 1) * per_rank;
    let (logs, outboxes) = {
        let guards: Vec<_> = slots[mine.clone()]
            .iter()
            .map(|slot| slot.read().expect("slot"))
            .collect();
        let logs: Vec<(u32, &[(u128, u32)])> = guards
            .iter()
            .map(|slot| (slot.pushes, &slot.log[..]))
            .collect();
        // To each process: per partition of mine, per partition of theirs, what mine pushed.
        let outboxes: Vec<Vec<u8>> = (0..size)
            .map(|rank| {
                let theirs = rank * per_rank..(rank + 1) * per_rank;
                let boxes: Vec<&[Vec<C>]> = guards
                    .iter()
                    .map(|slot| &slot.outboxes[theirs.clone()])
                    .collect();
                if rank == me {
                    Vec::new()
                } else {
                    encode(&boxes)
                }
            })
            .collect();
        let logs = encode(&logs);
        handed.log_bytes += logs.len() as u64;
        handed.crossing_bytes += outboxes.iter().map(|b| b.len() as u64).sum::<u64>();
        (ranks.all_gather(&logs), outboxes)
    };
    let received = ranks.all_to_all(&outboxes);
    for rank in (0..size).filter(|&rank| rank != me) {
        let logs: Vec<Log> = decode(&logs[rank]);
        let boxes: Vec<Vec<Vec<C>>> = decode(&received[rank]);
        for ((i, (pushes, log)), boxes) in logs.into_iter().enumerate().zip(boxes) {
            let mut slot = slots[rank * per_rank + i].write().expect("slot");
            slot.pushes = pushes;
            slot.log = log;
            for (j, outbox) in boxes.into_iter().enumerate() {
                slot.outboxes[me * per_rank + j] = outbox;
            }
        }
    }
}

/// Whether every process runs the same thing: each hands over `fingerprint` (what its set-up
/// made of its inputs); `Err` names the first process whose fingerprint differs from the first
/// process's.
pub(crate) fn check_agreement<T: Serialize + DeserializeOwned + PartialEq>(
    ranks: &mut dyn Ranks,
    fingerprint: &T,
) -> Result<(), usize> {
    let all = ranks.all_gather(&encode(fingerprint));
    let first: T = decode(&all[0]);
    match all[1..]
        .iter()
        .position(|bytes| postcard::from_bytes::<T>(bytes).ok().as_ref() != Some(&first))
    {
        Some(i) => Err(i + 1),
        None => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod in_process {
    //! Ranks as threads of one process, for tests of a run that spans processes without MPI.

    use std::sync::{Arc, Barrier, Mutex};

    use super::Ranks;

    /// What the ranks share: `inboxes[r][s]`, what rank `s` handed rank `r`.
    #[derive(Debug)]
    struct Shared {
        barrier: Barrier,
        inboxes: Vec<Mutex<Vec<Vec<u8>>>>,
    }

    /// One of `size` ranks that are threads of this process.
    #[derive(Debug)]
    pub(crate) struct ThreadRank {
        rank: usize,
        shared: Arc<Shared>,
    }

    /// `size` ranks, one for each thread that runs one.
    pub(crate) fn ranks(size: usize) -> Vec<ThreadRank> {
        let shared = Arc::new(Shared {
            barrier: Barrier::new(size),
            inboxes: (0..size)
                .map(|_| Mutex::new(vec![Vec::new(); size]))
                .collect(),
        });
        (0..size)
            .map(|rank| ThreadRank {
                rank,
                shared: Arc::clone(&shared),
            })
            .collect()
    }

    impl ThreadRank {
        /// Hands `to[r]` to each rank `r` and returns what each handed this one.
        fn swap(&mut self, to: impl Fn(usize) -> Vec<u8>) -> Vec<Vec<u8>> {
            for (r, inbox) in self.shared.inboxes.iter().enumerate() {
                inbox.lock().expect("inbox")[self.rank] = to(r);
            }
            self.shared.barrier.wait();
            let got = std::mem::take(&mut *self.shared.inboxes[self.rank].lock().expect("inbox"));
            *self.shared.inboxes[self.rank].lock().expect("inbox") = vec![Vec::new(); got.len()];
            // No rank hands over the next call's bytes before every rank took this call's.
            self.shared.barrier.wait();
            got
        }
    }

    impl Ranks for ThreadRank {
        fn rank(&self) -> usize {
            self.rank
        }

        fn size(&self) -> usize {
            self.shared.inboxes.len()
        }

        fn on_this_machine(&self) -> usize {
            self.size()
        }

        fn all_gather(&mut self, mine: &[u8]) -> Vec<Vec<u8>> {
            self.swap(|_| mine.to_vec())
        }

        fn all_to_all(&mut self, to: &[Vec<u8>]) -> Vec<Vec<u8>> {
            self.swap(|r| to[r].clone())
        }

        fn gather(&mut self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
            let all = self.swap(|r| if r == 0 { mine.to_vec() } else { Vec::new() });
            (self.rank == 0).then_some(all)
        }
    }
}
