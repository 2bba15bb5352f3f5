//! The MAD scheduler: which request goes on the wire next, and what became of each one. It
//! carries any [`Message`]: the SM's SMPs, or the GMPs of a class such as PerfMgt.
//!
//! Sans-IO: the caller hands in requests, received MADs and the current time, and takes out MADs to
//! send; the scheduler never touches a socket or reads the clock. It keeps at most
//! `max_outstanding` MADs on the wire (OpenSM's `max_wire_smps`). It serves the nodes round-robin,
//! so one large switch cannot starve the rest of a sweep. It gives every request a transaction ID
//! whose low 32 bits are never zero (OpenSM and the kernel read 0 as "no TID"). It matches
//! responses by those low 32 bits and the management class (the kernel and ibsim rewrite the high
//! bits). It resends a request that gets no answer until its retries are spent.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use ibqos_mad::{AttributeId, DrPath, Mad, Method, MgmtClass, Routing, SmpRepr, Status};
use rustc_hash::FxHashMap;
use tracing::warn;

use crate::Transmit;
use crate::message::Message;

/// How the scheduler is tuned: OpenSM's `max_wire_smps`, `transaction_timeout` and
/// `transaction_retries`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    pub max_outstanding: usize,
    pub timeout: Duration,
    pub retries: u32,
}

impl SchedulerConfig {
    /// How long a request may wait for its answer, its retries included: how long a kernel
    /// transport must keep waiting for a response before it hands the request back.
    pub fn response_timeout(&self) -> Duration {
        self.timeout.saturating_mul(self.retries.saturating_add(1))
    }
}

/// One request to send, an SMP unless `M` says otherwise. Its transaction ID is assigned by
/// the scheduler.
#[derive(Debug, Clone)]
pub struct Request<C, M = SmpRepr> {
    pub mad: M,
    /// The destination LID of a LID-routed MAD; `None` for a directed-route SMP.
    pub dlid: Option<u16>,
    /// Whose queue the request waits in: requests to different nodes are served in turn.
    pub node: u64,
    /// A timeout other than the configured one (OpenSM's long transaction timeout).
    pub timeout: Option<Duration>,
    pub context: C,
}

/// Why a request ended without a good answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer after every attempt, some of them unanswered, some perhaps handed back.
    TimedOut { attempts: u32 },
    /// The fabric handed every attempt back undelivered (no route, a path into a port that is
    /// not LinkUp, or no agent at the destination).
    Dropped { attempts: u32 },
    /// The node answered with a non-zero MAD status (the D bit already removed), every time.
    Status(Status),
    /// The answers were for another attribute or modifier than the request's.
    Mismatched,
}

/// As an operator reads it, after the request it is about.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::TimedOut { attempts } => write!(f, "no answer after {attempts} attempts"),
            Failure::Dropped { attempts } => write!(
                f,
                "handed back undelivered on all {attempts} attempts (no route, or a path into a \
                 port that is not LinkUp)"
            ),
            Failure::Status(status) => {
                write!(f, "MAD status {:#06x} ({})", status.0, status.describe())
            }
            Failure::Mismatched => f.write_str("answered for another attribute or modifier"),
        }
    }
}

/// What became of a request.
#[derive(Debug, Clone)]
pub enum Completion<C, M = SmpRepr> {
    Answered {
        context: C,
        response: M,
    },
    Failed {
        context: C,
        request: M,
        failure: Failure,
    },
}

/// Counts for the summary an administrator reads after a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// MADs put on the wire, retries included, per (attribute, method).
    pub sent: BTreeMap<(AttributeId, Method), u64>,
    pub retries: u64,
    /// Attempts that got no answer in time or were handed back, per attribute.
    pub timeouts: BTreeMap<AttributeId, u64>,
    /// Answers with a non-zero MAD status, per (attribute, status).
    pub error_statuses: BTreeMap<(AttributeId, Status), u64>,
    /// Received MADs that matched no outstanding request (late answers, duplicates, noise).
    pub unmatched: u64,
    /// Answers whose attribute or modifier differed from the request's.
    pub mismatched: u64,
}

impl SchedulerStats {
    pub fn total_sent(&self) -> u64 {
        self.sent.values().sum()
    }

    fn count_timeout(&mut self, request: &impl Message) {
        *self.timeouts.entry(request.attribute_id()).or_default() += 1;
    }

    pub fn total_timeouts(&self) -> u64 {
        self.timeouts.values().sum()
    }

    pub fn total_error_statuses(&self) -> u64 {
        self.error_statuses.values().sum()
    }
}

#[derive(Debug)]
struct InFlight<C, M> {
    request: Request<C, M>,
    deadline: Instant,
    attempts: u32,
    /// Of the attempts, those the fabric handed back.
    dropped: u32,
}

/// How many emptied queues the scheduler keeps for reuse.
const SPARE_QUEUES: usize = 64;

/// The requests a kept queue has room for: a node's usual share of a phase.
const SPARE_CAPACITY: usize = 8;

/// The scheduler itself; `C` is whatever the caller needs back with each completion.
#[derive(Debug)]
pub struct Scheduler<C, M = SmpRepr> {
    config: SchedulerConfig,
    /// Requests not yet on the wire, per node with any. This map and `in_flight` are read for
    /// every MAD, by integer keys: a plain multiplicative hash, not SipHash, hashes them.
    queues: FxHashMap<u64, VecDeque<Request<C, M>>>,
    /// Emptied queues kept for reuse, so that a node asked again needs no new allocation. At
    /// most [`SPARE_QUEUES`], each cut to [`SPARE_CAPACITY`]: the queues of a whole discovery
    /// are not kept to the end of the sweep.
    spare: Vec<VecDeque<Request<C, M>>>,
    /// Nodes with queued requests, in the order they are served next.
    turn: VecDeque<u64>,
    /// Requests on the wire, by the low 32 bits of their TID.
    in_flight: FxHashMap<u32, InFlight<C, M>>,
    /// Requests whose attempt timed out, to be sent again before new work.
    resend: VecDeque<InFlight<C, M>>,
    /// Requests held back until a time (a retry after a backoff), in submission order.
    delayed: Vec<(Instant, Request<C, M>)>,
    next_tid: u32,
    stats: SchedulerStats,
}

impl<C, M: Message> Scheduler<C, M> {
    pub fn new(config: SchedulerConfig) -> Scheduler<C, M> {
        Scheduler {
            config: SchedulerConfig {
                max_outstanding: config.max_outstanding.max(1),
                ..config
            },
            queues: FxHashMap::default(),
            spare: Vec::new(),
            turn: VecDeque::new(),
            in_flight: FxHashMap::default(),
            resend: VecDeque::new(),
            delayed: Vec::new(),
            next_tid: 0,
            stats: SchedulerStats::default(),
        }
    }

    pub fn stats(&self) -> &SchedulerStats {
        &self.stats
    }

    /// Requests on the wire, waiting for their answers.
    pub fn outstanding(&self) -> usize {
        self.in_flight.len()
    }

    /// Queues a request behind the others for the same node.
    pub fn submit(&mut self, request: Request<C, M>) {
        let queue = match self.queues.entry(request.node) {
            Entry::Occupied(queue) => queue.into_mut(),
            Entry::Vacant(slot) => {
                self.turn.push_back(request.node);
                slot.insert(self.spare.pop().unwrap_or_default())
            }
        };
        queue.push_back(request);
    }

    /// Queues a request once `not_before` has come: a retry after a backoff.
    pub fn submit_at(&mut self, not_before: Instant, request: Request<C, M>) {
        self.delayed.push((not_before, request));
    }

    /// Nothing waits to be sent and the wire has room: a request submitted now is the next
    /// to go out. A caller that plans its requests one at a time submits them then, and the
    /// queues stay short.
    pub fn wants_work(&self) -> bool {
        self.turn.is_empty()
            && self.resend.is_empty()
            && self.in_flight.len() < self.config.max_outstanding
    }

    /// Nothing queued, nothing held back, nothing on the wire.
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty()
            && self.resend.is_empty()
            && self.turn.is_empty()
            && self.delayed.is_empty()
    }

    /// The next SMP to send, if the wire has room: a resend first, then the next node's turn.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<M>> {
        if self.delayed.iter().any(|(at, _)| *at <= now) {
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed)
                .into_iter()
                .partition(|(at, _)| *at <= now);
            self.delayed = later;
            due.into_iter()
                .for_each(|(_, request)| self.submit(request));
        }
        if self.in_flight.len() >= self.config.max_outstanding {
            return None;
        }
        let in_flight = match self.resend.pop_front() {
            Some(mut again) => {
                again.attempts += 1;
                self.stats.retries += 1;
                again
            }
            None => {
                let node = self.turn.pop_front()?;
                let queue = self.queues.get_mut(&node)?;
                let request = queue.pop_front()?;
                if !queue.is_empty() {
                    self.turn.push_back(node);
                } else if let Some(mut emptied) = self.queues.remove(&node)
                    && self.spare.len() < SPARE_QUEUES
                {
                    emptied.shrink_to(SPARE_CAPACITY);
                    self.spare.push(emptied);
                }
                InFlight {
                    request,
                    deadline: now,
                    attempts: 1,
                    dropped: 0,
                }
            }
        };
        Some(self.launch(in_flight, now))
    }

    fn launch(&mut self, mut in_flight: InFlight<C, M>, now: Instant) -> Transmit<M> {
        let tid = self.fresh_tid();
        in_flight.request.mad.set_transaction_id(u64::from(tid));
        in_flight.deadline = now + in_flight.request.timeout.unwrap_or(self.config.timeout);
        let mad = in_flight.request.mad;
        *self
            .stats
            .sent
            .entry((mad.attribute_id(), mad.method()))
            .or_default() += 1;
        let transmit = Transmit {
            mad,
            dlid: in_flight.request.dlid,
        };
        self.in_flight.insert(tid, in_flight);
        transmit
    }

    /// A TID whose low 32 bits are not zero and not on the wire already (a second outstanding
    /// request with the same TID makes the kernel's write fail).
    fn fresh_tid(&mut self) -> u32 {
        loop {
            self.next_tid = self.next_tid.wrapping_add(1);
            if self.next_tid != 0 && !self.in_flight.contains_key(&self.next_tid) {
                return self.next_tid;
            }
        }
    }

    /// A response from the fabric. Returns the completion it settles, or `None` when it matches
    /// nothing on the wire (it is counted and dropped) or the request is sent again.
    ///
    /// An answer for another attribute or modifier than the request's, or with an error status,
    /// is retried like a lost one: a damaged answer looks like either, and a node that really
    /// refuses gives the same error again, so the only cost is the retries.
    pub fn on_response(&mut self, response: M) -> Option<Completion<C, M>> {
        let Some(in_flight) = self.take_matching(response.transaction_id(), response.class())
        else {
            self.stats.unmatched += 1;
            return None;
        };
        let request = &in_flight.request.mad;
        if response.attribute_id() != request.attribute_id()
            || response.attribute_modifier() != request.attribute_modifier()
        {
            self.stats.mismatched += 1;
            return self.retry_or_fail(in_flight, Failure::Mismatched);
        }
        let status = response.status();
        if status != Status::OK {
            *self
                .stats
                .error_statuses
                .entry((request.attribute_id(), status))
                .or_default() += 1;
            return self.retry_or_fail(in_flight, Failure::Status(status));
        }
        Some(Completion::Answered {
            context: in_flight.request.context,
            response,
        })
    }

    /// The fabric handed a request back unanswered (ibsim does so at once for no route or no
    /// handler; the kernel after its own timeout): the same as a timeout of that attempt.
    pub fn on_dropped(&mut self, request: M) -> Option<Completion<C, M>> {
        self.dropped(request.transaction_id(), request.class())
    }

    /// [`on_dropped`](Self::on_dropped) for a request of which only the common MAD header came
    /// back, as the kernel returns it.
    pub fn on_dropped_header(&mut self, header: &Mad<&[u8]>) -> Option<Completion<C, M>> {
        self.dropped(header.transaction_id(), header.mgmt_class())
    }

    fn dropped(&mut self, tid: u64, class: MgmtClass) -> Option<Completion<C, M>> {
        let mut in_flight = self.take_matching(tid, class)?;
        self.stats.count_timeout(&in_flight.request.mad);
        in_flight.dropped += 1;
        let attempts = in_flight.attempts;
        let failure = if in_flight.dropped == attempts {
            Failure::Dropped { attempts }
        } else {
            Failure::TimedOut { attempts }
        };
        self.retry_or_fail(in_flight, failure)
    }

    /// Every request whose deadline has passed is sent again or, with its retries spent, fails.
    ///
    /// They are taken in deadline order, and requests with the same deadline in TID order (the
    /// order they were sent, unless the TIDs wrapped in between), so that the failures and the
    /// resends come out the same on every run.
    pub fn poll_timeouts(&mut self, now: Instant) -> Vec<Completion<C, M>> {
        let mut expired: Vec<(Instant, u32)> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(tid, f)| (f.deadline, *tid))
            .collect();
        expired.sort_unstable();
        let mut failed = Vec::new();
        for (_, tid) in expired {
            if let Some(in_flight) = self.in_flight.remove(&tid) {
                self.stats.count_timeout(&in_flight.request.mad);
                let attempts = in_flight.attempts;
                failed.extend(self.retry_or_fail(in_flight, Failure::TimedOut { attempts }));
            }
        }
        failed
    }

    /// When the next request on the wire times out, or the next held-back one is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        let timeouts = self.in_flight.values().map(|f| f.deadline);
        timeouts.chain(self.delayed.iter().map(|(at, _)| *at)).min()
    }

    /// Sends the request again if it has retries left; otherwise it fails with `failure`.
    fn retry_or_fail(
        &mut self,
        in_flight: InFlight<C, M>,
        failure: Failure,
    ) -> Option<Completion<C, M>> {
        if in_flight.attempts <= self.config.retries {
            self.resend.push_back(in_flight);
            return None;
        }
        Some(Completion::Failed {
            failure,
            request: in_flight.request.mad,
            context: in_flight.request.context,
        })
    }

    /// The outstanding request a received MAD answers: same low 32 TID bits and same class.
    fn take_matching(&mut self, tid: u64, class: MgmtClass) -> Option<InFlight<C, M>> {
        let tid = tid as u32;
        let same_class = |f: &InFlight<C, M>| f.request.mad.class() == class;
        if self.in_flight.get(&tid).is_some_and(same_class) {
            self.in_flight.remove(&tid)
        } else {
            None
        }
    }
}

impl<C> Scheduler<C> {
    /// Queues a SubnGet by directed route along `path` (the egress ports from the SM's port)
    /// behind the others for `node`. A route longer than 63 hops cannot be sent: it is logged
    /// and dropped.
    pub fn get_directed(
        &mut self,
        node: u64,
        path: &[u8],
        attribute: AttributeId,
        modifier: u32,
        context: impl Into<C>,
    ) {
        let Ok(route) = DrPath::request(path) else {
            warn!(?path, "route longer than 63 hops; not followed");
            return;
        };
        self.submit(Request {
            mad: SmpRepr::get(attribute, modifier, 0, Routing::Directed(route)),
            dlid: None,
            node,
            timeout: None,
            context: context.into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::{DrPath, Smp};

    const TIMEOUT: Duration = Duration::from_millis(200);

    fn scheduler(max_outstanding: usize, retries: u32) -> Scheduler<(u64, u32)> {
        Scheduler::new(SchedulerConfig {
            max_outstanding,
            timeout: TIMEOUT,
            retries,
        })
    }

    fn request(node: u64, n: u32) -> Request<(u64, u32)> {
        let routing = Routing::Directed(DrPath::request(&[1]).unwrap());
        Request {
            mad: SmpRepr::get(AttributeId::NodeInfo, 0, 0, routing),
            dlid: None,
            node,
            timeout: None,
            context: (node, n),
        }
    }

    /// The answer a node gives to `sent`, with the TID's high bits rewritten as ibsim and the
    /// kernel do.
    fn answer(sent: &Transmit, status: Status) -> SmpRepr {
        SmpRepr {
            method: Method::GetResp,
            status,
            transaction_id: sent.mad.transaction_id | 0xabcd_0000_0000_0000,
            ..sent.mad
        }
    }

    fn drain(s: &mut Scheduler<(u64, u32)>, now: Instant) -> Vec<Transmit> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    #[test]
    fn never_more_than_max_outstanding_on_the_wire() {
        let mut s = scheduler(4, 0);
        let now = Instant::now();
        (0..10).for_each(|n| s.submit(request(1, n)));
        let first = drain(&mut s, now);
        assert_eq!(first.len(), 4);
        assert!(s.on_response(answer(&first[0], Status::OK)).is_some());
        assert_eq!(drain(&mut s, now).len(), 1);
    }

    #[test]
    fn nodes_take_turns() {
        let mut s = scheduler(100, 0);
        (0..3).for_each(|n| s.submit(request(1, n)));
        (0..3).for_each(|n| s.submit(request(2, n)));
        s.submit(request(3, 0));
        let order: Vec<u64> = drain(&mut s, Instant::now())
            .iter()
            .map(|t| {
                let c = s.on_response(answer(t, Status::OK)).unwrap();
                match c {
                    Completion::Answered { context, .. } => context.0,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(order, vec![1, 2, 3, 1, 2, 1, 2]);
    }

    /// A node asked again after its queue emptied is served in its turn, and the queues of
    /// many nodes served once are not all kept.
    #[test]
    fn emptied_queues_are_reused_and_bounded() {
        let mut s = scheduler(100_000, 0);
        let now = Instant::now();
        (0..1000).for_each(|node| (0..20).for_each(|n| s.submit(request(node, n))));
        assert_eq!(drain(&mut s, now).len(), 20_000);
        assert!(s.queues.is_empty());
        assert_eq!(s.spare.len(), SPARE_QUEUES);
        assert!(s.spare.iter().all(|q| q.capacity() < 20));
        s.submit(request(5, 0));
        s.submit(request(6, 0));
        s.submit(request(5, 1));
        let order: Vec<(u64, u32)> = drain(&mut s, now)
            .iter()
            .map(|t| match s.on_response(answer(t, Status::OK)) {
                Some(Completion::Answered { context, .. }) => context,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(order, [(5, 0), (6, 0), (5, 1)]);
    }

    #[test]
    fn tids_skip_zero_and_match_on_the_low_32_bits() {
        let mut s = scheduler(2, 0);
        s.next_tid = u32::MAX - 1;
        s.submit(request(1, 0));
        s.submit(request(1, 1));
        let sent = drain(&mut s, Instant::now());
        let tids: Vec<u64> = sent.iter().map(|t| t.mad.transaction_id).collect();
        assert_eq!(tids, vec![u64::from(u32::MAX), 1]);
        let done = s.on_response(answer(&sent[1], Status::OK));
        assert!(matches!(
            done,
            Some(Completion::Answered {
                context: (1, 1),
                ..
            })
        ));
    }

    #[test]
    fn a_response_of_the_other_class_does_not_match() {
        let mut s = scheduler(1, 0);
        s.submit(request(1, 0));
        let sent = s.poll_transmit(Instant::now()).unwrap();
        let lid_routed = SmpRepr {
            routing: Routing::Lid,
            ..answer(&sent, Status::OK)
        };
        assert!(s.on_response(lid_routed).is_none());
        assert_eq!(s.stats().unmatched, 1);
        assert!(s.on_response(answer(&sent, Status::OK)).is_some());
        assert!(s.is_idle());
    }

    #[test]
    fn timeouts_are_retried_then_fail() {
        let mut s = scheduler(1, 2);
        let start = Instant::now();
        s.submit(request(7, 0));
        let mut now = start;
        let mut attempts = 0;
        let failure = loop {
            if let Some(sent) = s.poll_transmit(now) {
                attempts += 1;
                assert_eq!(s.next_deadline(), Some(now + TIMEOUT));
                let _ = sent;
            }
            now += TIMEOUT;
            if let Some(done) = s.poll_timeouts(now).pop() {
                break done;
            }
        };
        assert_eq!(attempts, 3, "one send and two retries");
        assert!(matches!(
            failure,
            Completion::Failed {
                failure: Failure::TimedOut { attempts: 3 },
                context: (7, 0),
                ..
            }
        ));
        assert_eq!(
            (
                s.stats().retries,
                s.stats().total_timeouts(),
                s.stats().total_sent()
            ),
            (2, 3, 3)
        );
        assert!(s.is_idle());
    }

    #[test]
    fn timeouts_fail_in_deadline_order_then_in_sending_order() {
        let mut s = scheduler(100, 0);
        let now = Instant::now();
        let mut late = request(0, 0);
        late.timeout = Some(TIMEOUT * 2);
        s.submit(late);
        (1..=20).for_each(|node| s.submit(request(node, 0)));
        assert_eq!(drain(&mut s, now).len(), 21);
        let failed: Vec<u64> = s
            .poll_timeouts(now + TIMEOUT * 2)
            .into_iter()
            .map(|done| match done {
                Completion::Failed { context, .. } => context.0,
                other => panic!("{other:?}"),
            })
            .collect();
        let mut want: Vec<u64> = (1..=20).collect();
        want.push(0);
        assert_eq!(failed, want);
    }

    #[test]
    fn a_dropped_request_is_retried_with_a_fresh_tid() {
        let mut s = scheduler(1, 1);
        let now = Instant::now();
        s.submit(request(1, 0));
        let first = s.poll_transmit(now).unwrap();
        assert!(s.on_dropped(first.mad).is_none());
        let second = s.poll_transmit(now).unwrap();
        assert_ne!(first.mad.transaction_id, second.mad.transaction_id);
        assert!(matches!(
            s.on_dropped(second.mad),
            Some(Completion::Failed {
                failure: Failure::Dropped { attempts: 2 },
                ..
            })
        ));
    }

    #[test]
    fn a_request_handed_back_every_time_fails_as_dropped() {
        let mut s = scheduler(1, 2);
        let now = Instant::now();
        s.submit(request(1, 0));
        let first = s.poll_transmit(now).unwrap();
        assert!(s.on_dropped(first.mad).is_none());
        // The kernel hands back only the 24-byte common header.
        let mut bytes = [0u8; 256];
        s.poll_transmit(now)
            .unwrap()
            .mad
            .emit(&mut Smp::new_unchecked(&mut bytes[..]));
        let header = Mad::new_checked(&bytes[..24]).unwrap();
        assert!(s.on_dropped_header(&header).is_none());
        let third = s.poll_transmit(now).unwrap();
        assert!(matches!(
            s.on_dropped(third.mad),
            Some(Completion::Failed {
                failure: Failure::Dropped { attempts: 3 },
                ..
            })
        ));
    }

    #[test]
    fn a_request_dropped_only_sometimes_fails_as_timed_out() {
        let mut s = scheduler(1, 1);
        let now = Instant::now();
        s.submit(request(1, 0));
        assert!(s.poll_transmit(now).is_some());
        assert!(s.poll_timeouts(now + TIMEOUT).is_empty(), "resent");
        let second = s.poll_transmit(now + TIMEOUT).unwrap();
        assert!(matches!(
            s.on_dropped(second.mad),
            Some(Completion::Failed {
                failure: Failure::TimedOut { attempts: 2 },
                ..
            })
        ));
    }

    #[test]
    fn error_statuses_are_retried_then_fail() {
        let mut s = scheduler(1, 1);
        let now = Instant::now();
        s.submit(request(1, 0));
        let sent = s.poll_transmit(now).unwrap();
        assert!(
            s.on_response(answer(&sent, Status(0x0001))).is_none(),
            "busy: resent"
        );
        let again = s.poll_transmit(now).unwrap();
        let done = s.on_response(answer(&again, Status(0x001c)));
        assert!(matches!(
            done,
            Some(Completion::Failed {
                failure: Failure::Status(Status(0x001c)),
                ..
            })
        ));
        assert_eq!(
            (s.stats().total_error_statuses(), s.stats().retries),
            (2, 1)
        );
    }

    #[test]
    fn an_answer_for_another_attribute_is_retried() {
        let mut s = scheduler(1, 1);
        let now = Instant::now();
        s.submit(request(1, 0));
        let sent = s.poll_transmit(now).unwrap();
        let wrong = SmpRepr {
            attribute_id: AttributeId::PortInfo,
            ..answer(&sent, Status::OK)
        };
        assert!(s.on_response(wrong).is_none());
        let again = s.poll_transmit(now).unwrap();
        let wrong_modifier = SmpRepr {
            attribute_modifier: 9,
            ..answer(&again, Status::OK)
        };
        assert!(matches!(
            s.on_response(wrong_modifier),
            Some(Completion::Failed {
                failure: Failure::Mismatched,
                ..
            })
        ));
        assert_eq!(s.stats().mismatched, 2);
    }

    #[test]
    fn a_held_back_request_waits_for_its_time() {
        let mut s = scheduler(1, 0);
        let now = Instant::now();
        let later = now + Duration::from_millis(50);
        s.submit_at(later, request(1, 0));
        assert!(!s.is_idle());
        assert_eq!(s.next_deadline(), Some(later));
        assert!(s.poll_transmit(now).is_none());
        assert!(s.poll_transmit(later).is_some());
    }

    #[test]
    fn long_timeouts_apply_per_request() {
        let mut s = scheduler(1, 0);
        let now = Instant::now();
        let mut long = request(1, 0);
        long.timeout = Some(Duration::from_millis(500));
        s.submit(long);
        s.poll_transmit(now).unwrap();
        assert_eq!(s.next_deadline(), Some(now + Duration::from_millis(500)));
        assert!(s.poll_timeouts(now + TIMEOUT).is_empty());
    }
}
