//! RMPP (IBA 13.6): how a GMP longer than one MAD travels as segments, as a sans-IO engine.
//!
//! Each segment is a whole 256-byte MAD that repeats the class header (56 bytes for SA) and
//! carries the next 200 bytes of data. [`segments`] cuts a message; a [`Sender`] sends them in
//! windows the receiver opens with ACKs and retries from the last ACKed segment on a timeout;
//! a [`Receiver`] reassembles DATA segments and says which ACK (or ABORT) to send back. Time is
//! passed in; nothing here reads a clock or does I/O.
//!
//! The numbers follow the Linux kernel's RMPP (drivers/infiniband/core/mad_rmpp.c), which is
//! what OpenSM and every libibumad client meet on a real fabric: PayloadLength counts from byte
//! 36, 220 bytes per segment (`send_next_seg`); the reassembled length is
//! `56 + segments * 200 - pad` with `pad = 220 - PayloadLength` of the last (`get_mad_len`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::Result;
use crate::sa::{RmppFlags, RmppType, SA_DATA_LEN, SA_HEADER_LEN, SaMad};

/// The size of every segment: one MAD.
pub const SEGMENT_LEN: usize = 256;
/// RMPP payload per segment, counted from byte 36 (the end of the RMPP header): the class
/// header's remaining 20 bytes and 200 bytes of data.
pub const PAYLOAD_PER_SEGMENT: u32 = 220;
/// The TransactionID's bytes in the common header, which tell transfers apart.
const TID: core::ops::Range<usize> = 8..16;
/// Where the RMPP header ends and the class header resumes.
const RMPP_HEADER_END: usize = 36;
/// The RMPPVersion of every segment.
pub const RMPP_VERSION: u8 = 1;
/// The window a receiver opens: the kernel's `window_size` for its default receive queue.
pub const DEFAULT_WINDOW: u32 = 64;
/// How long a sender waits for the ACK of a window before it retries (the kernel's 2 s).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a receiver waits for the next segment before it aborts (the kernel's 40 s).
pub const RECEIVE_TIMEOUT: Duration = Duration::from_secs(40);

/// RMPPStatus values of STOP and ABORT (IBA 13.6.2.1, table 171).
pub mod status {
    /// ResX: STOP, the receiver is out of resources.
    pub const RESOURCES_EXHAUSTED: u8 = 1;
    /// T2L: total time too long (the receiver's reassembly timed out).
    pub const TOTAL_TIME_TOO_LONG: u8 = 118;
    /// The last segment's PayloadLength is inconsistent.
    pub const BAD_LENGTH: u8 = 119;
    /// A segment out of sequence: a DATA segment other than 1 with no transfer under way.
    pub const BAD_SEGMENT: u8 = 120;
    /// BadT: an RMPPType the receiver does not take.
    pub const BAD_TYPE: u8 = 121;
    /// W2S: NewWindowLast below the ACKed segment.
    pub const WINDOW_TOO_SMALL: u8 = 122;
    /// S2B: an ACK of a segment that was never sent.
    pub const SEGMENT_TOO_BIG: u8 = 123;
    /// UnV: an RMPPVersion other than 1.
    pub const UNSUPPORTED_VERSION: u8 = 125;
    /// TMR: the sender gave up after its retries.
    pub const TOO_MANY_RETRIES: u8 = 126;
}

/// How many segments `data_len` bytes of data take: at least one, so that an empty GetTable
/// answer still goes as one segment.
pub fn segment_count(data_len: usize) -> u32 {
    u32::try_from(data_len.div_ceil(SA_DATA_LEN).max(1)).unwrap_or(u32::MAX)
}

/// Cuts a message (`header` then `payload`, the data after it) into DATA segments: each the
/// header with RMPPVersion 1, DATA, Active (First on segment 1, Last on the last), segment
/// numbers from 1, and PayloadLength: `count * 220 - pad` on the first, `220 - pad` on the last,
/// 0 between, where `pad` is the zero fill of the last segment (so a lone segment says
/// `20 + payload.len()`).
pub fn segments(header: &[u8; SA_HEADER_LEN], payload: &[u8]) -> Vec<[u8; SEGMENT_LEN]> {
    let count = segment_count(payload.len());
    let pad = u32::try_from(count as usize * SA_DATA_LEN - payload.len()).unwrap_or(0);
    (1..=count)
        .map(|number| {
            let mut segment = [0; SEGMENT_LEN];
            segment[..SA_HEADER_LEN].copy_from_slice(header);
            let start = (number as usize - 1) * SA_DATA_LEN;
            let chunk =
                &payload[start.min(payload.len())..(start + SA_DATA_LEN).min(payload.len())];
            segment[SA_HEADER_LEN..SA_HEADER_LEN + chunk.len()].copy_from_slice(chunk);
            let mut flags = RmppFlags::ACTIVE;
            let mut payload_length = 0;
            if number == 1 {
                flags |= RmppFlags::FIRST;
                payload_length = count * PAYLOAD_PER_SEGMENT - pad;
            }
            if number == count {
                flags |= RmppFlags::LAST;
                payload_length = PAYLOAD_PER_SEGMENT - pad;
            }
            let mut mad = SaMad::new_unchecked(&mut segment[..]);
            mad.set_rmpp_version(RMPP_VERSION);
            mad.set_rmpp_type(RmppType::Data);
            mad.set_rmpp_flags(flags);
            mad.set_rmpp_status(0);
            mad.set_segment_number(number);
            mad.set_payload_length(payload_length);
            segment
        })
        .collect()
}

/// A control MAD (ACK, STOP or ABORT) answering `to`: its first 36 bytes with the response bit
/// of the method flipped, then the RMPP header given, data zero (the kernel's `format_ack` and
/// `nack_recv`).
fn control(
    to: &[u8],
    rmpp_type: RmppType,
    status: u8,
    segment: u32,
    window_last: u32,
) -> [u8; 256] {
    let mut mad = [0; SEGMENT_LEN];
    mad[..RMPP_HEADER_END].copy_from_slice(&to[..RMPP_HEADER_END]);
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    let method = view.header().method();
    view.header_mut()
        .set_method((u8::from(method) ^ 0x80).into());
    view.set_rmpp_version(RMPP_VERSION);
    view.set_rmpp_type(rmpp_type);
    view.set_rmpp_flags(RmppFlags::ACTIVE);
    view.set_rmpp_status(status);
    view.set_segment_number(segment);
    view.set_payload_length(window_last);
    mad
}

/// What a [`Receiver`] makes of one segment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Received {
    /// The ACK, STOP or ABORT to send back, if any.
    pub reply: Option<[u8; SEGMENT_LEN]>,
    /// The whole message (header and data, `56 + data` bytes), when this segment completed it.
    pub message: Option<Vec<u8>>,
}

impl Received {
    /// The ABORT with `status` answering `segment`.
    fn abort(segment: &[u8], status: u8) -> Self {
        Self {
            reply: Some(control(segment, RmppType::Abort, status, 0, 0)),
            message: None,
        }
    }
}

/// A transfer being reassembled.
#[derive(Debug, Clone)]
struct Reassembly {
    /// The first segment's 56-byte header, which the message keeps.
    header: [u8; SA_HEADER_LEN],
    /// The data of segments 1..=last.
    data: Vec<u8>,
    /// The last segment received in order.
    last: u32,
    /// NewWindowLast of the last ACK.
    window_last: u32,
    /// Segments inside the window that arrived ahead of their turn, kept until it comes (as
    /// the kernel's `find_seg_location` keeps them).
    ahead: BTreeMap<u32, [u8; SEGMENT_LEN]>,
    /// When the last in-order segment arrived.
    last_arrival: Instant,
}

/// The receiving side of one RMPP transfer (one TID from one peer): takes DATA segments in any
/// order, ACKs each window, and hands over the reassembled message.
#[derive(Debug, Clone)]
pub struct Receiver {
    window: u32,
    transfer: Option<Reassembly>,
}

impl Default for Receiver {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW)
    }
}

impl Receiver {
    /// A receiver that opens windows of `window` segments (at least 1).
    pub fn new(window: u32) -> Self {
        Self {
            window: window.max(1),
            transfer: None,
        }
    }

    /// Takes one MAD of the transfer. Fails only if it is shorter than the 56-byte header.
    ///
    /// - Segment 1 with First starts (or restarts) the transfer and is ACKed with NewWindowLast
    ///   `1 + window`.
    /// - The next segment in order is kept; it is ACKed when it ends the window (which then
    ///   moves `window` on) or is Last. A segment ahead of its turn but inside the window waits
    ///   for the ones before it; one beyond the window is dropped.
    /// - A duplicate (a segment at or below the last in order) is ACKed again, so a sender
    ///   whose ACK was lost moves on.
    /// - RMPPVersion other than 1, a type other than DATA, First on a segment other than 1, or
    ///   a segment with no transfer under way is answered with ABORT and its status.
    ///
    /// On Last the message is `56 + segments * 200 - pad` bytes long, `pad = 220 -
    /// PayloadLength` (0 if that is out of 0..=220), at least the 56-byte header.
    pub fn receive(&mut self, segment: &[u8], now: Instant) -> Result<Received> {
        let mad = SaMad::new_checked(segment)?;
        let abort = |status| Received::abort(segment, status);
        if mad.rmpp_version() != RMPP_VERSION {
            return Ok(abort(status::UNSUPPORTED_VERSION));
        }
        if mad.rmpp_type() != RmppType::Data {
            return Ok(abort(status::BAD_TYPE));
        }
        let number = mad.segment_number();
        if mad.rmpp_flags().contains(RmppFlags::FIRST) {
            if number != 1 {
                return Ok(abort(status::BAD_SEGMENT));
            }
            // The same TID again is a duplicate of this transfer's first segment (the kernel's
            // `start_rmpp` falls back to `continue_rmpp`); another TID starts a new transfer.
            let same_transfer = self
                .transfer
                .as_ref()
                .is_some_and(|transfer| transfer.header[TID] == segment[TID]);
            if same_transfer {
                return self.continue_transfer(segment, number, now);
            }
            let mut header = [0; SA_HEADER_LEN];
            header.copy_from_slice(&segment[..SA_HEADER_LEN]);
            self.transfer = Some(Reassembly {
                header,
                data: Vec::new(),
                last: 0,
                window_last: self.window.saturating_add(1),
                ahead: BTreeMap::new(),
                last_arrival: now,
            });
        }
        self.continue_transfer(segment, number, now)
    }

    /// Segment `number` of the transfer under way (ABORT if there is none).
    fn continue_transfer(&mut self, segment: &[u8], number: u32, now: Instant) -> Result<Received> {
        let Some(transfer) = self.transfer.as_mut() else {
            return Ok(Received::abort(segment, status::BAD_SEGMENT));
        };
        let ack = |transfer: &Reassembly| {
            control(
                segment,
                RmppType::Ack,
                0,
                transfer.last,
                transfer.window_last,
            )
        };
        if number <= transfer.last {
            return Ok(Received {
                reply: Some(ack(transfer)),
                message: None,
            });
        }
        if number > transfer.window_last {
            return Ok(Received::default());
        }
        let mut whole = [0; SEGMENT_LEN];
        let len = segment.len().min(SEGMENT_LEN);
        whole[..len].copy_from_slice(&segment[..len]);
        transfer.ahead.insert(number, whole);
        let mut acked = false;
        while let Some(next) = transfer.ahead.remove(&transfer.last.saturating_add(1)) {
            transfer.last += 1;
            transfer.last_arrival = now;
            transfer.data.extend_from_slice(&next[SA_HEADER_LEN..]);
            let next = SaMad::new_unchecked(&next[..]);
            if next.rmpp_flags().contains(RmppFlags::LAST) {
                let pad = PAYLOAD_PER_SEGMENT.saturating_sub(next.payload_length()) as usize;
                let len = (SA_HEADER_LEN + transfer.data.len())
                    .saturating_sub(pad)
                    .max(SA_HEADER_LEN);
                let reply = ack(transfer);
                let transfer = self.transfer.take().expect("a transfer is under way");
                let mut message = transfer.header.to_vec();
                message.extend_from_slice(&transfer.data);
                message.truncate(len);
                return Ok(Received {
                    reply: Some(reply),
                    message: Some(message),
                });
            }
            if transfer.last == transfer.window_last {
                transfer.window_last = transfer.window_last.saturating_add(self.window);
                acked = true;
            }
            acked |= transfer.last == 1;
        }
        Ok(Received {
            reply: acked.then(|| ack(transfer)),
            message: None,
        })
    }

    /// When the transfer under way times out, if one is.
    pub fn deadline(&self) -> Option<Instant> {
        self.transfer
            .as_ref()
            .map(|transfer| transfer.last_arrival + RECEIVE_TIMEOUT)
    }

    /// Checks the reassembly timeout: past it, the transfer is dropped and the ABORT (T2L) to
    /// send is returned.
    pub fn poll(&mut self, now: Instant) -> Option<[u8; SEGMENT_LEN]> {
        if self.deadline()? > now {
            return None;
        }
        let transfer = self.transfer.take()?;
        Some(control(
            &transfer.header,
            RmppType::Abort,
            status::TOTAL_TIME_TOO_LONG,
            0,
            0,
        ))
    }
}

/// Where a [`Sender`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderState {
    /// Segments remain unACKed.
    Sending,
    /// The receiver ACKed the last segment.
    Complete,
    /// The transfer ended without the last ACK: the receiver sent STOP or ABORT, or an ACK was
    /// inconsistent, or the retries ran out. The RMPPStatus says which.
    Aborted(u8),
}

/// The sending side of one RMPP transfer: sends the segments the receiver's window allows,
/// moves on with its ACKs and, when an ACK is late, sends again from the last ACKed segment.
#[derive(Debug, Clone)]
pub struct Sender {
    segments: Vec<[u8; SEGMENT_LEN]>,
    /// The next segment to send (1-based).
    next: u32,
    /// The highest segment sent so far.
    highest_sent: u32,
    /// The last segment the receiver ACKed.
    last_ack: u32,
    /// The last segment the receiver's window allows.
    window_last: u32,
    retries: u32,
    retries_left: u32,
    deadline: Option<Instant>,
    state: SenderState,
}

impl Sender {
    /// A sender of `header` then `payload` (see [`segments`]) with a window of one segment
    /// until the first ACK, that retries `retries` times.
    pub fn new(header: &[u8; SA_HEADER_LEN], payload: &[u8], retries: u32) -> Self {
        Self {
            segments: segments(header, payload),
            next: 1,
            highest_sent: 0,
            last_ack: 0,
            window_last: 1,
            retries,
            retries_left: retries,
            deadline: None,
            state: SenderState::Sending,
        }
    }

    /// How many segments the message takes.
    pub fn segment_count(&self) -> u32 {
        self.segments.len() as u32
    }

    /// Where the transfer is.
    pub fn state(&self) -> SenderState {
        self.state
    }

    /// When [`poll`](Self::poll) should next be called for a timeout, if a window is waiting
    /// for its ACK.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The MADs to send now: on a passed deadline, a retry from the segment after the last ACK
    /// (or, with no retries left, the ABORT TMR that ends the transfer); then every segment the
    /// window allows that was not sent yet. Sending arms the deadline [`SEND_TIMEOUT`] ahead.
    pub fn poll(&mut self, now: Instant) -> Vec<[u8; SEGMENT_LEN]> {
        if self.state != SenderState::Sending {
            return Vec::new();
        }
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            if self.retries_left == 0 {
                self.state = SenderState::Aborted(status::TOO_MANY_RETRIES);
                self.deadline = None;
                let mut abort = control(
                    &self.segments[0],
                    RmppType::Abort,
                    status::TOO_MANY_RETRIES,
                    0,
                    0,
                );
                // Sent on the transfer's own behalf, not in answer: keep its method.
                abort[3] = self.segments[0][3];
                return vec![abort];
            }
            self.retries_left -= 1;
            self.next = self.last_ack + 1;
        }
        let last = self.window_last.min(self.segment_count());
        let out: Vec<_> = (self.next..=last)
            .map(|number| self.segments[number as usize - 1])
            .collect();
        if !out.is_empty() {
            self.next = last + 1;
            self.highest_sent = self.highest_sent.max(last);
            self.deadline = Some(now + SEND_TIMEOUT);
        }
        out
    }

    /// Takes a MAD from the receiver: an ACK moves the window (and completes the transfer when
    /// it covers the last segment); STOP or ABORT ends it. Returns the ABORT to send if the ACK
    /// is inconsistent: NewWindowLast below its segment (W2S), or a segment not yet sent
    /// (S2B). Old and duplicate ACKs are ignored. Fails only on a MAD shorter than 56 bytes.
    pub fn receive(&mut self, mad: &[u8], now: Instant) -> Result<Option<[u8; SEGMENT_LEN]>> {
        let view = SaMad::new_checked(mad)?;
        if self.state != SenderState::Sending {
            return Ok(None);
        }
        match view.rmpp_type() {
            RmppType::Stop | RmppType::Abort => {
                self.state = SenderState::Aborted(view.rmpp_status());
                self.deadline = None;
                return Ok(None);
            }
            RmppType::Ack => {}
            _ => return Ok(None),
        }
        let (acked, window_last) = (view.segment_number(), view.payload_length());
        let abort = |sender: &mut Self, status| {
            sender.state = SenderState::Aborted(status);
            sender.deadline = None;
            Ok(Some(control(mad, RmppType::Abort, status, 0, 0)))
        };
        if window_last < acked {
            return abort(self, status::WINDOW_TOO_SMALL);
        }
        if acked < self.last_ack {
            return Ok(None);
        }
        if acked > self.highest_sent {
            return abort(self, status::SEGMENT_TOO_BIG);
        }
        if acked > self.last_ack {
            self.last_ack = acked;
            self.retries_left = self.retries;
        }
        self.window_last = self.window_last.max(window_last);
        if self.last_ack == self.segment_count() {
            self.state = SenderState::Complete;
            self.deadline = None;
        } else if self.next > self.window_last.min(self.segment_count()) {
            // Everything allowed is out: wait for the next ACK from now.
            self.deadline = Some(now + SEND_TIMEOUT);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Method;

    /// A GetTableResp header of NodeRecords (attribute 0x11, AttributeOffset 14) as OpenSM
    /// writes it before the kernel's RMPP: Active only.
    fn header() -> [u8; SA_HEADER_LEN] {
        let mut h = [0; SA_HEADER_LEN];
        h[..4].copy_from_slice(&[0x01, 0x03, 0x02, 0x92]);
        h[8..16].copy_from_slice(&0x1234_0000_dead_beef_u64.to_be_bytes());
        h[16..18].copy_from_slice(&[0x00, 0x11]);
        h[24..27].copy_from_slice(&[0x01, 0x01, 0x01]);
        h[44..46].copy_from_slice(&[0x00, 0x0e]);
        h
    }

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 + 1).collect()
    }

    fn rmpp(segment: &[u8]) -> (RmppType, RmppFlags, u8, u32, u32) {
        let v = SaMad::new_unchecked(segment);
        (
            v.rmpp_type(),
            v.rmpp_flags(),
            v.rmpp_status(),
            v.segment_number(),
            v.payload_length(),
        )
    }

    const ACTIVE: RmppFlags = RmppFlags::ACTIVE;
    const FIRST: RmppFlags = RmppFlags(RmppFlags::ACTIVE.0 | RmppFlags::FIRST.0);
    const LAST: RmppFlags = RmppFlags(RmppFlags::ACTIVE.0 | RmppFlags::LAST.0);
    const ONLY: RmppFlags = RmppFlags(FIRST.0 | RmppFlags::LAST.0);

    #[test]
    fn a_500_byte_answer_is_three_segments() {
        let payload = payload(500);
        let segs = segments(&header(), &payload);
        assert_eq!(segs.len(), 3);
        // pad = 3 * 200 - 500 = 100: first 3 * 220 - 100, last 220 - 100.
        assert_eq!(rmpp(&segs[0]), (RmppType::Data, FIRST, 0, 1, 560));
        assert_eq!(rmpp(&segs[1]), (RmppType::Data, ACTIVE, 0, 2, 0));
        assert_eq!(rmpp(&segs[2]), (RmppType::Data, LAST, 0, 3, 120));
        for seg in &segs {
            assert_eq!(seg[..24], header()[..24]);
            assert_eq!(seg[24], RMPP_VERSION);
            assert_eq!(seg[36..56], header()[36..56]);
        }
        assert_eq!(segs[0][56..], payload[..200]);
        assert_eq!(segs[1][56..], payload[200..400]);
        assert_eq!(segs[2][56..156], payload[400..]);
        assert!(segs[2][156..].iter().all(|&b| b == 0));
    }

    #[test]
    fn an_empty_get_table_answer_is_one_segment_of_20() {
        let segs = segments(&header(), &[]);
        assert_eq!(segs.len(), 1);
        assert_eq!(rmpp(&segs[0]), (RmppType::Data, ONLY, 0, 1, 20));
        assert!(segs[0][56..].iter().all(|&b| b == 0));
    }

    #[test]
    fn payload_lengths_at_the_segment_boundary() {
        let single = segments(&header(), &payload(200));
        assert_eq!(rmpp(&single[0]), (RmppType::Data, ONLY, 0, 1, 220));
        let two = segments(&header(), &payload(201));
        assert_eq!(rmpp(&two[0]).4, 2 * 220 - 199);
        assert_eq!(rmpp(&two[1]).4, 220 - 199);
        assert_eq!(segment_count(0), 1);
        assert_eq!(segment_count(400), 2);
    }

    #[test]
    fn receiver_acks_first_and_last_and_reassembles() {
        let now = Instant::now();
        let payload = payload(500);
        let segs = segments(&header(), &payload);
        let mut receiver = Receiver::default();
        let first = receiver.receive(&segs[0], now).unwrap();
        let ack = first.reply.unwrap();
        assert_eq!(
            rmpp(&ack),
            (RmppType::Ack, ACTIVE, 0, 1, 1 + DEFAULT_WINDOW)
        );
        assert_eq!(
            SaMad::new_unchecked(&ack[..]).header().method(),
            Method::GetTable
        );
        assert_eq!(ack[..3], segs[0][..3]);
        assert_eq!(ack[8..24], segs[0][8..24]);
        assert!(ack[36..].iter().all(|&b| b == 0));
        assert_eq!(
            receiver.receive(&segs[1], now).unwrap(),
            Received::default()
        );
        let last = receiver.receive(&segs[2], now).unwrap();
        assert_eq!(rmpp(&last.reply.unwrap()).3, 3);
        let message = last.message.unwrap();
        assert_eq!(message.len(), 56 + 500);
        assert_eq!(message[..56], segs[0][..56]);
        assert_eq!(message[56..], payload[..]);
        assert_eq!(receiver.deadline(), None);
    }

    #[test]
    fn receiver_reacks_duplicates_and_waits_for_a_gap() {
        let now = Instant::now();
        let payload = payload(700);
        let segs = segments(&header(), &payload);
        let mut receiver = Receiver::default();
        receiver.receive(&segs[0], now).unwrap();
        receiver.receive(&segs[1], now).unwrap();
        let duplicate = receiver.receive(&segs[0], now).unwrap();
        assert_eq!(rmpp(&duplicate.reply.unwrap()).3, 2);
        // Segment 4 ahead of 3: kept, unanswered; 3 then completes both.
        assert_eq!(
            receiver.receive(&segs[3], now).unwrap(),
            Received::default()
        );
        let done = receiver.receive(&segs[2], now).unwrap();
        assert_eq!(rmpp(&done.reply.unwrap()).3, 4);
        assert_eq!(done.message.unwrap()[56..], payload[..]);
    }

    #[test]
    fn a_new_first_segment_restarts_the_transfer() {
        let now = Instant::now();
        let old = segments(&header(), &payload(500));
        let mut new_header = header();
        new_header[15] = 0xee;
        let new_payload = vec![7; 150];
        let new = segments(&new_header, &new_payload);
        let mut receiver = Receiver::default();
        receiver.receive(&old[0], now).unwrap();
        receiver.receive(&old[1], now).unwrap();
        let done = receiver.receive(&new[0], now).unwrap();
        let message = done.message.unwrap();
        assert_eq!(message.len(), 56 + 150);
        assert_eq!(message[15], 0xee);
        assert_eq!(message[56..], new_payload[..]);
    }

    #[test]
    fn window_ends_are_acked_and_moved_on() {
        let now = Instant::now();
        let segs = segments(&header(), &payload(1000));
        let mut receiver = Receiver::new(2);
        let replies: Vec<_> = segs
            .iter()
            .map(|seg| {
                receiver
                    .receive(seg, now)
                    .unwrap()
                    .reply
                    .map(|r| rmpp(&r).3..=rmpp(&r).4)
            })
            .collect();
        assert_eq!(replies, [Some(1..=3), None, Some(3..=5), None, Some(5..=5)]);
    }

    #[test]
    fn receiver_aborts_what_it_cannot_take() {
        let now = Instant::now();
        let segs = segments(&header(), &payload(500));
        let mut receiver = Receiver::default();
        let orphan = receiver.receive(&segs[1], now).unwrap().reply.unwrap();
        assert_eq!(
            rmpp(&orphan),
            (RmppType::Abort, ACTIVE, status::BAD_SEGMENT, 0, 0)
        );
        let mut bad = segs[0];
        bad[24] = 2;
        let reply = receiver.receive(&bad, now).unwrap().reply.unwrap();
        assert_eq!(rmpp(&reply).2, status::UNSUPPORTED_VERSION);
        let mut bad = segs[0];
        bad[25] = u8::from(RmppType::Ack);
        let reply = receiver.receive(&bad, now).unwrap().reply.unwrap();
        assert_eq!(rmpp(&reply).2, status::BAD_TYPE);
        let mut bad = segs[1];
        bad[26] |= RmppFlags::FIRST.0;
        let reply = receiver.receive(&bad, now).unwrap().reply.unwrap();
        assert_eq!(rmpp(&reply).2, status::BAD_SEGMENT);
        assert!(receiver.receive(&segs[0][..55], now).is_err());
    }

    #[test]
    fn receiver_times_out_with_t2l() {
        let start = Instant::now();
        let segs = segments(&header(), &payload(500));
        let mut receiver = Receiver::default();
        receiver.receive(&segs[0], start).unwrap();
        assert_eq!(receiver.deadline(), Some(start + RECEIVE_TIMEOUT));
        assert_eq!(
            receiver.poll(start + RECEIVE_TIMEOUT - Duration::from_millis(1)),
            None
        );
        let abort = receiver.poll(start + RECEIVE_TIMEOUT).unwrap();
        assert_eq!(rmpp(&abort).2, status::TOTAL_TIME_TOO_LONG);
        assert_eq!(receiver.deadline(), None);
    }

    /// An ACK of `segment` opening the window to `window_last`, from the receiver.
    fn ack(segment: u32, window_last: u32) -> [u8; SEGMENT_LEN] {
        control(&header(), RmppType::Ack, 0, segment, window_last)
    }

    #[test]
    fn sender_opens_with_one_segment_then_follows_the_window() {
        let now = Instant::now();
        let mut sender = Sender::new(&header(), &payload(500), 3);
        let first = sender.poll(now);
        assert_eq!(first.len(), 1);
        assert_eq!(rmpp(&first[0]).3, 1);
        assert_eq!(sender.deadline(), Some(now + SEND_TIMEOUT));
        assert!(sender.poll(now).is_empty());
        assert_eq!(sender.receive(&ack(1, 65), now).unwrap(), None);
        let rest: Vec<_> = sender.poll(now).iter().map(|s| rmpp(s).3).collect();
        assert_eq!(rest, [2, 3]);
        sender.receive(&ack(3, 65), now).unwrap();
        assert_eq!(sender.state(), SenderState::Complete);
        assert_eq!(sender.deadline(), None);
    }

    #[test]
    fn sender_retries_from_the_last_ack_then_gives_up() {
        let start = Instant::now();
        let mut sender = Sender::new(&header(), &payload(700), 1);
        sender.poll(start);
        sender.receive(&ack(1, 3), start).unwrap();
        let sent: Vec<_> = sender.poll(start).iter().map(|s| rmpp(s).3).collect();
        assert_eq!(sent, [2, 3]);
        let late = start + SEND_TIMEOUT;
        let again: Vec<_> = sender.poll(late).iter().map(|s| rmpp(s).3).collect();
        assert_eq!(again, [2, 3]);
        let given_up = sender.poll(late + SEND_TIMEOUT);
        assert_eq!(given_up.len(), 1);
        assert_eq!(rmpp(&given_up[0]).0, RmppType::Abort);
        assert_eq!(rmpp(&given_up[0]).2, status::TOO_MANY_RETRIES);
        assert_eq!(given_up[0][3], 0x92);
        assert_eq!(
            sender.state(),
            SenderState::Aborted(status::TOO_MANY_RETRIES)
        );
        assert!(sender.poll(late + 2 * SEND_TIMEOUT).is_empty());
    }

    #[test]
    fn sender_aborts_on_inconsistent_acks_and_stops_on_abort() {
        let now = Instant::now();
        let mut sender = Sender::new(&header(), &payload(500), 3);
        sender.poll(now);
        let abort = sender.receive(&ack(1, 0), now).unwrap().unwrap();
        assert_eq!(rmpp(&abort).2, status::WINDOW_TOO_SMALL);
        assert_eq!(
            sender.state(),
            SenderState::Aborted(status::WINDOW_TOO_SMALL)
        );

        let mut sender = Sender::new(&header(), &payload(500), 3);
        sender.poll(now);
        let abort = sender.receive(&ack(2, 65), now).unwrap().unwrap();
        assert_eq!(rmpp(&abort).2, status::SEGMENT_TOO_BIG);

        let mut sender = Sender::new(&header(), &payload(500), 3);
        sender.poll(now);
        let stop = control(&header(), RmppType::Stop, status::RESOURCES_EXHAUSTED, 0, 0);
        assert_eq!(sender.receive(&stop, now).unwrap(), None);
        assert_eq!(
            sender.state(),
            SenderState::Aborted(status::RESOURCES_EXHAUSTED)
        );
    }

    /// A sender and a receiver talking through a link that loses the first copy of segment 3:
    /// the receiver's window end ACKs and the sender's retry carry the message across.
    #[test]
    fn sender_and_receiver_over_a_lossy_link() {
        let mut now = Instant::now();
        let payload = payload(1500);
        let mut sender = Sender::new(&header(), &payload, 5);
        let mut receiver = Receiver::new(3);
        let mut lost_once = false;
        let mut message = None;
        for _ in 0..20 {
            for segment in sender.poll(now) {
                if rmpp(&segment).3 == 3 && !lost_once {
                    lost_once = true;
                    continue;
                }
                let received = receiver.receive(&segment, now).unwrap();
                if let Some(reply) = received.reply {
                    assert_eq!(sender.receive(&reply, now).unwrap(), None);
                }
                message = message.or(received.message);
            }
            if sender.state() != SenderState::Sending {
                break;
            }
            now += SEND_TIMEOUT;
        }
        assert!(lost_once);
        assert_eq!(sender.state(), SenderState::Complete);
        assert_eq!(message.unwrap()[56..], payload[..]);
    }

    proptest::proptest! {
        /// Any payload cut into segments and fed in order comes back whole.
        #[test]
        fn segments_reassemble(len in 0usize..2000, window in 1u32..8) {
            let payload = payload(len);
            let mut receiver = Receiver::new(window);
            let now = Instant::now();
            let mut messages = Vec::new();
            for segment in segments(&header(), &payload) {
                messages.extend(receiver.receive(&segment, now).unwrap().message);
            }
            proptest::prop_assert_eq!(messages.len(), 1);
            proptest::prop_assert_eq!(&messages[0][56..], &payload[..]);
        }

        /// Any bytes as segments: an answer, never a panic.
        #[test]
        fn receiver_is_total(
            mads in proptest::collection::vec(proptest::collection::vec(0u8..=255, 0..300), 0..8),
        ) {
            let mut receiver = Receiver::new(2);
            let now = Instant::now();
            for mad in &mads {
                let _ = receiver.receive(mad, now);
            }
        }
    }
}
