//! What the performance manager has to say, each in OpenSM's words (`osm_perfmgr.c`), for the
//! caller to log.

use std::fmt;

use ibqos_exchange::scheduler::Failure;
use ibqos_mad::PerfAttributeId;

use crate::counters::ErrorCounter;

/// How loud OpenSM logs a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// OSM_LOG_ERROR.
    Error,
    /// OSM_LOG_INFO.
    Info,
    /// OSM_LOG_VERBOSE.
    Verbose,
}

/// A node and port the notice is about, as the monitored map names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    pub name: String,
    pub guid: u64,
    pub port: u8,
}

/// The far end of a port's link, as OpenSM's error-increase log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePort {
    pub name: String,
    pub guid: u64,
    pub port: u8,
}

/// One thing worth a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// ERR 5407: a monitored node is no longer in the subnet.
    NodeGone { name: String, guid: u64 },
    /// ERR 5402: a query got no good answer (the cause is the scheduler's, logged beside it).
    QueryFailed {
        about: About,
        lid: u16,
        tid: u64,
        failure: Failure,
    },
    /// ERR 540A: an error counter fell since the previous reading: someone cleared them.
    ErrorsClearedOutOfBand(About),
    /// ERR 540B: a data counter fell since the previous reading.
    DataClearedOutOfBand(About),
    /// ERR 5431 to 543C: an error counter grew; ERR 543D: PortXmitWait grew by at least
    /// `perfmgr_xmit_wait_threshold` (OpenSM names no far end for it).
    ErrorsGrew {
        counter: ErrorCounter,
        growth: u64,
        about: About,
        remote: Option<RemotePort>,
    },
    /// A counter close to full: the PerfMgr clears them (`extended`: PortCountersExtended's).
    NearFull { extended: bool, about: About },
    /// A PMA's ClassPortInfo redirected the PerfMgr, which follows it.
    Redirected { about: About, lid: u16, qp: u32 },
    /// Why a redirection is not followed, in OpenSM's words.
    RedirectRefused { about: About, why: &'static str },
    /// A sweep was due while the last one still had queries to send.
    SweepSkipped { state: u8 },
    /// An answer whose attribute could not be read.
    Unreadable {
        about: About,
        attribute: PerfAttributeId,
    },
    /// A PMA does not keep a per-VL or per-SL attribute (status 0x000C, no answer, or the query
    /// handed back undelivered): the port is not asked for it again until it is rediscovered.
    LaneLacking {
        about: About,
        attribute: PerfAttributeId,
        failure: Failure,
    },
    /// A per-VL or per-SL counter fell since the previous reading.
    LaneClearedOutOfBand {
        about: About,
        attribute: PerfAttributeId,
    },
    /// A per-VL or per-SL counter close to full: the PerfMgr clears the attribute's counters.
    LaneNearFull {
        about: About,
        attribute: PerfAttributeId,
    },
}

impl Notice {
    pub fn level(&self) -> Level {
        match self {
            Notice::NearFull { .. }
            | Notice::Unreadable { .. }
            | Notice::Redirected { .. }
            | Notice::RedirectRefused { .. }
            | Notice::LaneNearFull { .. } => Level::Verbose,
            Notice::SweepSkipped { .. }
            | Notice::LaneLacking { .. }
            | Notice::LaneClearedOutOfBand { .. } => Level::Info,
            _ => Level::Error,
        }
    }
}

/// OpenSM's log line, without its newline.
impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::NodeGone { name, guid } => write!(
                f,
                "ERR 5407: Node \"{name}\" (guid {guid:#x}) no longer exists so removing from \
                 PerfMgr monitoring"
            ),
            Notice::QueryFailed {
                about, lid, tid, ..
            } => write!(
                f,
                "ERR 5402: {} ({:#x}) port {} LID {lid} TID {tid:#x}",
                about.name, about.guid, about.port
            ),
            Notice::ErrorsClearedOutOfBand(about) => write!(
                f,
                "PerfMgr: ERR 540A: Detected an out of band error clear on {} ({:#x}) port {}",
                about.name, about.guid, about.port
            ),
            Notice::DataClearedOutOfBand(about) => write!(
                f,
                "PerfMgr: ERR 540B: Detected an out of band data counter clear on node {} \
                 ({:#x}) port {}",
                about.name, about.guid, about.port
            ),
            Notice::ErrorsGrew {
                counter,
                growth,
                about,
                remote,
            } => {
                let (name, number) = counter.logged_as();
                write!(
                    f,
                    "ERR {number}: {name} : {growth} : node \"{}\" (NodeGUID: {:#x}) : port {}",
                    about.name, about.guid, about.port
                )?;
                if let Some(remote) = remote {
                    // OpenSM prints the remote GUID as it keeps it, in network order, with a
                    // host-order format: byte-reversed on a little-endian host.
                    write!(
                        f,
                        " connected to \"{}\" (NodeGUID: {:#x}) : port {}",
                        remote.name,
                        remote.guid.to_be(),
                        remote.port
                    )?;
                }
                Ok(())
            }
            Notice::NearFull { extended, about } => write!(
                f,
                "PerfMgr: {} overflow: {} ({:#x}) port {}; clearing counters",
                if *extended {
                    "PortCountersExtended"
                } else {
                    "Counter"
                },
                about.name,
                about.guid,
                about.port
            ),
            Notice::Redirected { about, lid, qp } => write!(
                f,
                "Redirection to LID {lid} QP {qp:#x} received from {} ({:#x}) port {}",
                about.name, about.guid, about.port
            ),
            Notice::RedirectRefused { about, why } => write!(
                f,
                "{why}: {} ({:#x}) port {}",
                about.name, about.guid, about.port
            ),
            Notice::SweepSkipped { state } => {
                write!(f, "PM sweep state {state}, skipping sweep")
            }
            Notice::Unreadable { about, attribute } => write!(
                f,
                "{} ({:#x}) port {}: the {attribute} answer could not be read; ignored",
                about.name, about.guid, about.port
            ),
            Notice::LaneLacking {
                about,
                attribute,
                failure,
            } => write!(
                f,
                "PerfMgr: {} ({:#x}) port {} does not keep {attribute} ({failure}); not asked \
                 again until it is rediscovered",
                about.name, about.guid, about.port
            ),
            Notice::LaneClearedOutOfBand { about, attribute } => write!(
                f,
                "PerfMgr: {attribute} of {} ({:#x}) port {} fell: cleared out of band; \
                 counted from 0",
                about.name, about.guid, about.port
            ),
            Notice::LaneNearFull { about, attribute } => write!(
                f,
                "PerfMgr: {attribute} overflow: {} ({:#x}) port {}; clearing counters",
                about.name, about.guid, about.port
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about() -> About {
        About {
            name: "S1".into(),
            guid: 0x20_0000,
            port: 3,
        }
    }

    #[test]
    fn texts_are_opensms() {
        let grew = Notice::ErrorsGrew {
            counter: ErrorCounter::LocalLinkIntegrityErrors,
            growth: 4,
            about: about(),
            remote: Some(RemotePort {
                name: "H1/U1".into(),
                guid: 0x0002_c903_0010_0001,
                port: 1,
            }),
        };
        assert_eq!(
            grew.to_string(),
            "ERR 543A: LocalLinkIntegrityErrors : 4 : node \"S1\" (NodeGUID: 0x200000) : port 3 \
             connected to \"H1/U1\" (NodeGUID: 0x100100003c90200) : port 1"
        );
        let wait = Notice::ErrorsGrew {
            counter: ErrorCounter::XmitWait,
            growth: 70_000,
            about: about(),
            remote: None,
        };
        assert_eq!(
            wait.to_string(),
            "ERR 543D: XmitWait : 70000 : node \"S1\" (NodeGUID: 0x200000) : port 3"
        );
        assert_eq!(
            Notice::DataClearedOutOfBand(about()).to_string(),
            "PerfMgr: ERR 540B: Detected an out of band data counter clear on node S1 \
             (0x200000) port 3"
        );
        let failed = Notice::QueryFailed {
            about: about(),
            lid: 5,
            tid: 0xcafe,
            failure: Failure::TimedOut { attempts: 4 },
        };
        assert_eq!(
            failed.to_string(),
            "ERR 5402: S1 (0x200000) port 3 LID 5 TID 0xcafe"
        );
    }
}
