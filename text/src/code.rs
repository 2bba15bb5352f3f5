//! Diagnostic codes: one list, from which the enum, its names and each reader's set come.

use std::cmp::Ordering;
use std::fmt;

/// The kinds of file whose readers emit diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reader {
    /// opensm.conf and ibqos.toml (`ibqos-opensm`).
    Config,
    /// ibsim net files (`ibqos-fabric`).
    NetFile,
    /// Traffic files of the simulator (`ibqos-sim`).
    Traffic,
    /// Fault schedules of the emulated fabric (`ibqos-emu`).
    Schedule,
    /// Counter presets of the emulated fabric (`ibqos-emu`).
    Counters,
    /// OpenSM's qos-policy.conf (`ibqos-opensm`).
    QosPolicy,
    /// OpenSM's partitions.conf (`ibqos-opensm`).
    Partitions,
}

/// Declares [`Code`]: each variant with its doc line, its stable name and the readers that emit
/// it. A name exists only here, so a typo at a use site does not compile.
macro_rules! codes {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident = $name:literal in $($reader:ident)|+;
    )+) => {
        /// A diagnostic's stable, kebab-case code: scripts and tests match on its name
        /// ([`Code::as_str`]), which never changes once released.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &[Code] = &[$(Code::$variant),+];

            /// The stable name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)+
                }
            }

            /// The kinds of file whose readers emit this code.
            pub const fn readers(self) -> &'static [Reader] {
                match self {
                    $(Code::$variant => &[$(Reader::$reader),+],)+
                }
            }
        }
    };
}

codes! {
    /// Not an OpenSM option (case, `key=value`, a CR after a bare key...); OpenSM ignores the
    /// line.
    UnknownKey = "unknown-key" in Config;
    /// OpenSM expects a number and rejects the value, keeping the previous one.
    NotNumeric = "not-numeric" in Config;
    /// A number outside what the field takes: OpenSM rejects it, a net file is refused.
    OutOfRange = "out-of-range" in Config | NetFile;
    /// OpenSM rejects the value and keeps the previous one.
    InvalidValue = "invalid-value" in Config;
    /// OpenSM's verify step throws the value away.
    ResetToDefault = "reset-to-default" in Config;
    /// OpenSM segfaults on this value.
    OpensmCrash = "opensm-crash" in Config;
    /// More than a tenth of the file is not text.
    BinaryFile = "binary-file" in Config;
    /// The file is not UTF-8 text.
    NotUtf8 = "not-utf8" in Config | Traffic;
    /// ibqos.toml does not parse, or says something it cannot.
    InvalidNative = "invalid-native" in Config;
    /// A boolean other than exactly `TRUE`/`FALSE`: read as FALSE.
    NotTrue = "not-true" in Config;
    /// `-1` is not what it looks like to `strtoul`.
    NegativeNumber = "negative-number" in Config;
    /// `010` is octal to `strtoul`.
    OctalNumber = "octal-number" in Config;
    /// `strtol` without checks: `abc` is 0.
    IntNotNumeric = "int-not-numeric" in Config;
    /// `strtol` without checks: `5x` is 5.
    IntTrailingGarbage = "int-trailing-garbage" in Config;
    /// `strtol` without checks: the number wraps.
    IntWrapped = "int-wrapped" in Config;
    /// A line longer than OpenSM reads is split in two.
    LineSplit = "line-split" in Config;
    /// A NUL byte ends the line for OpenSM.
    NulByte = "nul-byte" in Config;
    /// A `#` inside quotes starts a comment for OpenSM.
    CommentInQuotes = "comment-in-quotes" in Config;
    /// A quote without its pair.
    UnbalancedQuote = "unbalanced-quote" in Config;
    /// A value replaced by a later line.
    DuplicateKey = "duplicate-key" in Config;
    /// A value replaced by another option.
    Overridden = "overridden" in Config;
    /// A negative high limit: accepted, but not used as written.
    HighLimitNegative = "high-limit-negative" in Config;
    /// A value cut to the width of its field.
    FieldTruncated = "field-truncated" in Config;
    /// A value OpenSM never checks.
    UncheckedValue = "unchecked-value" in Config;
    /// `max_op_vls` 0: accepted, but not used as written.
    MaxOpVlsZero = "max-op-vls-zero" in Config;
    /// A `max_op_vls` that is not an OperVLs encoding.
    MaxOpVlsEncoding = "max-op-vls-encoding" in Config;
    /// QoS on without a policy file.
    NoPolicyFile = "no-policy-file" in Config;
    /// An SL OpenSM reads as another number.
    SlMisread = "sl-misread" in Config;
    /// A string value cut to OpenSM's buffer.
    ValueTruncated = "value-truncated" in Config;
    /// A string value that is not UTF-8.
    InvalidUtf8 = "invalid-utf8" in Config;
    /// A VLArb VL of 15 or above is taken mod 15.
    VlMod15 = "vl-mod-15" in Config;
    /// A VLArb weight above 255 wraps.
    WeightWrapped = "weight-wrapped" in Config;
    /// An SL2VL VL cut to its field.
    Sl2vlVlTruncated = "sl2vl-vl-truncated" in Config;
    /// A VLArb/SL2VL number changed by the parser.
    NumberTruncated = "number-truncated" in Config;
    /// A VLArb/SL2VL separator the parser swallows.
    SeparatorEaten = "separator-eaten" in Config;
    /// A VLArb/SL2VL separator other than `,` and `:`.
    NonstandardSeparator = "nonstandard-separator" in Config;
    /// An empty VLArb/SL2VL field.
    EmptyField = "empty-field" in Config;
    /// A VLArb entry without its weight.
    MissingWeight = "missing-weight" in Config;
    /// A table longer than OpenSM takes.
    TooManyEntries = "too-many-entries" in Config;
    /// An SL2VL table shorter than 16 VLs.
    TooFewVls = "too-few-vls" in Config;
    /// A table set to an empty value.
    EmptyTable = "empty-table" in Config;
    /// A conversion cannot say a value exactly.
    NotExpressible = "not-expressible" in Config;
    /// An option set to other than OpenSM's default that ibqos does not act on (yet).
    NotActedOn = "not-acted-on" in Config;
    /// A `routing_engine` name that is no engine OpenSM has: skipped.
    UnknownRoutingEngine = "unknown-routing-engine" in Config;
    /// A GUID file option whose file cannot be read: the engine sees the file as failed.
    GuidFileUnreadable = "guid-file-unreadable" in Config;
    /// A line of a GUID file that is not a GUID: OpenSM stops reading the file there.
    GuidFileStops = "guid-file-stops" in Config;
    /// A GUID that `strtoull` reads as another number (octal, negative, too long).
    GuidMisread = "guid-misread" in Config;
    /// The torus-2QoS.conf `torus_config` names cannot be read: torus-2QoS fails.
    TorusConfigUnreadable = "torus-config-unreadable" in Config;
    /// A torus-2QoS.conf line OpenSM rejects: torus-2QoS fails.
    TorusConfigFails = "torus-config-fails" in Config;
    /// Text of a torus-2QoS.conf OpenSM ignores or reads as another number.
    TorusConfigIgnored = "torus-config-ignored" in Config;
    /// A routing option that no engine which may route reads.
    RoutingOptionUnused = "routing-option-unused" in Config;
    /// A routing engine that may route replaces the SLs the QoS policy or the partitions
    /// choose with its own (LASH, DFSSSP, Nue on several VLs), or keeps only their bit 3
    /// (torus-2QoS).
    EngineReplacesSl = "engine-replaces-sl" in Config;
    /// The ports run fewer data VLs than a routing engine that may route needs.
    EngineShortOfVls = "engine-short-of-vls" in Config;
    /// An SL-to-VL table puts two of a layered routing engine's SLs on one VL.
    Sl2vlMergesLayers = "sl2vl-merges-layers" in Config;
    /// A CA's CCTI_Min past the congestion control table's last index (CCTI_Limit).
    CcMinPastLimit = "cc-min-past-limit" in Config;
    /// A warning OpenSM itself prints, verbatim.
    OpensmSays = "opensm-says" in Config;
    /// QoS is off, so none of the QoS options are used.
    QosDisabled = "qos-disabled" in Config;
    /// A QoS value OpenSM does not verify.
    QosNotVerified = "qos-not-verified" in Config;
    /// A `max_vls` value that programs nothing.
    MaxVlsUnused = "max-vls-unused" in Config;
    /// `max_wire_smps` 0 means no limit.
    MaxWireSmpsUnlimited = "max-wire-smps-unlimited" in Config;
    /// An old name of an option.
    AliasKey = "alias-key" in Config;
    /// An SL mapped to VL15: its packets are dropped.
    Vl15Drop = "vl15-drop" in Config;
    /// The file sets no option.
    EmptyFile = "empty-file" in Config;
    /// The count of diagnostics of one code beyond [`crate::MAX_PER_CODE`].
    TooManyDiagnostics = "too-many-diagnostics" in Config;

    /// A file that cannot be read.
    UnreadableFile = "unreadable-file" in Config | NetFile | Schedule | Counters;
    /// Includes nested deeper than ibsim allows.
    IncludeTooDeep = "include-too-deep" in NetFile;
    /// An `include` line without a quoted file name.
    BadInclude = "bad-include" in NetFile;
    /// A line longer than ibsim reads.
    LineTooLong = "line-too-long" in NetFile;
    /// A directive without its `=`.
    MissingAssignment = "missing-assignment" in NetFile;
    /// A `module=` prefix ibsim refuses.
    BadPrefix = "bad-prefix" in NetFile;
    /// A `Switch`/`Ca`/`Rt` line that does not parse.
    BadNodeHeader = "bad-node-header" in NetFile;
    /// A node id with a reserved character or too long.
    BadNodeId = "bad-node-id" in NetFile;
    /// A node id declared twice.
    DuplicateNode = "duplicate-node" in NetFile;
    /// A GUID given to two nodes.
    DuplicateGuid = "duplicate-guid" in NetFile;
    /// A port line that does not parse.
    BadPortLine = "bad-port-line" in NetFile;
    /// An alias with a reserved character.
    BadAlias = "bad-alias" in NetFile;
    /// An alias declared twice.
    DuplicateAlias = "duplicate-alias" in NetFile;
    /// A link to a node that is not in the file.
    UnknownRemote = "unknown-remote" in NetFile;
    /// A link to a port the remote node does not have.
    BadRemotePort = "bad-remote-port" in NetFile;
    /// A link declared on one end only, or differently on the two.
    OneSidedLink = "one-sided-link" in NetFile;
    /// A link to an alias the remote end does not declare.
    AliasMismatch = "alias-mismatch" in NetFile;
    /// Two ends of a link with no width or speed in common.
    NoCommonRate = "no-common-rate" in NetFile;
    /// A `# ibqos:` setting that does not parse.
    BadIbqosSetting = "bad-ibqos-setting" in NetFile;
    /// A fabric the topology model refuses.
    InvalidTopology = "invalid-topology" in NetFile;
    /// A `do` line: ibsim runs it, the reader does not.
    CommandNotRun = "command-not-run" in NetFile;
    /// A line that ends a node record and is consumed with it.
    LineEaten = "line-eaten" in NetFile;
    /// Link width or speed data ibsim does not know.
    UnknownLinkData = "unknown-link-data" in NetFile;

    /// TOML syntax, an unknown key or a wrong type.
    InvalidToml = "invalid-toml" in Traffic | Schedule | Counters;
    /// A run of no time.
    ZeroDuration = "zero-duration" in Traffic;
    /// A time that is negative, not finite or too long.
    BadTime = "bad-time" in Traffic;
    /// A rate that is negative or not finite.
    BadRate = "bad-rate" in Traffic;
    /// An SL above 15.
    SlOutOfRange = "sl-out-of-range" in Traffic;
    /// A payload of 0 or above 4096 bytes.
    PayloadOutOfRange = "payload-out-of-range" in Traffic;
    /// Management traffic with a payload larger than a MAD.
    ManagementPayloadTooLarge = "management-payload-too-large" in Traffic;
    /// A VL buffer outside 64 B to 1 GB.
    BufferOutOfRange = "buffer-out-of-range" in Traffic;
    /// A VL buffer too small for one packet.
    BufferTooSmall = "buffer-too-small" in Traffic;
    /// A flow that stops before it starts.
    StopBeforeStart = "stop-before-start" in Traffic;
    /// A node name that is not a host of the topology.
    UnknownNode = "unknown-node" in Traffic | Schedule | Counters;
    /// A flow from a host to itself.
    SelfFlow = "self-flow" in Traffic;
    /// An incast pattern without `dst`.
    IncastWithoutDst = "incast-without-dst" in Traffic;
    /// `dst` in a pattern other than incast.
    DstWithoutIncast = "dst-without-incast" in Traffic;
    /// A pattern over fewer than 2 nodes.
    TooFewNodes = "too-few-nodes" in Traffic;
    /// No flow and no pattern.
    NoTraffic = "no-traffic" in Traffic;
    /// A key of the other flow control: an InfiniBand key on a `pfc` run, or an Ethernet one
    /// on a credit run.
    WrongFlowControl = "wrong-flow-control" in Traffic;
    /// An Ethernet priority above 7.
    PriorityOutOfRange = "priority-out-of-range" in Traffic;
    /// A DSCP above 63.
    DscpOutOfRange = "dscp-out-of-range" in Traffic;
    /// A flow with both a priority and a DSCP.
    PriorityAndDscp = "priority-and-dscp" in Traffic;
    /// A `[pfc]`, `[buffer]`, `[ets]`, `[host]` or `[[storm]]` setting its model refuses.
    InvalidEthernetSetting = "invalid-ethernet-setting" in Traffic;
    /// A `[congestion_control]` setting out of range or inconsistent.
    InvalidCongestionControlSetting = "invalid-congestion-control-setting" in Traffic;

    /// A port number the node does not have.
    NoSuchPort = "no-such-port" in Schedule | Counters;
    /// A flap of a port without a link.
    UnlinkedPort = "unlinked-port" in Schedule;
    /// A link that comes up before it goes down.
    UpBeforeDown = "up-before-down" in Schedule;
    /// A time beyond what the emulator counts.
    TimeOverflow = "time-overflow" in Schedule;
    /// A VLArb entry whose VL is above 15.
    VlOutOfRange = "vl-out-of-range" in Schedule;
    /// A VLArb table with more entries than the port holds.
    TableTooLarge = "table-too-large" in Schedule;
    /// A table rewrite that names no table.
    NoTable = "no-table" in Schedule;
    /// An attribute or counter the emulated PMAs do not keep.
    UnknownCounter = "unknown-counter" in Counters;
    /// A value wider than its counter.
    CounterTooLarge = "counter-too-large" in Counters;

    /// OpenSM rejects the policy file (its own message): the whole policy is dropped.
    PolicySyntax = "policy-syntax" in QosPolicy;
    /// OpenSM rejects the policy for this fabric (validation): the whole policy is dropped.
    PolicyInvalid = "policy-invalid" in QosPolicy;
    /// The policy file named by the configuration cannot be read.
    PolicyUnreadable = "policy-unreadable" in QosPolicy;
    /// Unquoted text whose blanks OpenSM drops.
    PolicySpacesDropped = "policy-spaces-dropped" in QosPolicy;
    /// A qos-level SL above 15: no path matching it gets a PathRecord.
    PolicySlAbove15 = "policy-sl-above-15" in QosPolicy;
    /// A number OpenSM cuts to its field.
    PolicyValueTruncated = "policy-value-truncated" in QosPolicy;
    /// A number with a leading 0 is octal.
    PolicyOctalNumber = "policy-octal-number" in QosPolicy;
    /// `path-bits` is parsed and used for nothing.
    PolicyPathBitsUnused = "policy-path-bits-unused" in QosPolicy;
    /// A `port-guid` range so large that OpenSM stalls walking it.
    PolicyHugeGuidRange = "policy-huge-guid-range" in QosPolicy;
    /// An `ipoib` line makes the whole policy depend on its partition.
    PolicyIpoibPartition = "policy-ipoib-partition" in QosPolicy;
    /// The qos-setup section has no effect under OpenSM.
    PolicySetupIgnored = "policy-setup-ignored" in QosPolicy;
    /// A qos-setup scope ibqos cannot program: a group that is not a port group, a value no
    /// table holds, or two scopes giving one port different tables.
    PolicySetupInvalid = "policy-setup-invalid" in QosPolicy;
    /// A second qos-level named default: the first wins.
    PolicyDuplicateDefault = "policy-duplicate-default" in QosPolicy;
    /// A GUID, node or partition of a group the fabric does not have.
    PolicyUnresolved = "policy-unresolved" in QosPolicy;

    /// OpenSM rejects partitions.conf (its own message): it runs with the default partition.
    PartitionsSyntax = "partitions-syntax" in Partitions;
    /// OpenSM crashes on this line.
    PartitionsCrash = "partitions-crash" in Partitions;
    /// The partitions.conf named by the configuration cannot be read.
    PartitionsUnreadable = "partitions-unreadable" in Partitions;
    /// A file that defines nothing: OpenSM runs with the default partition.
    PartitionsEmpty = "partitions-empty" in Partitions;
    /// A flag, mgroup flag or port flag OpenSM ignores or replaces (its own message).
    PartitionsIgnored = "partitions-ignored" in Partitions;
    /// A flag value OpenSM skips, or sets to 0 while saying it skips it (its own message).
    PartitionsBadValue = "partitions-bad-value" in Partitions;
    /// A number followed by text: OpenSM uses the number (its own message).
    PartitionsSuspiciousValue = "partitions-suspicious-value" in Partitions;
    /// A multicast group OpenSM does not create (its own message).
    PartitionsGroupDropped = "partitions-group-dropped" in Partitions;
    /// A word OpenSM reads as the keyword it begins (`m` is `mtu`, `A` is `ALL`).
    PartitionsAbbreviation = "partitions-abbreviation" in Partitions;
    /// A value cut to its C field (a P_Key above 16 bits, a name above 31 bytes...).
    PartitionsTruncated = "partitions-truncated" in Partitions;
    /// A definition OpenSM merges into an earlier one (its own message).
    PartitionsMerged = "partitions-merged" in Partitions;
    /// A line OpenSM reads in pieces, or reads past (a NUL byte, a line above 4094 bytes, the
    /// flags of an mgid at the end of a definition).
    PartitionsLineTrap = "partitions-line-trap" in Partitions;
    /// A setting that another option of OpenSM changes (an SL without QoS).
    PartitionsOverridden = "partitions-overridden" in Partitions;
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Codes sort by name, the order people and scripts see.
impl Ord for Code {
    fn cmp(&self, other: &Code) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Code) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_kebab_case() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.split('-').all(|w| !w.is_empty()
                    && w.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{name} is not kebab-case"
            );
        }
    }

    #[test]
    fn sorted_by_name() {
        assert!(Code::UnknownKey > Code::NotTrue);
        assert!(Code::AliasKey < Code::BadAlias);
    }
}
