//! What the performance manager runs with: OpenSM's `perfmgr` options, as plain values the SM's
//! configuration fills in.

use std::time::Duration;

/// OpenSM's `perfmgr_sweep_time_s` default, and what a value below 1 becomes.
pub const DEFAULT_SWEEP_TIME_S: u16 = 180;
/// OpenSM's `perfmgr_max_outstanding_queries` default, and what a value below 1 becomes.
pub const DEFAULT_MAX_OUTSTANDING_QUERIES: u32 = 500;
/// OpenSM's `perfmgr_xmit_wait_threshold` default.
pub const DEFAULT_XMIT_WAIT_THRESHOLD: u32 = 0xffff;
/// The file `dump_counters` writes in the dump directory when `event_db_dump_file` is unset.
pub const DEFAULT_DUMP_FILE: &str = "opensm_port_counters.log";

/// The performance manager's options, with OpenSM's names and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMgrConfig {
    /// `perfmgr`: sweep on a timer at all.
    pub enabled: bool,
    /// `perfmgr_redir`: follow a PMA's ClassPortInfo redirection.
    pub redirect: bool,
    /// `perfmgr_sweep_time_s`: the time between sweeps.
    pub sweep_time_s: u16,
    /// `perfmgr_max_outstanding_queries`: PerfMgt MADs on the wire at once.
    pub max_outstanding_queries: u32,
    /// `perfmgr_ignore_cas`: monitor switches and routers only.
    pub ignore_cas: bool,
    /// `perfmgr_rm_nodes`: a node gone from the subnet leaves the database (TRUE) or stays
    /// there, marked inactive.
    pub remove_nodes: bool,
    /// `perfmgr_log_errors`: log each error counter that grew.
    pub log_errors: bool,
    /// `perfmgr_query_cpi`: read each PMA's ClassPortInfo before its counters.
    pub query_cpi: bool,
    /// `perfmgr_xmit_wait_log`: log a PortXmitWait that grew by at least the threshold.
    pub xmit_wait_log: bool,
    /// `perfmgr_xmit_wait_threshold`.
    pub xmit_wait_threshold: u32,
    /// `event_db_dump_file`: where `dump_counters` writes; `None` for
    /// [`DEFAULT_DUMP_FILE`] in the dump directory.
    pub dump_file: Option<String>,
    /// `transaction_timeout`: how long each MAD waits for its answer (OpenSM binds the
    /// PerfMgr's agent with the SM's timeout and retries).
    pub timeout: Duration,
    /// `transaction_retries`.
    pub retries: u32,
    /// ibqos.toml's `perfmgr_lanes`, beyond OpenSM: read the per-VL and per-SL counters after
    /// PortCounters (see [`crate::lanes`]).
    pub lanes: bool,
}

impl Default for PerfMgrConfig {
    fn default() -> Self {
        PerfMgrConfig {
            enabled: false,
            redirect: true,
            sweep_time_s: DEFAULT_SWEEP_TIME_S,
            max_outstanding_queries: DEFAULT_MAX_OUTSTANDING_QUERIES,
            ignore_cas: false,
            remove_nodes: true,
            log_errors: true,
            query_cpi: true,
            xmit_wait_log: false,
            xmit_wait_threshold: DEFAULT_XMIT_WAIT_THRESHOLD,
            dump_file: None,
            timeout: Duration::from_millis(200),
            retries: 3,
            lanes: false,
        }
    }
}

impl PerfMgrConfig {
    /// The values OpenSM's `osm_subn_verify_config` leaves: a sweep time or a cap on queries
    /// below 1 is its default.
    pub fn verified(self) -> PerfMgrConfig {
        PerfMgrConfig {
            sweep_time_s: if self.sweep_time_s < 1 {
                DEFAULT_SWEEP_TIME_S
            } else {
                self.sweep_time_s
            },
            max_outstanding_queries: if self.max_outstanding_queries < 1 {
                DEFAULT_MAX_OUTSTANDING_QUERIES
            } else {
                self.max_outstanding_queries
            },
            ..self
        }
    }

    /// The time between sweeps.
    pub fn sweep_period(&self) -> Duration {
        Duration::from_secs(u64::from(self.sweep_time_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_sweep_time_or_cap_is_opensms_default() {
        let zero = PerfMgrConfig {
            sweep_time_s: 0,
            max_outstanding_queries: 0,
            ..PerfMgrConfig::default()
        }
        .verified();
        assert_eq!(zero.sweep_time_s, 180);
        assert_eq!(zero.max_outstanding_queries, 500);
        let kept = PerfMgrConfig {
            sweep_time_s: 1,
            max_outstanding_queries: 1,
            ..PerfMgrConfig::default()
        }
        .verified();
        assert_eq!((kept.sweep_time_s, kept.max_outstanding_queries), (1, 1));
    }
}
