//! Where the log goes and how much of it: standard error (colour only on a terminal) or a log
//! file, at a level RUST_LOG sets or else OpenSM's log flags (`-D`, opensm.conf's `log_flags`),
//! which a reload can change while the daemon runs; warnings about a problem that every sweep
//! meets again, logged once per problem.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::io::IsTerminal;

use anyhow::{Context, Result};
use tracing::{Event, Level, Subscriber, info, warn};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::layer::{Layered, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry, fmt, reload};

use ibqos_transport::driver::FRAMES_TARGET;

use crate::logfile::{LogFile, SizeLimit};

/// OpenSM's log flags (`osm_log.h`): each bit turns one kind of message on.
const ERROR: u8 = 0x01;
const INFO: u8 = 0x02;
const VERBOSE: u8 = 0x04;
const DEBUG: u8 = 0x08;
const FUNCS: u8 = 0x10;
const FRAMES: u8 = 0x20;

/// The running log: its level, changeable while the daemon runs, and the log file's size limit.
pub struct Logging {
    filter: reload::Handle<EnvFilter, Registry>,
    /// RUST_LOG was set: it decides the level, log flags do not.
    from_env: bool,
    limit: Option<SizeLimit>,
}

impl Logging {
    /// Logs to standard error: in colour only on a terminal and without NO_COLOR; to systemd's
    /// journal (when standard error is the stream `JOURNAL_STREAM` names) one record per line
    /// with its priority as `<N>` and without a timestamp, which the journal adds; else plain
    /// lines.
    pub fn to_stderr() -> Logging {
        let output = if stderr_is_the_journal() {
            fmt::layer()
                .event_format(JournalRecord)
                .with_writer(std::io::stderr)
                .boxed()
        } else {
            let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(colour)
                .boxed()
        };
        Logging::init(output, None)
    }

    /// Appends the log to the file at `path`, plain (OpenSM's `-f`).
    pub fn to_file(path: &std::path::Path) -> Result<Logging> {
        let file = LogFile::open(path)?;
        let limit = file.size_limit();
        let output = fmt::layer().with_writer(file).with_ansi(false).boxed();
        Ok(Logging::init(output, Some(limit)))
    }

    fn init(output: Box<dyn Layer<Filtered> + Send + Sync>, limit: Option<SizeLimit>) -> Logging {
        let from_env = std::env::var_os(EnvFilter::DEFAULT_ENV).is_some();
        // OpenSM's milestones (discovering, LIDs assigned, switches configured, SUBNET UP) are
        // info, its default flags' level.
        let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
        let (filter, handle) = reload::Layer::new(filter);
        tracing_subscriber::registry()
            .with(filter)
            .with(output)
            .init();
        Logging {
            filter: handle,
            from_env,
            limit,
        }
    }

    /// Logs what OpenSM's log flags `flags` turn on, unless RUST_LOG decides.
    pub fn set_log_flags(&self, flags: u8) -> Result<()> {
        if self.from_env {
            return Ok(());
        }
        self.filter
            .reload(EnvFilter::new(directives_for(flags)))
            .context("cannot change the log level")
    }

    /// OpenSM's `log_max_size`, in megabytes (0: no limit), for the log file if there is one.
    pub fn set_max_size_mb(&self, megabytes: u32) {
        if let Some(limit) = &self.limit {
            limit.set(u64::from(megabytes) << 20);
        }
    }
}

/// The subscriber the log's output sits on: the registry behind the reloadable level filter.
type Filtered = Layered<reload::Layer<EnvFilter, Registry>, Registry>;

/// Whether standard error is the journal's stream: systemd sets `JOURNAL_STREAM` to its device
/// and inode, which a redirected standard error no longer matches.
fn stderr_is_the_journal() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(stderr) = std::fs::metadata("/proc/self/fd/2") else {
        return false;
    };
    stream.to_str() == Some(&format!("{}:{}", stderr.dev(), stderr.ino()))
}

/// A record for the journal: `<N>` (sd-daemon's prefix, which journald takes as the record's
/// PRIORITY, so `journalctl -p warning` works), then the target and the message, no time.
struct JournalRecord;

impl<S, N> FormatEvent<S, N> for JournalRecord
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &fmt::FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let priority = match *event.metadata().level() {
            Level::ERROR => 3,
            Level::WARN => 4,
            Level::INFO => 6,
            Level::DEBUG | Level::TRACE => 7,
        };
        write!(writer, "<{priority}>")?;
        fmt::format()
            .without_time()
            .with_level(false)
            .with_ansi(false)
            .format_event(ctx, writer, event)
    }
}

/// The problems of attempts a daemon makes again and again (a dump file written after every
/// sweep into a directory it cannot write): each is warned of once, not at every attempt, and
/// said to be over once an attempt succeeds.
#[derive(Debug, Default)]
pub struct Problems {
    /// The error of each attempt that failed last time, by what it attempts.
    standing: BTreeMap<String, String>,
}

impl Problems {
    /// The outcome of an attempt to `what` ("write the dump file /var/log/opensm-subnet.lst"):
    /// a warning when it fails unlike the time before, an info line when it succeeds after a
    /// failure, nothing otherwise.
    pub fn note<E: Display>(&mut self, what: &str, outcome: Result<(), E>) {
        match outcome {
            Ok(()) => {
                if self.standing.remove(what).is_some() {
                    info!("could {what} again");
                }
            }
            Err(error) => {
                let error = error.to_string();
                if self.standing.get(what) != Some(&error) {
                    warn!(%error, "cannot {what}; not said again while it lasts");
                    self.standing.insert(what.to_owned(), error);
                }
            }
        }
    }
}

/// The tracing directives that log what OpenSM's log flags `flags` ask for. OpenSM's flags are
/// separate kinds; tracing's levels nest, so the most detailed kind asked for sets the level:
/// ERROR is error and warning records, INFO adds info, VERBOSE debug, DEBUG and FUNCS (OpenSM's
/// function entries and exits, which ibqos does not log) trace. FRAMES adds every MAD sent and
/// received, at any level. No flag logs nothing, as OpenSM's 0.
pub fn directives_for(flags: u8) -> String {
    let level = if flags & (DEBUG | FUNCS) != 0 {
        "trace"
    } else if flags & VERBOSE != 0 {
        "debug"
    } else if flags & INFO != 0 {
        "info"
    } else if flags & ERROR != 0 {
        "warn"
    } else {
        "off"
    };
    if flags & FRAMES != 0 {
        format!("{level},{FRAMES_TARGET}=trace")
    } else {
        level.to_string()
    }
}

/// OpenSM's `-D FLAGS`: a number up to 0xff, in hex with 0x or decimal.
pub fn parse_log_flags(text: &str) -> Result<u8, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("`{text}` is not a log flag mask from 0 to 0xff"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opensm_flags_map_onto_the_most_detailed_level_they_ask_for() {
        assert_eq!(directives_for(0x00), "off");
        assert_eq!(directives_for(ERROR), "warn");
        // OpenSM's default, 0x03.
        assert_eq!(directives_for(ERROR | INFO), "info");
        assert_eq!(directives_for(ERROR | INFO | VERBOSE), "debug");
        assert_eq!(directives_for(!FRAMES), "trace");
        assert_eq!(directives_for(INFO | FRAMES), "info,ibqos::frames=trace");
        assert_eq!(directives_for(FRAMES), "off,ibqos::frames=trace");
    }

    #[test]
    fn log_flags_are_a_byte_in_hex_or_decimal() {
        assert_eq!(parse_log_flags("0x43"), Ok(0x43));
        assert_eq!(parse_log_flags("3"), Ok(3));
        assert_eq!(parse_log_flags("0XFF"), Ok(0xff));
        assert!(parse_log_flags("0x100").is_err());
        assert!(parse_log_flags("-1").is_err());
        assert!(parse_log_flags("info").is_err());
    }
}
