//! Work a phase plans at its start but turns into SMPs only when the scheduler wants work.
//!
//! The scheduler queues a whole request per SMP (the MAD, its route, its context: about 300
//! bytes), in a queue per node. A phase that submitted its tens of thousands of SMPs at once
//! held them all: 19 MB for the ACTIVE Sets of a 10,416-node fat tree. A job here is a few
//! bytes. Jobs are put in the scheduler's own turn order (one per node in turn, nodes in the
//! order of their first job), so the SMPs leave in the order a submission of all of them at
//! once would send them.

use ibqos_mad::PortInfoRepr;
use rustc_hash::FxHashMap;

use super::Sweep;
use super::writes::TableKind;
use crate::engine::subnet::PortKey;

/// One SMP, or one Set planned with a read of what the fabric holds, still to be planned.
#[derive(Debug, Clone, Copy)]
pub(super) enum Job {
    /// Set `index` of a manager's table writes.
    Write(TableKind, u32),
    /// The PortInfo Set at `index` of the feed's list.
    PortInfo(u32),
    /// The SwitchInfo Set of a switch (its LinearFDBTop), before its LFT blocks.
    SwitchInfo { switch: u64 },
    /// One block of a switch's LFT.
    LftBlock { switch: u64, block: u16 },
    /// A Get of one block of a port's P_Key table.
    ReadPKeys { port: PortKey, block: u16 },
}

/// The jobs of the phase under way, in the order they are handed to the scheduler.
#[derive(Debug, Default)]
pub(super) struct Feed {
    order: Vec<Job>,
    next: usize,
    /// What the [`Job::PortInfo`] jobs Set, planned at the phase's start: each port's settings
    /// depend on what its peer held then.
    port_infos: Vec<(PortKey, PortInfoRepr)>,
}

impl Feed {
    /// `jobs`, each with the node it goes to, put in the scheduler's turn order.
    pub(super) fn new(jobs: impl IntoIterator<Item = (u64, Job)>) -> Feed {
        let mut slots: FxHashMap<u64, usize> = FxHashMap::default();
        let mut per_node: Vec<Vec<Job>> = Vec::new();
        for (node, job) in jobs {
            let slot = *slots.entry(node).or_insert_with(|| {
                per_node.push(Vec::new());
                per_node.len() - 1
            });
            per_node[slot].push(job);
        }
        let rounds = per_node.iter().map(Vec::len).max().unwrap_or(0);
        let order = (0..rounds)
            .flat_map(|round| per_node.iter().filter_map(move |jobs| jobs.get(round)))
            .copied()
            .collect();
        Feed {
            order,
            next: 0,
            port_infos: Vec::new(),
        }
    }

    /// A PortInfo Set for each of `sets`.
    pub(super) fn port_infos(sets: Vec<(PortKey, PortInfoRepr)>) -> Feed {
        let jobs = sets
            .iter()
            .enumerate()
            .map(|(index, (key, _))| (key.node, Job::PortInfo(index as u32)));
        let mut feed = Feed::new(jobs);
        feed.port_infos = sets;
        feed
    }

    /// Every job has been handed out.
    pub(super) fn is_empty(&self) -> bool {
        self.next >= self.order.len()
    }

    /// The next job; the feed lets go of its lists once it has handed out the last.
    fn pop(&mut self) -> Option<Job> {
        let Some(&job) = self.order.get(self.next) else {
            *self = Feed::default();
            return None;
        };
        self.next += 1;
        Some(job)
    }
}

impl Sweep {
    /// Plans the feed's next jobs while the scheduler wants work.
    pub(super) fn feed_jobs(&mut self) {
        while self.scheduler.wants_work() {
            let Some(job) = self.feed.pop() else {
                return;
            };
            match job {
                Job::Write(kind, index) => self.plan_write(kind, index as usize),
                Job::PortInfo(index) => {
                    if let Some(&(key, info)) = self.feed.port_infos.get(index as usize) {
                        self.set_port_info(key, info);
                    }
                }
                Job::SwitchInfo { switch } => self.set_linear_fdb_top(switch),
                Job::LftBlock { switch, block } => self.set_lft_block(switch, block),
                Job::ReadPKeys { port, block } => self.read_pkey_block(port, block),
            }
        }
    }
}
