//! PathRecord SLs against OpenSM's: the shared oracle of the routing engines that choose SLs
//! (LASH, DFSSSP, torus-2QoS) and of the QoS policy they compose with.
//!
//! One fabric, one [`SmSetup`] (opensm.conf lines, a qos-policy.conf): OpenSM and `ibqos sm`
//! run as daemons, each on a fresh ibsim of the same net file. From the fabric's query node,
//! saquery asks each SA for the PathRecord of every ordered pair of endports, a pair at a time
//! (`saquery -p --slid S --dlid D`): ibsim carries one MAD per answer, at most three records, so
//! a query per source would not see every destination.
//!
//! Pairs are keyed by the ports' net-file names. Both ibsims give a named port the same GUID, so
//! this is the comparison by (source GUID, destination GUID), with names a failure can show. A
//! pair the SA answers with no record (no path, or ERR 1F2A) has no SL, and must have none on
//! both sides.
//!
//! - [`path_sls_match_opensm`]: the same SL for every pair (the policy's, LASH, DOR,
//!   torus-2QoS).
//! - [`path_sls_within`]: for DFSSSP, whose SL OpenSM draws at random per query within a range
//!   per pair (`layer + rand() % split`): the caller gives each pair's range, and ibqos's SL and
//!   each of several OpenSM answers must fall in it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::RangeInclusive;

use crate::opensm;
use crate::readback::{PortKey, port_name};
use crate::sa::{Query, SaTools, Session, SmKind, SmSetup};
use crate::scenario::Fabric;
use crate::{Error, Result, TestDir};

/// An ordered pair of endports: (source, destination).
pub type Pair = (PortKey, PortKey);

/// Every pair's answers: the SL of each record, `None` where the SA gave no record.
pub type PathSls = BTreeMap<Pair, Vec<Option<u8>>>;

/// How many times OpenSM is asked per pair when its SL is random: with DFSSSP's usual split of
/// 2 to 8 SLs per layer, enough for a draw outside the range to show.
pub const RANDOM_SAMPLES: usize = 4;

/// How a transcript ends when the client exited with status 0.
const EXITED_0: &str = "--- exit status: 0";

/// At most this many differing pairs are shown in a failure.
const SHOWN: usize = 20;

/// A qos-policy.conf of two QoS levels: SL `between_cas` by default, SL `toward_switches` for
/// paths to a switch's port 0.
pub fn two_level_policy(between_cas: u8, toward_switches: u8) -> String {
    format!(
        "port-groups
    port-group
        name: Switches
        node-type: SWITCH
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: DEFAULT
        sl: {between_cas}
    end-qos-level
    qos-level
        name: Management
        sl: {toward_switches}
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        destination: Switches
        qos-level-name: Management
    end-qos-match-rule
end-qos-match-rules
"
    )
}

/// `session`'s PathRecord SL for every ordered pair of endports (each port with itself
/// included), asking `samples` times per pair.
pub fn path_sls(session: &Session, samples: usize) -> Result<PathSls> {
    let mut sls = PathSls::new();
    for (source, &slid) in &session.lids {
        for (destination, &dlid) in &session.lids {
            let query = Query::saquery(&format!("-p --slid {slid} --dlid {dlid}"));
            let mut answers = Vec::with_capacity(samples);
            for _ in 0..samples {
                let transcript = session.run(&query)?;
                answers.push(record_sl(&transcript.raw).map_err(|e| {
                    e.context(format!(
                        "{} -> {}: `{}` against {}",
                        port_name(source),
                        port_name(destination),
                        query.display(),
                        session.kind
                    ))
                })?);
            }
            sls.insert((source.clone(), destination.clone()), answers);
        }
    }
    Ok(sls)
}

/// The SL of the PathRecord saquery printed (`sl......0x3`), or `None` when the SA answered
/// with no record. A client that did not end on its own, or failed for another reason, is an
/// error: the harness could not ask.
fn record_sl(transcript: &str) -> Result<Option<u8>> {
    let field = transcript.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("sl")?;
        let value = rest.trim_start_matches('.');
        (value.len() < rest.len()).then_some(value)
    });
    if let Some(value) = field {
        let sl = value
            .strip_prefix("0x")
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            .filter(|&sl| sl < 16)
            .ok_or_else(|| Error::new(format!("`{value}` is not an SL in:\n{transcript}")))?;
        return Ok(Some(sl));
    }
    // An empty answer (no path, or one the SA refused such as ERR 1F2A) is a GetTable of no
    // records: saquery prints nothing and exits 0.
    let quiet_success =
        transcript.lines().nth(1) == Some(EXITED_0) && transcript.lines().count() == 2;
    if quiet_success {
        return Ok(None);
    }
    Err(Error::new(format!(
        "neither a PathRecord nor an empty answer:\n{transcript}"
    )))
}

/// Starts `kind` on a fresh ibsim of `fabric` with `setup` in `dir` and reads every pair's SL,
/// `samples` times each. The session ends (both processes killed by PID) before this returns.
///
/// Without a policy of the setup's own, both SMs read the one OpenSM's harness gives it: its
/// default level's SL would otherwise decide OpenSM's paths alone.
fn sls_of(
    kind: SmKind,
    fabric: &Fabric,
    setup: &SmSetup,
    dir: &TestDir,
    samples: usize,
) -> PathSls {
    let tools = SaTools::require();
    let what = format!("{} with {kind}", fabric.name);
    let setup = SmSetup {
        policy: setup.policy.or(Some(opensm::QOS_POLICY)),
        ..*setup
    };
    let session = Session::start(kind, &tools, fabric, &setup, &dir.subdir(&kind.to_string()))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    path_sls(&session, samples).unwrap_or_else(|e| panic!("{what}: {e}\n{}", session.sm_output()))
}

/// One pair as a failure line shows it.
fn pair_line(pair: &Pair, detail: &str) -> String {
    format!(
        "  {} -> {}: {detail}\n",
        port_name(&pair.0),
        port_name(&pair.1)
    )
}

/// Panics with `differing` (at most [`SHOWN`] of them) if any, out of `total` pairs.
fn assert_no_differences(what: &str, total: usize, differing: &[String]) {
    if differing.is_empty() {
        return;
    }
    let mut message = format!(
        "{what}: {} of {total} pairs differ; the first:\n",
        differing.len()
    );
    for line in differing.iter().take(SHOWN) {
        message.push_str(line);
    }
    panic!("{message}");
}

/// Requires both SMs to see the same endports: a pair only one side has is a harness or LID
/// problem, not an SL one.
fn assert_same_pairs(what: &str, ours: &PathSls, oracle: &PathSls) {
    assert!(
        ours.keys().eq(oracle.keys()),
        "{what}: the SMs gave LIDs to different endports ({} pairs against OpenSM's {})",
        ours.len(),
        oracle.len()
    );
}

/// `ibqos sm` and OpenSM, each on a fresh ibsim of `fabric` with `setup`, answer every pair's
/// PathRecord with the same SL (or both with no record). Returns the SLs, for tests that check
/// more (for example that the policy's SL was kept).
pub fn path_sls_match_opensm(fabric: &Fabric, setup: &SmSetup, dir: &TestDir) -> PathSls {
    let what = format!("{} with {:?}", fabric.name, setup.options);
    let oracle = sls_of(SmKind::OpenSm, fabric, setup, dir, 1);
    let ours = sls_of(SmKind::Ibqos, fabric, setup, dir, 1);
    assert_same_pairs(&what, &ours, &oracle);
    let differing: Vec<String> = oracle
        .iter()
        .filter(|(pair, sls)| ours[*pair] != **sls)
        .map(|(pair, sls)| {
            pair_line(
                pair,
                &format!("ibqos {:?}, OpenSM {:?}", ours[pair][0], sls[0]),
            )
        })
        .collect();
    assert_no_differences(&what, oracle.len(), &differing);
    ours
}

/// `ibqos sm` and OpenSM, each on a fresh ibsim of `fabric` with `setup`, answer every pair
/// with an SL in `range(pair)`: ibqos once, OpenSM [`RANDOM_SAMPLES`] times. Where `range` has
/// nothing for a pair (`None`), both must answer with no record. Returns ibqos's SLs.
pub fn path_sls_within(
    fabric: &Fabric,
    setup: &SmSetup,
    dir: &TestDir,
    range: impl Fn(&Pair) -> Option<RangeInclusive<u8>>,
) -> PathSls {
    let what = format!("{} with {:?}", fabric.name, setup.options);
    let oracle = sls_of(SmKind::OpenSm, fabric, setup, dir, RANDOM_SAMPLES);
    let ours = sls_of(SmKind::Ibqos, fabric, setup, dir, 1);
    assert_same_pairs(&what, &ours, &oracle);
    let mut differing = Vec::new();
    for (pair, samples) in &oracle {
        let range = range(pair);
        let fits = |sl: &Option<u8>| match (&range, sl) {
            (Some(range), Some(sl)) => range.contains(sl),
            (None, None) => true,
            _ => false,
        };
        if !(fits(&ours[pair][0]) && samples.iter().all(fits)) {
            let mut detail = format!("ibqos {:?}, OpenSM {samples:?}, ", ours[pair][0]);
            match &range {
                Some(range) => write!(detail, "range {range:?}"),
                None => write!(detail, "no record expected"),
            }
            .unwrap();
            differing.push(pair_line(pair, &detail));
        }
    }
    assert_no_differences(&what, oracle.len(), &differing);
    ours
}
