//! What a reload of `ibqos sm`'s configuration did, option by option: applied from the sweep it
//! starts, waiting for a restart, or not used by ibqos. OpenSM re-reads only the options it can
//! change at run time and says nothing about the others; an administrator who edited
//! `guid` or `transaction_timeout` learns here that the edit waits for a restart.

use ibqos_opensm::{OptionChange, Settings, changed_options};
use ibqos_sm::config::{Takes, takes_effect};
use tracing::{info, warn};

/// Logs each option that differs between `old` and `new` and what becomes of it, then one line
/// with the counts; keys' values are never shown. The same, one line per option, for
/// `ibqos ctl reload` to print.
pub fn report(old: &Settings, new: &Settings) -> Vec<String> {
    let (mut applied, mut need_restart, mut unused) = (0, 0, 0);
    let mut lines = Vec::new();
    for change in changed_options(old, new) {
        let OptionChange { key, old, new } = shown(change);
        let takes = takes_effect(&key);
        lines.push(format!("{key}: {old} -> {new}: {}", course(takes)));
        match takes {
            Takes::NextSweep => applied += 1,
            Takes::Restart => need_restart += 1,
            Takes::Never => unused += 1,
        }
        // An edit that waits for a restart is one the administrator may not expect: a warning.
        if takes == Takes::Restart {
            warn!(option = %key, from = %old, to = %new, "option changed: {}", course(takes));
        } else {
            info!(option = %key, from = %old, to = %new, "option changed: {}", course(takes));
        }
    }
    info!(applied, need_restart, unused, "configuration re-read");
    lines
}

/// What becomes of a change that takes effect as `takes` says.
fn course(takes: Takes) -> &'static str {
    match takes {
        Takes::NextSweep => "applied from this sweep",
        Takes::Restart => "takes effect only after a restart",
        Takes::Never => "ibqos does not use it",
    }
}

/// The change as a log line may show it: a key's value (M_Key, SM_Key, SA_Key, CC_Key) is a
/// secret, and the line says only that it changed.
fn shown(change: OptionChange) -> OptionChange {
    if matches!(
        change.key.as_str(),
        "m_key" | "sm_key" | "sa_key" | "cc_key"
    ) {
        OptionChange {
            old: "(secret)".to_string(),
            new: "(secret, changed)".to_string(),
            ..change
        }
    } else {
        change
    }
}
