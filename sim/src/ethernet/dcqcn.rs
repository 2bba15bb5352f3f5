//! DCQCN, RoCEv2 congestion control, as NVIDIA's ConnectX RoCE documentation (WinOF-2, "RoCEv2
//! Congestion Management") describes it, after Zhu et al., "Congestion Control for Large-Scale
//! RDMA Deployments" (SIGCOMM 2015). It has three parts:
//! - the congestion point marks ECN at a switch egress queue ([`EcnMarker`]);
//! - the notification point (the receiving NIC) answers marked packets with CNPs
//!   ([`NotificationPoint`]);
//! - the reaction point (the sending NIC) cuts and restores its rate ([`ReactionPoint`]).
//!
//! The configuration, [`DcqcnConfig`], takes the parameters under the names `Mlx5Cmd -Qosconfig
//! -Dcqcn` shows, in the document's units (rates in Mb/s, times in microseconds, the byte counter
//! in 64-byte units, alpha and g as fractions of 1024), with the defaults its listing shows.
//! [`RpParams`] and [`NpParams`] convert them once to the simulator's units (bits per second,
//! picoseconds, bytes); the per-flow state is small and `Copy`, meant for flat arrays, and every
//! call takes the time (`now_ps`) and the parameters.
//!
//! The reaction point, as the document gives it:
//! - the first CNP for a flow sets the current rate to `DcqcnRateToSetOnFirstCnp` and alpha to
//!   `DcqcnInitialAlphaValue`;
//! - alpha is updated every `DcqcnDceTcpRtt`: `(1 - g) alpha + g` if a CNP arrived since the last
//!   update, `(1 - g) alpha` if none did (g = `DcqcnDceTcpG` / 1024);
//! - the rate is cut at most once per `DcqcnRateReduceMonitorPeriod`, to the larger of
//!   `(1 - alpha / 2^DcqcnAlphaToRateShift) Cr` (alpha in 1024ths, so the default shift 11 is the
//!   paper's `Cr (1 - alpha/2)`) and `Cr / DcqcnRpgMinDecFac`, and never below `DcqcnRpgMinRate`;
//! - the rate rises on a timer (`DcqcnRpgTimeReset`) and a byte counter (`DcqcnRpgByteReset` x 64
//!   bytes), each counting its stages: fast recovery (`Cr = (Cr + Tr)/2`) while both stage counts
//!   are below `DcqcnRpgThreshold`, additive increase (`Tr += DcqcnRpgAiRate` first) once one has
//!   reached it, hyper increase (`Tr += DcqcnRpgHaiRate`) once both have passed it.
//!
//! Where the document leaves a point open, the choice made here:
//! - a stage is counted after its increase, so the first `DcqcnRpgThreshold` events of a counter
//!   are fast recovery; the document's "MAX > Th and MIN < Th" leaves a count equal to the
//!   threshold unassigned, and it goes to additive increase, as in the paper;
//! - a CNP that arrives within `DcqcnRateReduceMonitorPeriod` of the last cut is not lost: the
//!   cut happens when the period ends (the firmware's register description: "the flow rate is
//!   reduced at the beginning of the next rate_reduce_monitor_period interval"); all CNPs of one
//!   period make one cut;
//! - at a cut the target rate becomes the current rate in three cases: `DcqcnClampTgtRate` is
//!   set; the rate rose since the last cut by the byte counter; or it rose by the timer and
//!   `DcqcnClampTgtRateAfterTimeInc` is set. (The document: the target "should be updated if
//!   the transmission rate was increased due to the timer, and not only due to the byte
//!   counter".) After no increase the target stays where it was, so that cuts in a row keep it;
//! - the first CNP keeps the target at the rate before it (the line rate), does not itself count
//!   as a CNP for the next alpha update, and starts the alpha timer and the rate-increase timer;
//! - once the rate is back at the line rate the flow's rate limiter is released (the firmware
//!   frees it when the flow reaches its maximum rate): no timer runs, and the next CNP is a first
//!   CNP again;
//! - `DcqcnRateToSetOnFirstCnp` 0 means the line rate (the firmware's reading of 0), and any rate
//!   above the line rate is the line rate, as the document says a device does;
//! - `DcqcnRpgByteReset` or `DcqcnRpgTimeReset` 0 turns that counter off (the firmware's reading
//!   of a zero byte counter); both off is refused, since the rate could then never rise again.
//!
//! The byte counter decides whether flows sharing a bottleneck converge to fair shares. It
//! completes a stage every `DcqcnRpgByteReset` x 64 bytes the flow sends, so a flow at twice
//! the rate rises twice as often, while the timer's stages come at one pace for every flow.
//! With the document's 400 (25.6 KB: 6.4 us at 32 Gb/s) the byte counter is far ahead of the
//! 100 us timer. A slow flow is then cut nearly as often as a fast one (the notification
//! point's pacing), and the flows keep an unfair split. In this module's closed-loop test, two
//! flows on 40 Gb/s settle near 32 and 7.5 Gb/s. This is the byte counter's unfairness that
//! Hayashi, Itsumi and Yamamoto found in QCN ("Improving Fairness of Quantized Congestion
//! Notification for Data Center Ethernet Networks", ICDCS workshops 2011). A `DcqcnRpgByteReset` of at least the line rate x
//! `DcqcnRpgTimeReset` / 64 bytes leaves the increases to the timer, and the flows converge.
//!
//! The notification point's minimum time between CNPs is not in the ConnectX document: it is
//! `min_time_between_cnps`, the firmware configuration's name, in microseconds, default 4 (what
//! ConnectX firmware reports), kept per flow as the paper's notification point does.
//!
//! ECN marking ([`EcnConfig`]) is RED's linear profile as DCQCN uses it: no mark at or below
//! `kmin_bytes`, a probability rising linearly to `pmax` at `kmax_bytes`, every packet above
//! `kmax_bytes`. The ConnectX document has no switch thresholds, so they have no default.

use serde::Deserialize;

use crate::infiniband::link::PS_PER_US;

/// Bits per second in one Mb/s, the document's rate unit.
const BPS_PER_MBPS: u64 = 1_000_000;
/// The byte counter's unit.
const BYTE_RESET_UNIT: u64 = 64;
/// Alpha and g are fractions of 2^10.
const ALPHA_SHIFT: u32 = 10;
const ALPHA_ONE: u32 = 1 << ALPHA_SHIFT;

/// The DCQCN parameters of one NIC, as `Mlx5Cmd -Qosconfig -Dcqcn -Get` lists them (the
/// document's names, types and units), `Default` being the values of that listing.
///
/// The per-priority enables (`DcqcnRPEnablePrio0-7`, `DcqcnNPEnablePrio0-7`) default to 1 here:
/// the document shows them 0 only as "an example of RCM being disabled" and gives no default,
/// and a traffic file that configures DCQCN means it to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    #[serde(rename = "DcqcnRPEnablePrio0")]
    pub rp_enable_prio0: u32,
    #[serde(rename = "DcqcnRPEnablePrio1")]
    pub rp_enable_prio1: u32,
    #[serde(rename = "DcqcnRPEnablePrio2")]
    pub rp_enable_prio2: u32,
    #[serde(rename = "DcqcnRPEnablePrio3")]
    pub rp_enable_prio3: u32,
    #[serde(rename = "DcqcnRPEnablePrio4")]
    pub rp_enable_prio4: u32,
    #[serde(rename = "DcqcnRPEnablePrio5")]
    pub rp_enable_prio5: u32,
    #[serde(rename = "DcqcnRPEnablePrio6")]
    pub rp_enable_prio6: u32,
    #[serde(rename = "DcqcnRPEnablePrio7")]
    pub rp_enable_prio7: u32,
    /// 1 bit: every CNP sets the target rate to the current rate.
    #[serde(rename = "DcqcnClampTgtRate")]
    pub clamp_tgt_rate: u32,
    /// 1 bit: a CNP sets the target rate to the current rate also when the timer (not only the
    /// byte counter) raised the rate since the last cut.
    #[serde(rename = "DcqcnClampTgtRateAfterTimeInc")]
    pub clamp_tgt_rate_after_time_inc: u32,
    /// Microseconds between timer increases, 0-131071.
    #[serde(rename = "DcqcnRpgTimeReset")]
    pub rpg_time_reset: u32,
    /// 64-byte units between byte-counter increases, 0-32767.
    #[serde(rename = "DcqcnRpgByteReset")]
    pub rpg_byte_reset: u32,
    /// Stages of each counter before fast recovery ends, 1-31.
    #[serde(rename = "DcqcnRpgThreshold")]
    pub rpg_threshold: u32,
    /// Mb/s added to the target rate per additive-increase stage.
    #[serde(rename = "DcqcnRpgAiRate")]
    pub rpg_ai_rate: u32,
    /// Mb/s added to the target rate per hyper-increase stage.
    #[serde(rename = "DcqcnRpgHaiRate")]
    pub rpg_hai_rate: u32,
    /// The cut is `alpha / 2^shift` of the rate (alpha in 1024ths), 0-11.
    #[serde(rename = "DcqcnAlphaToRateShift")]
    pub alpha_to_rate_shift: u32,
    /// A cut leaves at least `rate / DcqcnRpgMinDecFac`, 1-100.
    #[serde(rename = "DcqcnRpgMinDecFac")]
    pub rpg_min_dec_fac: u32,
    /// The lowest rate of a flow, Mb/s.
    #[serde(rename = "DcqcnRpgMinRate")]
    pub rpg_min_rate: u32,
    /// The rate the first CNP sets, Mb/s (0: the line rate).
    #[serde(rename = "DcqcnRateToSetOnFirstCnp")]
    pub rate_to_set_on_first_cnp: u32,
    /// g, in 1024ths, 0-1023.
    #[serde(rename = "DcqcnDceTcpG")]
    pub dce_tcp_g: u32,
    /// Microseconds between alpha updates, 1-131071.
    #[serde(rename = "DcqcnDceTcpRtt")]
    pub dce_tcp_rtt: u32,
    /// Microseconds between two cuts of a flow's rate at least.
    #[serde(rename = "DcqcnRateReduceMonitorPeriod")]
    pub rate_reduce_monitor_period: u32,
    /// Alpha set by the first CNP, in 1024ths, 0-1023.
    #[serde(rename = "DcqcnInitialAlphaValue")]
    pub initial_alpha_value: u32,
    #[serde(rename = "DcqcnNPEnablePrio0")]
    pub np_enable_prio0: u32,
    #[serde(rename = "DcqcnNPEnablePrio1")]
    pub np_enable_prio1: u32,
    #[serde(rename = "DcqcnNPEnablePrio2")]
    pub np_enable_prio2: u32,
    #[serde(rename = "DcqcnNPEnablePrio3")]
    pub np_enable_prio3: u32,
    #[serde(rename = "DcqcnNPEnablePrio4")]
    pub np_enable_prio4: u32,
    #[serde(rename = "DcqcnNPEnablePrio5")]
    pub np_enable_prio5: u32,
    #[serde(rename = "DcqcnNPEnablePrio6")]
    pub np_enable_prio6: u32,
    #[serde(rename = "DcqcnNPEnablePrio7")]
    pub np_enable_prio7: u32,
    /// The DSCP of generated CNPs, 0-63.
    #[serde(rename = "DcqcnCnpDscp")]
    pub cnp_dscp: u32,
    /// The 802.1p priority of generated CNPs when `DcqcnCnpPrioMode` is 0, 0-7.
    #[serde(rename = "DcqcnCnp802pPrio")]
    pub cnp_802p_prio: u32,
    /// 1 bit: 0 sends CNPs on `DcqcnCnp802pPrio`, 1 on the priority of the marked packet.
    #[serde(rename = "DcqcnCnpPrioMode")]
    pub cnp_prio_mode: u32,
    /// Microseconds between two CNPs of one flow at least (the firmware's name; not in the
    /// ConnectX document).
    pub min_time_between_cnps: u32,
}

impl Default for DcqcnConfig {
    fn default() -> DcqcnConfig {
        DcqcnConfig {
            rp_enable_prio0: 1,
            rp_enable_prio1: 1,
            rp_enable_prio2: 1,
            rp_enable_prio3: 1,
            rp_enable_prio4: 1,
            rp_enable_prio5: 1,
            rp_enable_prio6: 1,
            rp_enable_prio7: 1,
            clamp_tgt_rate: 0,
            clamp_tgt_rate_after_time_inc: 1,
            rpg_time_reset: 100,
            rpg_byte_reset: 400,
            rpg_threshold: 5,
            rpg_ai_rate: 10,
            rpg_hai_rate: 100,
            alpha_to_rate_shift: 11,
            rpg_min_dec_fac: 50,
            rpg_min_rate: 1,
            rate_to_set_on_first_cnp: 3000,
            dce_tcp_g: 32,
            dce_tcp_rtt: 4,
            rate_reduce_monitor_period: 32,
            initial_alpha_value: 0,
            np_enable_prio0: 1,
            np_enable_prio1: 1,
            np_enable_prio2: 1,
            np_enable_prio3: 1,
            np_enable_prio4: 1,
            np_enable_prio5: 1,
            np_enable_prio6: 1,
            np_enable_prio7: 1,
            cnp_dscp: 0,
            cnp_802p_prio: 7,
            cnp_prio_mode: 1,
            min_time_between_cnps: 4,
        }
    }
}

/// A DCQCN parameter the document does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DcqcnConfigError {
    /// A value outside the range the document gives for its key.
    #[error("{key} = {value} is out of range: {allowed}")]
    OutOfRange {
        key: &'static str,
        value: u32,
        allowed: &'static str,
    },
    /// Both rate-increase counters off: after a cut the rate would never rise.
    #[error(
        "DcqcnRpgTimeReset and DcqcnRpgByteReset are both 0: with the timer and the byte counter \
         both off, a flow's rate would never rise after a CNP"
    )]
    NoIncrease,
}

impl DcqcnConfig {
    /// Checks every value against the range the document gives for it. Rates have no upper
    /// bound here: above the line rate they are the line rate ([`RpParams::new`]).
    pub fn validate(&self) -> Result<(), DcqcnConfigError> {
        const BIT: &str = "1 bit, 0 or 1";
        const FRACTION: &str = "a fraction of 1024, 0 to 1023";
        const RATE: &str = "1 Mb/s to the line rate";
        // (key, value, lowest, highest, the allowed values in words)
        let checks: [(&'static str, u32, u32, u32, &'static str); 31] = [
            ("DcqcnRPEnablePrio0", self.rp_enable_prio0, 0, 1, BIT),
            ("DcqcnRPEnablePrio1", self.rp_enable_prio1, 0, 1, BIT),
            ("DcqcnRPEnablePrio2", self.rp_enable_prio2, 0, 1, BIT),
            ("DcqcnRPEnablePrio3", self.rp_enable_prio3, 0, 1, BIT),
            ("DcqcnRPEnablePrio4", self.rp_enable_prio4, 0, 1, BIT),
            ("DcqcnRPEnablePrio5", self.rp_enable_prio5, 0, 1, BIT),
            ("DcqcnRPEnablePrio6", self.rp_enable_prio6, 0, 1, BIT),
            ("DcqcnRPEnablePrio7", self.rp_enable_prio7, 0, 1, BIT),
            ("DcqcnNPEnablePrio0", self.np_enable_prio0, 0, 1, BIT),
            ("DcqcnNPEnablePrio1", self.np_enable_prio1, 0, 1, BIT),
            ("DcqcnNPEnablePrio2", self.np_enable_prio2, 0, 1, BIT),
            ("DcqcnNPEnablePrio3", self.np_enable_prio3, 0, 1, BIT),
            ("DcqcnNPEnablePrio4", self.np_enable_prio4, 0, 1, BIT),
            ("DcqcnNPEnablePrio5", self.np_enable_prio5, 0, 1, BIT),
            ("DcqcnNPEnablePrio6", self.np_enable_prio6, 0, 1, BIT),
            ("DcqcnNPEnablePrio7", self.np_enable_prio7, 0, 1, BIT),
            ("DcqcnClampTgtRate", self.clamp_tgt_rate, 0, 1, BIT),
            (
                "DcqcnClampTgtRateAfterTimeInc",
                self.clamp_tgt_rate_after_time_inc,
                0,
                1,
                BIT,
            ),
            ("DcqcnCnpPrioMode", self.cnp_prio_mode, 0, 1, BIT),
            (
                "DcqcnCnpDscp",
                self.cnp_dscp,
                0,
                63,
                "a DSCP is 6 bits, 0 to 63",
            ),
            (
                "DcqcnCnp802pPrio",
                self.cnp_802p_prio,
                0,
                7,
                "an 802.1p priority is 3 bits, 0 to 7",
            ),
            (
                "DcqcnRpgTimeReset",
                self.rpg_time_reset,
                0,
                131_071,
                "0 to 131071 microseconds",
            ),
            (
                "DcqcnRpgByteReset",
                self.rpg_byte_reset,
                0,
                32_767,
                "0 to 32767 units of 64 bytes",
            ),
            (
                "DcqcnRpgThreshold",
                self.rpg_threshold,
                1,
                31,
                "1 to 31 stages",
            ),
            (
                "DcqcnAlphaToRateShift",
                self.alpha_to_rate_shift,
                0,
                11,
                "0 to 11",
            ),
            (
                "DcqcnRpgMinDecFac",
                self.rpg_min_dec_fac,
                1,
                100,
                "1 to 100 (it divides the rate, so not 0)",
            ),
            ("DcqcnDceTcpG", self.dce_tcp_g, 0, 1023, FRACTION),
            (
                "DcqcnDceTcpRtt",
                self.dce_tcp_rtt,
                1,
                131_071,
                "1 to 131071 microseconds (0 would update alpha without end)",
            ),
            (
                "DcqcnInitialAlphaValue",
                self.initial_alpha_value,
                0,
                1023,
                FRACTION,
            ),
            ("DcqcnRpgAiRate", self.rpg_ai_rate, 1, u32::MAX, RATE),
            ("DcqcnRpgHaiRate", self.rpg_hai_rate, 1, u32::MAX, RATE),
        ];
        for (key, value, lowest, highest, allowed) in checks {
            if !(lowest..=highest).contains(&value) {
                return Err(DcqcnConfigError::OutOfRange {
                    key,
                    value,
                    allowed,
                });
            }
        }
        if self.rpg_time_reset == 0 && self.rpg_byte_reset == 0 {
            return Err(DcqcnConfigError::NoIncrease);
        }
        Ok(())
    }

    /// A bit per priority whose flows have a reaction point (`DcqcnRPEnablePrioN`).
    pub fn rp_enabled_mask(&self) -> u8 {
        priority_mask([
            self.rp_enable_prio0,
            self.rp_enable_prio1,
            self.rp_enable_prio2,
            self.rp_enable_prio3,
            self.rp_enable_prio4,
            self.rp_enable_prio5,
            self.rp_enable_prio6,
            self.rp_enable_prio7,
        ])
    }

    /// A bit per priority whose marked packets the notification point answers
    /// (`DcqcnNPEnablePrioN`).
    pub fn np_enabled_mask(&self) -> u8 {
        priority_mask([
            self.np_enable_prio0,
            self.np_enable_prio1,
            self.np_enable_prio2,
            self.np_enable_prio3,
            self.np_enable_prio4,
            self.np_enable_prio5,
            self.np_enable_prio6,
            self.np_enable_prio7,
        ])
    }
}

fn priority_mask(enables: [u32; 8]) -> u8 {
    enables
        .iter()
        .enumerate()
        .fold(0, |mask, (prio, &on)| mask | u8::from(on != 0) << prio)
}

/// The reaction point's parameters in the simulator's units for one line rate: every
/// conversion from the document's units happens in [`RpParams::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpParams {
    pub line_rate_bps: u64,
    /// `DcqcnRpgMinRate`, at least 1 bit/s so that a flow always sends.
    pub min_rate_bps: u64,
    /// `DcqcnRateToSetOnFirstCnp` (0 is the line rate), within the minimum and line rates.
    pub first_cnp_rate_bps: u64,
    pub ai_rate_bps: u64,
    pub hai_rate_bps: u64,
    /// `DcqcnRpgTimeReset`; 0 when the timer is off.
    pub time_reset_ps: u64,
    /// `DcqcnRpgByteReset` x 64; 0 when the byte counter is off.
    pub byte_reset_bytes: u64,
    pub threshold: u8,
    pub alpha_to_rate_shift: u32,
    pub min_dec_fac: u64,
    /// g in 1024ths.
    pub g: u32,
    pub alpha_period_ps: u64,
    pub reduce_period_ps: u64,
    /// Alpha in 1024ths.
    pub initial_alpha: u32,
    pub clamp_tgt_rate: bool,
    pub clamp_tgt_rate_after_time_inc: bool,
}

impl RpParams {
    /// The parameters of a validated configuration on a link of `line_rate_bps` bits per second.
    /// Rates above the line rate are the line rate, as the document says a device sets them.
    pub fn new(config: &DcqcnConfig, line_rate_bps: u64) -> RpParams {
        let rate = |mbps: u32| (u64::from(mbps) * BPS_PER_MBPS).min(line_rate_bps);
        let min_rate_bps = rate(config.rpg_min_rate).max(1);
        let first_cnp_rate_bps = match config.rate_to_set_on_first_cnp {
            0 => line_rate_bps,
            mbps => rate(mbps),
        }
        .max(min_rate_bps);
        RpParams {
            line_rate_bps,
            min_rate_bps,
            first_cnp_rate_bps,
            ai_rate_bps: rate(config.rpg_ai_rate),
            hai_rate_bps: rate(config.rpg_hai_rate),
            time_reset_ps: u64::from(config.rpg_time_reset) * PS_PER_US,
            byte_reset_bytes: u64::from(config.rpg_byte_reset) * BYTE_RESET_UNIT,
            // At most 31 once validated.
            threshold: config.rpg_threshold as u8,
            alpha_to_rate_shift: config.alpha_to_rate_shift,
            min_dec_fac: u64::from(config.rpg_min_dec_fac),
            g: config.dce_tcp_g,
            alpha_period_ps: u64::from(config.dce_tcp_rtt) * PS_PER_US,
            reduce_period_ps: u64::from(config.rate_reduce_monitor_period) * PS_PER_US,
            initial_alpha: config.initial_alpha_value,
            clamp_tgt_rate: config.clamp_tgt_rate != 0,
            clamp_tgt_rate_after_time_inc: config.clamp_tgt_rate_after_time_inc != 0,
        }
    }
}

/// Which counter completed a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counter {
    Timer,
    Bytes,
}

/// One flow's reaction point (the sending NIC's rate limiter for the flow), 56 bytes.
///
/// The engine sends the flow at [`ReactionPoint::rate_bps`], reports each packet sent with
/// [`ReactionPoint::on_bytes_sent`] and each CNP with [`ReactionPoint::on_cnp`], and wakes the
/// flow at [`ReactionPoint::next_timer_ps`] with [`ReactionPoint::on_timer`]. Every call first
/// runs the timers due by its `now_ps`, so a late call still sees events in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReactionPoint {
    current_bps: u64,
    target_bps: u64,
    /// Bytes sent since the byte counter last completed a stage.
    bytes_in_stage: u64,
    /// When the rate was last cut (or set by the first CNP).
    last_cut_ps: u64,
    next_alpha_ps: u64,
    /// The timer's next stage; meaningless when the timer is off.
    next_increase_ps: u64,
    /// In 1024ths.
    alpha: u16,
    time_stage: u8,
    byte_stage: u8,
    /// A rate limiter is allocated: the flow has had a CNP and is not back at the line rate.
    limited: bool,
    /// A CNP arrived since the last alpha update.
    cnp_since_alpha_update: bool,
    /// A CNP arrived since the last cut; the cut waits for the monitor period to end.
    cut_pending: bool,
}

impl ReactionPoint {
    /// A flow that has had no CNP: at the line rate, with no timer running.
    pub fn new(params: &RpParams) -> ReactionPoint {
        ReactionPoint {
            current_bps: params.line_rate_bps,
            target_bps: params.line_rate_bps,
            bytes_in_stage: 0,
            last_cut_ps: 0,
            next_alpha_ps: 0,
            next_increase_ps: 0,
            alpha: 0,
            time_stage: 0,
            byte_stage: 0,
            limited: false,
            cnp_since_alpha_update: false,
            cut_pending: false,
        }
    }

    /// The rate the flow may send at now, in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.current_bps
    }

    /// The rate fast recovery climbs back to, in bits per second.
    pub fn target_bps(&self) -> u64 {
        self.target_bps
    }

    /// Alpha, the congestion estimate, in 1024ths (0 to 1023).
    pub fn alpha(&self) -> u32 {
        u32::from(self.alpha)
    }

    /// Whether a rate limiter is allocated (the flow has had a CNP and is below the line rate).
    pub fn is_limited(&self) -> bool {
        self.limited
    }

    /// When the flow next has something to do (an alpha update, a waiting cut, a timer
    /// increase); `None` while no rate limiter is allocated.
    pub fn next_timer_ps(&self, params: &RpParams) -> Option<u64> {
        if !self.limited {
            return None;
        }
        let mut next = self.next_alpha_ps;
        if self.cut_pending {
            next = next.min(self.cut_allowed_ps(params));
        }
        if params.time_reset_ps > 0 {
            next = next.min(self.next_increase_ps);
        }
        Some(next)
    }

    /// Runs every timer due at or before `now_ps`, in time order (at one instant: the alpha
    /// update, then the cut, then the timer increase).
    pub fn on_timer(&mut self, params: &RpParams, now_ps: u64) {
        while let Some(at) = self.next_timer_ps(params).filter(|&at| at <= now_ps) {
            if at == self.next_alpha_ps {
                self.update_alpha(params);
            } else if self.cut_pending && at == self.cut_allowed_ps(params) {
                self.cut(params, at);
            } else {
                self.next_increase_ps += params.time_reset_ps;
                self.increase(params, Counter::Timer);
            }
        }
    }

    /// A CNP for this flow arrives at `now_ps`.
    pub fn on_cnp(&mut self, params: &RpParams, now_ps: u64) {
        self.on_timer(params, now_ps);
        if !self.limited {
            self.first_cnp(params, now_ps);
            return;
        }
        self.cnp_since_alpha_update = true;
        self.cut_pending = true;
        if now_ps >= self.cut_allowed_ps(params) {
            self.cut(params, now_ps);
        }
    }

    /// The flow sent `bytes` by `now_ps`: the byte counter completes a stage every
    /// `DcqcnRpgByteReset` x 64 bytes while a rate limiter is allocated.
    pub fn on_bytes_sent(&mut self, params: &RpParams, bytes: u64, now_ps: u64) {
        self.on_timer(params, now_ps);
        if !self.limited || params.byte_reset_bytes == 0 {
            return;
        }
        self.bytes_in_stage += bytes;
        while self.limited && self.bytes_in_stage >= params.byte_reset_bytes {
            self.bytes_in_stage -= params.byte_reset_bytes;
            self.increase(params, Counter::Bytes);
        }
    }

    fn cut_allowed_ps(&self, params: &RpParams) -> u64 {
        self.last_cut_ps + params.reduce_period_ps
    }

    fn first_cnp(&mut self, params: &RpParams, now_ps: u64) {
        self.limited = true;
        self.target_bps = self.current_bps;
        self.current_bps = params.first_cnp_rate_bps;
        self.alpha = params.initial_alpha as u16;
        self.cnp_since_alpha_update = false;
        self.cut_pending = false;
        self.next_alpha_ps = now_ps + params.alpha_period_ps;
        self.restart_increase(params, now_ps);
    }

    /// Alpha's update every `DcqcnDceTcpRtt`, in 1024ths, rounding the decay down so that alpha
    /// reaches 0 without CNPs and stays within 1023 with them.
    fn update_alpha(&mut self, params: &RpParams) {
        let decayed = (u32::from(self.alpha) * (ALPHA_ONE - params.g)) >> ALPHA_SHIFT;
        let raised = if self.cnp_since_alpha_update {
            params.g
        } else {
            0
        };
        self.alpha = (decayed + raised) as u16;
        self.cnp_since_alpha_update = false;
        self.next_alpha_ps += params.alpha_period_ps;
    }

    fn cut(&mut self, params: &RpParams, now_ps: u64) {
        let rose_since_cut =
            self.byte_stage > 0 || (params.clamp_tgt_rate_after_time_inc && self.time_stage > 0);
        if params.clamp_tgt_rate || rose_since_cut {
            self.target_bps = self.current_bps;
        }
        let by_alpha = self.current_bps.saturating_sub(
            (self.current_bps * u64::from(self.alpha)) >> params.alpha_to_rate_shift,
        );
        let by_min_dec_fac = self.current_bps / params.min_dec_fac;
        self.current_bps = by_alpha.max(by_min_dec_fac).max(params.min_rate_bps);
        self.cut_pending = false;
        self.restart_increase(params, now_ps);
    }

    /// A cut (or the first CNP) starts both counters again.
    fn restart_increase(&mut self, params: &RpParams, now_ps: u64) {
        self.last_cut_ps = now_ps;
        self.time_stage = 0;
        self.byte_stage = 0;
        self.bytes_in_stage = 0;
        self.next_increase_ps = now_ps + params.time_reset_ps;
    }

    fn increase(&mut self, params: &RpParams, counter: Counter) {
        let most = self.time_stage.max(self.byte_stage);
        let least = self.time_stage.min(self.byte_stage);
        if most >= params.threshold {
            let step = if least > params.threshold {
                params.hai_rate_bps
            } else {
                params.ai_rate_bps
            };
            self.target_bps = (self.target_bps + step).min(params.line_rate_bps);
        }
        self.current_bps = (self.current_bps + self.target_bps).div_ceil(2);
        let stage = match counter {
            Counter::Timer => &mut self.time_stage,
            Counter::Bytes => &mut self.byte_stage,
        };
        *stage = stage.saturating_add(1);
        if self.current_bps >= params.line_rate_bps {
            *self = ReactionPoint::new(params);
        }
    }
}

/// The notification point's parameters in the simulator's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NpParams {
    /// A bit per priority whose marked packets get CNPs.
    pub enabled_mask: u8,
    pub cnp_dscp: u8,
    pub cnp_802p_prio: u8,
    /// `DcqcnCnpPrioMode` 1: CNPs go on the priority of the marked packet.
    pub cnp_prio_from_packet: bool,
    pub min_time_between_cnps_ps: u64,
}

impl NpParams {
    /// The parameters of a validated configuration.
    pub fn new(config: &DcqcnConfig) -> NpParams {
        NpParams {
            enabled_mask: config.np_enabled_mask(),
            // 6 and 3 bits once validated.
            cnp_dscp: config.cnp_dscp as u8,
            cnp_802p_prio: config.cnp_802p_prio as u8,
            cnp_prio_from_packet: config.cnp_prio_mode != 0,
            min_time_between_cnps_ps: u64::from(config.min_time_between_cnps) * PS_PER_US,
        }
    }
}

/// A congestion notification packet to send back to the flow's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cnp {
    /// The 802.1p priority on its Ethernet header.
    pub pcp: u8,
    /// The DSCP in its IP header.
    pub dscp: u8,
}

/// One flow's notification point (the receiving NIC), 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NotificationPoint {
    last_cnp_ps: Option<u64>,
}

impl NotificationPoint {
    /// A packet of the flow with ECN marked (CE) arrives at `now_ps` on `priority`: the CNP to
    /// send, unless the priority has no notification point or the flow had a CNP less than
    /// `min_time_between_cnps` ago.
    pub fn on_marked_packet(
        &mut self,
        params: &NpParams,
        priority: u8,
        now_ps: u64,
    ) -> Option<Cnp> {
        if params.enabled_mask & (1 << priority) == 0 {
            return None;
        }
        if let Some(last) = self.last_cnp_ps
            && now_ps < last + params.min_time_between_cnps_ps
        {
            return None;
        }
        self.last_cnp_ps = Some(now_ps);
        let pcp = if params.cnp_prio_from_packet {
            priority
        } else {
            params.cnp_802p_prio
        };
        Some(Cnp {
            pcp,
            dscp: params.cnp_dscp,
        })
    }
}

/// ECN marking at a switch egress queue: RED's linear profile as DCQCN uses it. Switch
/// settings, so no default: the ConnectX document has none.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    /// At or below this occupancy nothing is marked.
    pub kmin_bytes: u64,
    /// Above this occupancy every packet is marked.
    pub kmax_bytes: u64,
    /// The marking probability at `kmax_bytes`, 0 to 1.
    pub pmax: f64,
}

/// An impossible ECN marking profile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EcnConfigError {
    #[error("kmin_bytes = {kmin} is above kmax_bytes = {kmax}: Kmin is where marking starts")]
    KminAboveKmax { kmin: u64, kmax: u64 },
    #[error("pmax = {0} is not a probability: give a number from 0 to 1")]
    Pmax(f64),
}

/// Probabilities are fixed point with 32 fraction bits.
const PROBABILITY_ONE: u64 = 1 << 32;

impl EcnConfig {
    pub fn validate(&self) -> Result<(), EcnConfigError> {
        if self.kmin_bytes > self.kmax_bytes {
            return Err(EcnConfigError::KminAboveKmax {
                kmin: self.kmin_bytes,
                kmax: self.kmax_bytes,
            });
        }
        if !(0.0..=1.0).contains(&self.pmax) {
            return Err(EcnConfigError::Pmax(self.pmax));
        }
        Ok(())
    }

    /// The marker of a validated profile, in integers.
    pub fn marker(&self) -> EcnMarker {
        EcnMarker {
            kmin_bytes: self.kmin_bytes,
            kmax_bytes: self.kmax_bytes,
            // Exact IEEE arithmetic, the same on every machine; at most 2^32.
            pmax: (self.pmax * PROBABILITY_ONE as f64).round() as u64,
        }
    }
}

/// The marking decision of one egress queue, in integers, 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EcnMarker {
    kmin_bytes: u64,
    kmax_bytes: u64,
    /// Pmax in 2^-32 units.
    pmax: u64,
}

impl EcnMarker {
    /// Whether a packet leaving a queue of `queue_bytes` is marked, given a uniform random
    /// word: probability 0 at or below Kmin, `Pmax (q - Kmin) / (Kmax - Kmin)` up to Kmax, 1
    /// above it.
    pub fn mark(&self, queue_bytes: u64, random: u64) -> bool {
        if queue_bytes <= self.kmin_bytes {
            return false;
        }
        if queue_bytes > self.kmax_bytes {
            return true;
        }
        // draw < Pmax (q - Kmin) / (Kmax - Kmin), with draw uniform in [0, 1) in 2^-32 units,
        // multiplied out so that nothing is divided.
        let draw = u128::from(random >> 32);
        let span = u128::from(self.kmax_bytes - self.kmin_bytes);
        let above = u128::from(queue_bytes - self.kmin_bytes);
        draw * span < u128::from(self.pmax) * above
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::mix;

    const GBPS: u64 = 1_000_000_000;
    const MBPS: u64 = 1_000_000;
    const US: u64 = PS_PER_US;

    fn params(config: DcqcnConfig) -> RpParams {
        config.validate().unwrap();
        RpParams::new(&config, 40 * GBPS)
    }

    /// Alpha stays where it is set: its update comes only every 131071 us.
    fn frozen_alpha(initial_alpha_value: u32) -> DcqcnConfig {
        DcqcnConfig {
            initial_alpha_value,
            dce_tcp_rtt: 131_071,
            ..DcqcnConfig::default()
        }
    }

    #[test]
    fn defaults_are_the_documents_listing() {
        let text = "DcqcnClampTgtRate = 0\nDcqcnClampTgtRateAfterTimeInc = 1\n\
            DcqcnRpgTimeReset = 100\nDcqcnRpgByteReset = 400\nDcqcnRpgThreshold = 5\n\
            DcqcnRpgAiRate = 10\nDcqcnRpgHaiRate = 100\nDcqcnAlphaToRateShift = 11\n\
            DcqcnRpgMinDecFac = 50\nDcqcnRpgMinRate = 1\nDcqcnRateToSetOnFirstCnp = 3000\n\
            DcqcnDceTcpG = 32\nDcqcnDceTcpRtt = 4\nDcqcnRateReduceMonitorPeriod = 32\n\
            DcqcnInitialAlphaValue = 0\nDcqcnCnpDscp = 0\nDcqcnCnp802pPrio = 7\n\
            DcqcnCnpPrioMode = 1\nDcqcnRPEnablePrio3 = 1\nDcqcnNPEnablePrio3 = 1\n\
            min_time_between_cnps = 4\n";
        let parsed: DcqcnConfig = toml::from_str(text).unwrap();
        assert_eq!(parsed, DcqcnConfig::default());
        assert_eq!(DcqcnConfig::default().validate(), Ok(()));
        let error = toml::from_str::<DcqcnConfig>("DcqcnRpgTimeRest = 100").unwrap_err();
        assert!(error.message().contains("unknown field `DcqcnRpgTimeRest`"));
        // The document's units, converted once: 3000 Mb/s, 100 us, 400 x 64 = 25,600 bytes.
        let p = params(DcqcnConfig::default());
        assert_eq!(p.first_cnp_rate_bps, 3_000 * MBPS);
        assert_eq!(p.time_reset_ps, 100_000_000);
        assert_eq!(p.byte_reset_bytes, 25_600);
        assert_eq!(p.min_rate_bps, MBPS);
    }

    #[test]
    fn validate_names_the_key_and_its_range() {
        type Change = fn(&mut DcqcnConfig);
        let cases: [(Change, &str); 9] = [
            (
                |c| c.rpg_threshold = 0,
                "DcqcnRpgThreshold = 0 is out of range: 1 to 31 stages",
            ),
            (
                |c| c.rpg_threshold = 32,
                "DcqcnRpgThreshold = 32 is out of range: 1 to 31 stages",
            ),
            (
                |c| c.rpg_min_dec_fac = 0,
                "DcqcnRpgMinDecFac = 0 is out of range: 1 to 100 (it divides the rate, so not 0)",
            ),
            (
                |c| c.dce_tcp_g = 1024,
                "DcqcnDceTcpG = 1024 is out of range: a fraction of 1024, 0 to 1023",
            ),
            (
                |c| c.alpha_to_rate_shift = 12,
                "DcqcnAlphaToRateShift = 12 is out of range: 0 to 11",
            ),
            (
                |c| c.cnp_802p_prio = 8,
                "DcqcnCnp802pPrio = 8 is out of range: an 802.1p priority is 3 bits, 0 to 7",
            ),
            (
                |c| c.np_enable_prio5 = 2,
                "DcqcnNPEnablePrio5 = 2 is out of range: 1 bit, 0 or 1",
            ),
            (
                |c| c.dce_tcp_rtt = 0,
                "DcqcnDceTcpRtt = 0 is out of range: 1 to 131071 microseconds (0 would update \
                 alpha without end)",
            ),
            (
                |c| {
                    c.rpg_time_reset = 0;
                    c.rpg_byte_reset = 0;
                },
                "DcqcnRpgTimeReset and DcqcnRpgByteReset are both 0: with the timer and the byte \
                 counter both off, a flow's rate would never rise after a CNP",
            ),
        ];
        for (change, message) in cases {
            let mut config = DcqcnConfig::default();
            change(&mut config);
            assert_eq!(config.validate().unwrap_err().to_string(), message);
        }
        // One counter off is fine.
        let timer_only = DcqcnConfig {
            rpg_byte_reset: 0,
            ..DcqcnConfig::default()
        };
        assert_eq!(timer_only.validate(), Ok(()));
    }

    #[test]
    fn first_cnp_sets_the_rate_to_set_on_first_cnp() {
        let p = params(DcqcnConfig::default());
        let mut rp = ReactionPoint::new(&p);
        assert_eq!((rp.rate_bps(), rp.next_timer_ps(&p)), (40 * GBPS, None));
        rp.on_cnp(&p, 10 * US);
        // DcqcnRateToSetOnFirstCnp 3000 Mb/s; the target keeps the rate before (40 Gb/s);
        // alpha is DcqcnInitialAlphaValue 0; the alpha timer (4 us) is the first due.
        assert_eq!(rp.rate_bps(), 3_000 * MBPS);
        assert_eq!(rp.target_bps(), 40 * GBPS);
        assert_eq!(rp.alpha(), 0);
        assert_eq!(rp.next_timer_ps(&p), Some(14 * US));
        // 0 is the line rate; above the line rate is the line rate.
        for mbps in [0, 100_000] {
            let p = params(DcqcnConfig {
                rate_to_set_on_first_cnp: mbps,
                ..DcqcnConfig::default()
            });
            let mut rp = ReactionPoint::new(&p);
            rp.on_cnp(&p, 0);
            assert_eq!(rp.rate_bps(), 40 * GBPS, "{mbps}");
            assert!(rp.is_limited());
        }
    }

    #[test]
    fn a_cnp_cuts_by_alpha_over_two_and_raises_alpha_by_g() {
        // The timer off and no bytes sent: the rate cannot rise back to the line rate (which
        // would release the limiter) before the first alpha update.
        let p = params(DcqcnConfig {
            rpg_time_reset: 0,
            ..frozen_alpha(512)
        });
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        assert_eq!((rp.rate_bps(), rp.alpha()), (3_000 * MBPS, 512));
        // 40 us is past DcqcnRateReduceMonitorPeriod (32 us): cut at once.
        // alpha = 512/1024 = 0.5: Rc = 3000 x (1 - 0.5/2) = 2250 Mb/s (512 >> 11 shift, exact).
        rp.on_cnp(&p, 40 * US);
        assert_eq!(rp.rate_bps(), 2_250 * MBPS);
        // No increase since the first CNP, so the target stays at 40 Gb/s
        // (DcqcnClampTgtRateAfterTimeInc 1, DcqcnClampTgtRate 0).
        assert_eq!(rp.target_bps(), 40 * GBPS);
        // The alpha update at 131071 us: (1 - g) alpha + g with g = 32/1024:
        // 0.5 x 992/1024 + 32/1024 = (496 + 32)/1024 = 528/1024 = 0.515625, exact.
        rp.on_timer(&p, 131_071 * US);
        assert_eq!(rp.alpha(), 528);
        // The next update has had no CNP: 528 x 992 / 1024 = 511.5, rounded down to 511.
        rp.on_timer(&p, 2 * 131_071 * US);
        assert_eq!(rp.alpha(), 511);
    }

    #[test]
    fn without_cnps_alpha_decays_by_one_minus_g_per_dce_tcp_rtt() {
        let p = params(DcqcnConfig {
            initial_alpha_value: 1000,
            ..DcqcnConfig::default()
        });
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        // Updates at 4, 8, ... us; the timer increase at 100 us does not touch alpha.
        // By hand: 1000 x 992/1024 = 968.75 -> 968; 968 x 992/1024 = 937.75 -> 937.
        rp.on_timer(&p, 4 * US);
        assert_eq!(rp.alpha(), 968);
        rp.on_timer(&p, 8 * US);
        assert_eq!(rp.alpha(), 937);
        // After n updates alpha is 1000 x (31/32)^n, less at most one 1024th per update for
        // the rounding down: n = 20 (80 us) gives 1000 x 0.530 = 530.4, so 510 to 530.
        rp.on_timer(&p, 80 * US);
        let exact = 1000.0 * (31.0f64 / 32.0).powi(20);
        let alpha = f64::from(rp.alpha());
        assert!(
            alpha <= exact && alpha >= exact - 20.0,
            "{alpha} vs {exact}"
        );
    }

    #[test]
    fn cnps_within_the_monitor_period_make_one_cut_when_it_ends() {
        let p = params(frozen_alpha(512));
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        // 10 us and 20 us are inside the 32 us monitor period from the first CNP: nothing yet.
        rp.on_cnp(&p, 10 * US);
        rp.on_cnp(&p, 20 * US);
        assert_eq!(rp.rate_bps(), 3_000 * MBPS);
        assert_eq!(rp.next_timer_ps(&p), Some(32 * US));
        // One cut at 32 us: 3000 x 0.75 = 2250 Mb/s; the next CNP at 40 us waits until 64 us.
        rp.on_timer(&p, 32 * US);
        assert_eq!(rp.rate_bps(), 2_250 * MBPS);
        rp.on_cnp(&p, 40 * US);
        assert_eq!(rp.rate_bps(), 2_250 * MBPS);
        rp.on_timer(&p, 63 * US);
        assert_eq!(rp.rate_bps(), 2_250 * MBPS);
        // 2250 x 0.75 = 1687.5 Mb/s.
        rp.on_timer(&p, 64 * US);
        assert_eq!(rp.rate_bps(), 1_687_500_000);
    }

    #[test]
    fn fast_recovery_halves_toward_the_target_for_threshold_stages() {
        let p = params(DcqcnConfig::default());
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        // Timer stages every 100 us, Cr = (Cr + Tr)/2 with Tr = 40000 Mb/s, by hand:
        // 3000 -> 21500 -> 30750 -> 35375 -> 37687.5 -> 38843.75 Mb/s (5 stages).
        for (stage, mbps_x100) in [2_150_000u64, 3_075_000, 3_537_500, 3_768_750, 3_884_375]
            .into_iter()
            .enumerate()
        {
            rp.on_timer(&p, (stage as u64 + 1) * 100 * US);
            assert_eq!(rp.rate_bps(), mbps_x100 * MBPS / 100, "stage {stage}");
            assert_eq!(rp.target_bps(), 40 * GBPS);
        }
        // Stage 6 is additive (+10 Mb/s on the target, capped at the 40 Gb/s line rate):
        // (38843.75 + 40000)/2 = 39421.875 Mb/s.
        rp.on_timer(&p, 600 * US);
        assert_eq!(rp.rate_bps(), 39_421_875_000);
    }

    #[test]
    fn additive_then_hyper_increase_after_both_counters_pass_the_threshold() {
        // Alpha 0 and DcqcnClampTgtRate: the second CNP sets Tr = Cr = 3000 Mb/s and cuts
        // nothing (alpha 0; Cr/50 = 60 Mb/s is lower), so fast recovery stays at 3000 Mb/s.
        let p = params(DcqcnConfig {
            clamp_tgt_rate: 1,
            ..frozen_alpha(0)
        });
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        rp.on_cnp(&p, 50 * US);
        assert_eq!(
            (rp.rate_bps(), rp.target_bps()),
            (3_000 * MBPS, 3_000 * MBPS)
        );
        // Then a byte stage (25,600 bytes) and a timer stage (100 us) in turn. The stage counts
        // (bytes, timer) before each event, by hand:
        //  1-9: (0,0) (1,0) (1,1) ... (4,4): both below 5, fast recovery, Cr stays 3000;
        //  10: (5,4) timer, additive: Tr 3010, Cr (3000 + 3010)/2 = 3005;
        //  11: (5,5) bytes, additive (the least is not above 5): Tr 3020, Cr 3012.5;
        //  12: (6,5) timer, additive: Tr 3030, Cr 3021.25;
        //  13: (6,6) bytes, hyper (+100): Tr 3130, Cr 3075.625;
        //  14: (7,6) timer, hyper: Tr 3230, Cr 3152.8125.
        let expected_kbps: [(u64, u64); 14] = [
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_000_000, 3_000_000),
            (3_005_000, 3_010_000),
            (3_012_500, 3_020_000),
            (3_021_250, 3_030_000),
            (3_075_625, 3_130_000),
            (3_152_812, 3_230_000),
        ];
        for (event, (current_kbps, target_kbps)) in expected_kbps.into_iter().enumerate() {
            let stage = event as u64 / 2 + 1;
            if event % 2 == 0 {
                rp.on_bytes_sent(&p, 25_600, 50 * US + stage * 100 * US - 1);
            } else {
                rp.on_timer(&p, 50 * US + stage * 100 * US);
            }
            // 3152.8125 Mb/s is 3,152,812,500 b/s: compare in b/s, to the bit.
            let current = if event == 13 {
                3_152_812_500
            } else {
                current_kbps * 1000
            };
            assert_eq!(rp.rate_bps(), current, "event {}", event + 1);
            assert_eq!(rp.target_bps(), target_kbps * 1000, "event {}", event + 1);
        }
    }

    #[test]
    fn a_cut_stops_at_min_dec_fac_and_at_min_rate() {
        // Shift 10 and alpha 1023: the alpha cut leaves 3000 x 1/1024 = 2.93 Mb/s
        // (3e9 - (3e9 x 1023 >> 10) = 3e9 - 2,997,070,312 = 2,929,688 b/s), below
        // Cr / DcqcnRpgMinDecFac = 3000/50 = 60 Mb/s, which wins.
        let cut_from_first = |config: DcqcnConfig| {
            let p = params(DcqcnConfig {
                alpha_to_rate_shift: 10,
                ..config
            });
            let mut rp = ReactionPoint::new(&p);
            rp.on_cnp(&p, 0);
            rp.on_cnp(&p, 40 * US);
            rp.rate_bps()
        };
        assert_eq!(cut_from_first(frozen_alpha(1023)), 60 * MBPS);
        // DcqcnRpgMinDecFac 100: 30 Mb/s, but DcqcnRpgMinRate 2000 Mb/s is the floor.
        let floored = DcqcnConfig {
            rpg_min_dec_fac: 100,
            rpg_min_rate: 2_000,
            ..frozen_alpha(1023)
        };
        assert_eq!(cut_from_first(floored), 2_000 * MBPS);
        // Shift 0: alpha/1 > 1 would make the rate negative; Cr/50 is the rate.
        let shift_zero = params(DcqcnConfig {
            alpha_to_rate_shift: 0,
            ..frozen_alpha(1)
        });
        let mut rp = ReactionPoint::new(&shift_zero);
        rp.on_cnp(&shift_zero, 0);
        rp.on_cnp(&shift_zero, 40 * US);
        assert_eq!(rp.rate_bps(), 60 * MBPS);
    }

    #[test]
    fn back_at_line_rate_the_limiter_is_released() {
        let p = params(DcqcnConfig::default());
        let mut rp = ReactionPoint::new(&p);
        rp.on_cnp(&p, 0);
        // The timer alone: 5 fast recovery stages, then additive toward Tr = 40 Gb/s; the gap
        // halves each stage (rounded up), so the rate reaches 40 Gb/s within about 35 stages.
        rp.on_timer(&p, 10_000 * US);
        assert_eq!(rp.rate_bps(), 40 * GBPS);
        assert!(!rp.is_limited());
        assert_eq!(rp.next_timer_ps(&p), None);
        // The next CNP is a first CNP again.
        rp.on_cnp(&p, 10_001 * US);
        assert_eq!(rp.rate_bps(), 3_000 * MBPS);
    }

    #[test]
    fn the_notification_point_paces_cnps_and_picks_their_priority() {
        let config = DcqcnConfig {
            np_enable_prio0: 0,
            cnp_dscp: 48,
            ..DcqcnConfig::default()
        };
        let np_params = NpParams::new(&config);
        let mut np = NotificationPoint::default();
        // min_time_between_cnps 4 us: marked packets at 0, 1, 3.999, 4, 5, 8 us give CNPs at
        // 0, 4 and 8 us. DcqcnCnpPrioMode 1: the CNP is on the marked packet's priority (3).
        let sent: Vec<u64> = [0, 1_000_000, 3_999_999, 4_000_000, 5_000_000, 8_000_000]
            .into_iter()
            .filter(|&t| {
                np.on_marked_packet(&np_params, 3, t)
                    .inspect(|cnp| assert_eq!(*cnp, Cnp { pcp: 3, dscp: 48 }))
                    .is_some()
            })
            .collect();
        assert_eq!(sent, [0, 4 * US, 8 * US]);
        // Priority 0 has no notification point.
        assert_eq!(
            NotificationPoint::default().on_marked_packet(&np_params, 0, 0),
            None
        );
        // DcqcnCnpPrioMode 0: DcqcnCnp802pPrio (7).
        let fixed = NpParams::new(&DcqcnConfig {
            cnp_prio_mode: 0,
            ..DcqcnConfig::default()
        });
        assert_eq!(
            NotificationPoint::default().on_marked_packet(&fixed, 3, 0),
            Some(Cnp { pcp: 7, dscp: 0 })
        );
    }

    /// The fraction of `n` random words that mark a packet at `queue_bytes`.
    fn mark_rate(marker: &EcnMarker, queue_bytes: u64, n: u64) -> f64 {
        let marks = (0..n)
            .filter(|&i| marker.mark(queue_bytes, mix(7, i)))
            .count();
        marks as f64 / n as f64
    }

    #[test]
    fn ecn_marking_follows_red_between_kmin_and_kmax() {
        let config = EcnConfig {
            kmin_bytes: 10_000,
            kmax_bytes: 20_000,
            pmax: 0.2,
        };
        config.validate().unwrap();
        let marker = config.marker();
        // 100,000 words: a binomial's standard deviation is at most 0.0016 here, so a
        // tolerance of 0.006 is above 3.5 of them.
        let n = 100_000;
        assert_eq!(mark_rate(&marker, 9_999, n), 0.0);
        assert_eq!(mark_rate(&marker, 10_000, n), 0.0);
        // Midpoint 15,000: 0.2 x 5,000/10,000 = 0.1.
        assert!((mark_rate(&marker, 15_000, n) - 0.1).abs() < 0.006);
        // Kmax: Pmax = 0.2. A quarter of the way: 0.05.
        assert!((mark_rate(&marker, 20_000, n) - 0.2).abs() < 0.006);
        assert!((mark_rate(&marker, 12_500, n) - 0.05).abs() < 0.006);
        // Above Kmax: every packet.
        assert_eq!(mark_rate(&marker, 20_001, n), 1.0);
        for (bad, message) in [
            (
                EcnConfig {
                    kmin_bytes: 30_000,
                    ..config
                },
                "kmin_bytes = 30000 is above kmax_bytes = 20000: Kmin is where marking starts",
            ),
            (
                EcnConfig {
                    pmax: 1.5,
                    ..config
                },
                "pmax = 1.5 is not a probability: give a number from 0 to 1",
            ),
            (
                EcnConfig {
                    pmax: f64::NAN,
                    ..config
                },
                "pmax = NaN is not a probability: give a number from 0 to 1",
            ),
        ] {
            assert_eq!(bad.validate().unwrap_err().to_string(), message);
        }
        let parsed: EcnConfig =
            toml::from_str("kmin_bytes = 10000\nkmax_bytes = 20000\npmax = 0.2").unwrap();
        assert_eq!(parsed, config);
    }

    /// The RED profile of the closed-loop tests, the DCQCN paper's 40 Gb/s one: Kmin 5 KB,
    /// Kmax 200 KB, Pmax 1%.
    const LOOP_ECN: EcnConfig = EcnConfig {
        kmin_bytes: 5_000,
        kmax_bytes: 200_000,
        pmax: 0.01,
    };

    /// What one run of [`shared_bottleneck`] measured over its window.
    struct Bottleneck {
        /// Each flow's mean rate, b/s.
        rates: Vec<u64>,
        mean_queue_bytes: u64,
        /// The fraction of the time the queue was in the marking band (above Kmin, at most
        /// Kmax).
        in_marking_band: f64,
        /// The fraction of the time the queue was above Kmax, where every packet is marked.
        above_kmax: f64,
    }

    /// Flows sharing one bottleneck queue, in steps of one packet time at the bottleneck. Each
    /// flow sends its rate's worth of 1000-byte packets into the queue. The queue is marked per
    /// packet ([`LOOP_ECN`], the caller's random words) and drains at the bottleneck rate.
    /// Each marked packet reaches the flow's notification point after the queueing delay, and
    /// its CNP the reaction point 2 us later. Flow `i` starts at `starts_ps[i]`; the figures
    /// are over `[measure_ps, end_ps)`.
    fn shared_bottleneck(
        config: DcqcnConfig,
        starts_ps: &[u64],
        measure_ps: u64,
        end_ps: u64,
    ) -> Bottleneck {
        const PACKET: u64 = 1000;
        const BOTTLENECK_BPS: u64 = 40 * GBPS;
        // One packet time at 40 Gb/s: 8000 bits / 40 Gb/s = 200 ns.
        const STEP_PS: u64 = PACKET * 8 * 1_000_000_000_000 / BOTTLENECK_BPS;
        const CNP_RETURN_PS: u64 = 2 * US;
        const PS_PER_BIT: u64 = 1_000_000_000_000 / BOTTLENECK_BPS;
        let rp_params = params(config);
        let np_params = NpParams::new(&config);
        let marker = LOOP_ECN.marker();
        let flows = starts_ps.len();
        let mut rps = vec![ReactionPoint::new(&rp_params); flows];
        let mut nps = vec![NotificationPoint::default(); flows];
        let mut credit_bits = vec![0u64; flows];
        let mut measured_bytes = vec![0u64; flows];
        // CNPs on their way back: (arrival, flow).
        let mut cnps: Vec<(u64, usize)> = Vec::new();
        let (mut queue, mut queue_sum, mut steps_measured, mut packets) = (0u64, 0u64, 0u64, 0u64);
        let (mut steps_in_band, mut steps_above_kmax) = (0u64, 0u64);
        let mut now = 0;
        while now < end_ps {
            cnps.sort_unstable();
            let due = cnps.partition_point(|&(at, _)| at <= now);
            for (at, flow) in cnps.drain(..due) {
                rps[flow].on_cnp(&rp_params, at);
            }
            for flow in 0..flows {
                if now < starts_ps[flow] {
                    continue;
                }
                rps[flow].on_timer(&rp_params, now);
                credit_bits[flow] += rps[flow].rate_bps() * STEP_PS / 1_000_000_000_000;
                while credit_bits[flow] >= PACKET * 8 {
                    credit_bits[flow] -= PACKET * 8;
                    queue += PACKET;
                    packets += 1;
                    if marker.mark(queue, mix(11, packets)) {
                        let delay = queue * 8 * PS_PER_BIT;
                        if nps[flow]
                            .on_marked_packet(&np_params, 3, now + delay)
                            .is_some()
                        {
                            cnps.push((now + delay + CNP_RETURN_PS, flow));
                        }
                    }
                    rps[flow].on_bytes_sent(&rp_params, PACKET, now);
                    if now >= measure_ps {
                        measured_bytes[flow] += PACKET;
                    }
                }
            }
            queue = queue.saturating_sub(PACKET);
            if now >= measure_ps {
                queue_sum += queue;
                steps_measured += 1;
                if queue > LOOP_ECN.kmax_bytes {
                    steps_above_kmax += 1;
                } else if queue > LOOP_ECN.kmin_bytes {
                    steps_in_band += 1;
                }
            }
            now += STEP_PS;
        }
        let window_ps = end_ps - measure_ps;
        Bottleneck {
            rates: measured_bytes
                .iter()
                .map(|&bytes| bytes * 8 * 1_000_000 / (window_ps / 1_000_000))
                .collect(),
            mean_queue_bytes: queue_sum / steps_measured,
            in_marking_band: steps_in_band as f64 / steps_measured as f64,
            above_kmax: steps_above_kmax as f64 / steps_measured as f64,
        }
    }

    const MS: u64 = 1000 * US;

    /// Two flows starting 5 ms apart, and four starting 2 ms apart.
    fn loop_starts() -> [Vec<u64>; 2] {
        [vec![0, 5 * MS], vec![0, 2 * MS, 4 * MS, 6 * MS]]
    }

    #[test]
    fn with_the_documents_byte_counter_two_flows_keep_an_unfair_split() {
        // The document's defaults, measured from 150 to 200 ms: the mean queue stays between
        // Kmin and Kmax and the flows use at least 85% of the 40 Gb/s, but two flows settle
        // far from an even split. DcqcnRpgByteReset 400 x 64 = 25.6 KB is a stage every
        // 6.4 us at 32 Gb/s and every 27 us at 7.5 Gb/s, while the timer's 100 us is the same
        // for both: the faster flow's rate rises about four times as often. The notification
        // point's one CNP per 4 us per flow, with the queue above Kmax (every packet marked)
        // for a seventh of the time, gives the flows nearly as many CNPs as each other
        // (measured per 5 ms from 155 to 195 ms: 3008 and 715 marks, 219 and 177 CNPs, 56 and
        // 37 cuts, 780 and 203 increase stages), so the cuts do not even out what the
        // increases skew. This is the byte counter's unfairness Hayashi,
        // Itsumi and Yamamoto measured in QCN, whose reaction point DCQCN's is ("Improving
        // Fairness of Quantized Congestion Notification for Data Center Ethernet Networks",
        // ICDCS workshops 2011). The split does not move with time: 31.46 and 7.73 Gb/s over
        // 1.5 to 2 s. Measured when written: 2 flows 31.97 + 7.45 Gb/s, queue 76.8 KB; 4 flows
        // 8.94, 8.86, 8.95, 8.84 Gb/s (35.6 of 40), queue 52.5 KB.
        for starts in loop_starts() {
            let run = shared_bottleneck(DcqcnConfig::default(), &starts, 150 * MS, 200 * MS);
            let total: u64 = run.rates.iter().sum();
            assert!(
                (5_000..=200_000).contains(&run.mean_queue_bytes),
                "{starts:?}: queue {}",
                run.mean_queue_bytes
            );
            assert!(total >= 34 * GBPS, "{starts:?}: {:?}", run.rates);
            if starts.len() == 2 {
                let (low, high) = (
                    run.rates[0].min(run.rates[1]),
                    run.rates[0].max(run.rates[1]),
                );
                assert!(high > 3 * low, "{:?}", run.rates);
            }
        }
    }

    /// The convergence check. The document's defaults except `DcqcnRpgByteReset`,
    /// which is 32767 (2 MB, the most the document allows). At every rate up to the 40 Gb/s
    /// line rate the byte counter then takes longer than the 100 us timer (2 MB at 40 Gb/s is
    /// 419 us). So every flow's rate rises on the timer, at the same pace whatever its rate,
    /// and the cuts, proportional to the rate, even the flows out. Any `DcqcnRpgByteReset` of
    /// at least line rate x `DcqcnRpgTimeReset` / 64 bytes (7813 here) does this; with the
    /// document's 400 the flows do not converge (the test above).
    ///
    /// Measured from 200 ms to 1 s: the additive increase is 10 Mb/s per 100 us stage, and only
    /// after five stages of fast recovery. So shares drift slowly: a 50 ms mean still strays by
    /// up to 12% from the fair share (2 of 12 runs with other random words). Means over 800 ms
    /// stayed within 5.1% (18 runs). Measured when written: 2 flows 20.79 and
    /// 19.18 Gb/s; 4 flows 10.27, 10.09, 9.83, 9.79 Gb/s.
    #[test]
    fn flows_sharing_a_bottleneck_converge_to_within_ten_percent_of_fair_share() {
        let config = DcqcnConfig {
            rpg_byte_reset: 32_767,
            ..DcqcnConfig::default()
        };
        for starts in loop_starts() {
            let run = shared_bottleneck(config, &starts, 200 * MS, 1000 * MS);
            let fair = 40 * GBPS / starts.len() as u64;
            for rate in &run.rates {
                assert!(
                    rate.abs_diff(fair) * 10 <= fair,
                    "{starts:?}: {:?}",
                    run.rates
                );
            }
            // The queue stays near the marking threshold: in the marking band most of the time
            // (measured when written: 74% with 2 flows, 89% with 4) and above Kmax, where
            // marking saturates, almost never (0 steps). The document's defaults spend 12% to
            // 15% of the time above Kmax and 22% to 39% empty.
            assert!(
                run.mean_queue_bytes > LOOP_ECN.kmin_bytes
                    && run.mean_queue_bytes <= LOOP_ECN.kmax_bytes,
                "{starts:?}: mean queue {}",
                run.mean_queue_bytes
            );
            assert!(
                run.in_marking_band >= 0.6,
                "{starts:?}: in the marking band {}",
                run.in_marking_band
            );
            assert!(
                run.above_kmax <= 0.01,
                "{starts:?}: above Kmax {}",
                run.above_kmax
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn rate_stays_between_min_and_line_and_alpha_within_one(
            threshold in 1u32..32,
            shift in 0u32..12,
            min_dec_fac in 1u32..101,
            min_rate in 0u32..50_000,
            first in 0u32..50_000,
            g in 0u32..1024,
            initial_alpha in 0u32..1024,
            clamp in 0u32..2,
            clamp_after_time in 0u32..2,
            events in proptest::collection::vec((0u8..3, 0u64..200, 0u64..100_000), 1..300),
        ) {
            let config = DcqcnConfig {
                rpg_threshold: threshold,
                alpha_to_rate_shift: shift,
                rpg_min_dec_fac: min_dec_fac,
                rpg_min_rate: min_rate,
                rate_to_set_on_first_cnp: first,
                dce_tcp_g: g,
                initial_alpha_value: initial_alpha,
                clamp_tgt_rate: clamp,
                clamp_tgt_rate_after_time_inc: clamp_after_time,
                ..DcqcnConfig::default()
            };
            let p = params(config);
            let mut rp = ReactionPoint::new(&p);
            let mut now = 0;
            for (kind, step_us, bytes) in events {
                now += step_us * US;
                match kind {
                    0 => rp.on_cnp(&p, now),
                    1 => rp.on_bytes_sent(&p, bytes, now),
                    _ => rp.on_timer(&p, now),
                }
                proptest::prop_assert!(rp.rate_bps() >= p.min_rate_bps);
                proptest::prop_assert!(rp.rate_bps() <= p.line_rate_bps);
                proptest::prop_assert!(rp.target_bps() >= rp.rate_bps());
                proptest::prop_assert!(rp.target_bps() <= p.line_rate_bps);
                proptest::prop_assert!(rp.alpha() < 1024);
                if let Some(next) = rp.next_timer_ps(&p) {
                    proptest::prop_assert!(next > now);
                }
            }
        }
    }
}
