//! What a reload of `ibqos sm`'s configuration did, option by option: applied from the sweep it
//! starts, waiting for a restart, or not used by ibqos. OpenSM re-reads only the options it can
//! change at run time and says nothing about the others; an administrator who edited
//! `guid` or `transaction_timeout` learns here that the edit waits for a restart.

use ibqos_opensm::{OptionChange, Settings, changed_options};
use ibqos_sm::config::{Takes, takes_effect};
use tracing::{info, warn};

/// Logs each option that differs between `old` and `new` and what becomes of it, then one line
/// with the counts; keys' values are never shown.
pub fn report(old: &Settings, new: &Settings) {
    let (mut applied, mut need_restart, mut unused) = (0, 0, 0);
    for change in changed_options(old, new) {
        let OptionChange { key, old, new } = shown(change);
        match takes_effect(&key) {
            Takes::NextSweep => {
                applied += 1;
                info!(option = %key, from = %old, to = %new, "option changed: applied from this sweep");
            }
            Takes::Restart => {
                need_restart += 1;
                warn!(option = %key, from = %old, to = %new, "option changed: takes effect only after a restart");
            }
            Takes::Never => {
                unused += 1;
                info!(option = %key, from = %old, to = %new, "option changed: ibqos does not use it");
            }
        }
    }
    info!(
        applied,
        need_restart, unused, "configuration re-read on SIGHUP"
    );
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
