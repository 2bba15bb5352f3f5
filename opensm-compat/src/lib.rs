//! opensm.conf and ibqos.toml.
//!
//! opensm.conf is read exactly as OpenSM 3.3.23 reads it (`osm_subn_parse_conf_file`,
//! `osm_subn_verify_config`, and `qos_build_config` for the VLArb and SL2VL strings), and every
//! step where OpenSM silently drops or bends what the administrator wrote becomes a
//! [`Diagnostic`] with its place in the file. The result is [`Settings`]: the QoS configuration
//! ([`ibqos_qos::QosConfig`]), the typed SM and link options, and every other option OpenSM
//! recognises, verbatim, so nothing is lost.
//!
//! ibqos.toml says the same in plain terms and is strict. [`to_opensm_conf`] and
//! [`to_native_toml`] write either format and report whatever the target cannot say.
//!
//! No input panics: both readers take arbitrary bytes.
//!
//! # Diagnostic codes
//!
//! Each is an [`ibqos_text::Code`]; the names are stable (a test keeps this table equal to the
//! codes declared for this reader). E = error, W = warning, N = note.
//!
//! | code | | what |
//! |---|---|---|
//! | `unknown-key` | E | not an OpenSM option (case, `key=value`, a CR after a bare key...); OpenSM ignores the line |
//! | `not-numeric`, `out-of-range`, `invalid-value` | E | OpenSM rejects the value and keeps the previous one |
//! | `reset-to-default` | E | OpenSM's verify step throws the value away |
//! | `opensm-crash` | E | OpenSM segfaults on this value |
//! | `binary-file` | E | more than a tenth of the file is not text |
//! | `not-utf8`, `invalid-native` | E | ibqos.toml errors |
//! | `unreadable-file` | E | the file cannot be read |
//! | `not-true` | W | a boolean other than exactly `TRUE`/`FALSE`: read as FALSE |
//! | `negative-number`, `octal-number` | W | `-1` and `010` are not what they look like to `strtoul` |
//! | `int-not-numeric`, `int-trailing-garbage`, `int-wrapped` | W | `strtol` without checks (`abc` is 0, `5x` is 5) |
//! | `line-split`, `nul-byte`, `comment-in-quotes`, `unbalanced-quote` | W | line syntax traps |
//! | `duplicate-key`, `overridden` | W | a value replaced by a later line or by another option |
//! | `high-limit-negative`, `field-truncated`, `unchecked-value`, `max-op-vls-zero`, `max-op-vls-encoding`, `no-policy-file`, `sl-misread`, `value-truncated`, `invalid-utf8` | W | accepted, but not used as written |
//! | `vl-mod-15`, `weight-wrapped`, `sl2vl-vl-truncated`, `number-truncated` | W | a VLArb/SL2VL number changed by the parser |
//! | `separator-eaten`, `nonstandard-separator`, `empty-field`, `missing-weight` | W | a VLArb/SL2VL string that does not parse as it reads |
//! | `too-many-entries`, `too-few-vls`, `empty-table` | W | a table longer or shorter than OpenSM takes |
//! | `not-expressible` | W | a conversion cannot say a value exactly |
//! | `not-acted-on` | W | an option set to other than OpenSM's default that ibqos does not act on yet, or a routing engine it does not have yet (`ibqos check`) |
//! | `unknown-routing-engine` | W | a `routing_engine` name that is no engine OpenSM has: skipped, as OpenSM skips it (`ibqos check`) |
//! | `guid-file-unreadable` | E | a GUID file named by `root_guid_file`, `cn_guid_file`, `io_guid_file` or `guid_routing_order_file` cannot be read: the engine sees it as failed |
//! | `guid-file-stops` | E | a GUID file line that is not a GUID: OpenSM stops reading the file there and the engine sees it as failed |
//! | `guid-misread` | W | a GUID `strtoull` reads as another number (octal, negative, more than 64 bits) |
//! | `torus-config-unreadable` | E | the torus-2QoS.conf `torus_config` names cannot be read: torus-2QoS fails and the next engine routes |
//! | `torus-config-fails` | E | a torus-2QoS.conf line OpenSM rejects (no keyword, a value missing, a second `torus`, a dateline beyond the radix): torus-2QoS fails |
//! | `torus-config-ignored` | W | torus-2QoS.conf text OpenSM ignores (tokens after a keyword's values, a comment `port_order` reads as ports) or a number `strtoul` reads as another |
//! | `routing-option-unused` | W | a routing option set that no engine which may route reads: none of `routing_engine`'s, nor minhop unless `no_fallback` (`ibqos check`) |
//! | `engine-replaces-sl` | W | an engine of `routing_engine` (lash, dfsssp, nue on several VLs) gives every path its own layer's SL, so the SLs the QoS policy and the partitions choose do not reach the fabric; torus-2QoS keeps only their bit 3 (`ibqos check`) |
//! | `engine-short-of-vls` | W | the ports run fewer data VLs than an engine of `routing_engine` needs: torus-2QoS below 2, 4 or 8, a layered engine on one VL (`ibqos check`); the ports concerned (`ibqos plan --topology`) |
//! | `sl2vl-merges-layers` | W | a `qos_*_sl2vl` table maps two SLs a layered engine hands out to one VL, merging its layers (`ibqos check`) |
//! | `cc-min-past-limit` | E | with `congestion_control TRUE`, an SL's `cc_ca_cong_setting_ccti_min` past the last index of `cc_cct` (CCTI_Limit): no index fits both (`ibqos check`) |
//! | `opensm-says` | N | a warning OpenSM itself prints, verbatim |
//! | `qos-disabled`, `qos-not-verified`, `max-vls-unused`, `max-wire-smps-unlimited`, `alias-key`, `vl15-drop`, `empty-file`, `too-many-diagnostics` | N | worth knowing |

pub mod cc_values;
mod conf;
pub mod guid_file;
mod load;
mod native;
mod native_partitions;
mod native_policy;
mod options;
pub mod partitions;
pub mod qos_policy;
mod settings;
mod tables;
pub mod torus_config;

pub use ibqos_text::{Code, Diagnostic, Location, MAX_PER_CODE, Severity, sort_in_reading_order};
pub use load::{
    DEFAULT_PARTITIONS_FILE, DEFAULT_POLICY_FILE, Format, LoadError, Loaded, PartitionsLoad,
    PolicyLoad, load, load_bytes, load_partitions, load_policy, partitions_file, to_native_toml,
    to_opensm_conf,
};
pub use settings::{
    LinkSettings, MKeySecret, OptionChange, Settings, SmSettings, changed_options, option_names,
};

/// Each diagnostic's code, line and column: what the readers' tests compare.
#[cfg(test)]
fn located_codes(diagnostics: &[Diagnostic]) -> Vec<(&str, usize, usize)> {
    diagnostics
        .iter()
        .map(|d| {
            let at = d.location.as_ref().expect("located");
            (d.code.as_str(), at.line, at.col)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use ibqos_text::{Code, Reader};

    /// The code table of this crate's documentation lists exactly the codes declared for
    /// opensm.conf and ibqos.toml.
    #[test]
    fn the_doc_table_lists_every_config_code() {
        let documented: BTreeSet<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .flat_map(|row| row.split(" | ").next().unwrap_or("").split(", "))
            .map(|code| code.trim_matches('`'))
            .collect();
        let declared: BTreeSet<&str> = Code::ALL
            .iter()
            .filter(|c| c.readers().contains(&Reader::Config))
            .map(|c| c.as_str())
            .collect();
        assert_eq!(documented, declared);
    }
}
