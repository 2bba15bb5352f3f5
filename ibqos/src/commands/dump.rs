//! `ibqos dump`: every port's QoS state of a live fabric, read by a survey (SubnGets only; the
//! survey itself is `ibqos_sm::engine::survey`), written in the format `ibqos fabric dump`
//! writes of an emulated fabric.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ibqos_congestion::CongestionReader;
use ibqos_exchange::scheduler::SchedulerConfig;
use ibqos_fabric::dump::FabricDump;
use ibqos_opensm::Settings;
use ibqos_sm::config::scheduler_config;
use ibqos_sm::engine::survey::Survey;
use ibqos_transport::driver::drive;
use ibqos_transport::{FabricSpec, OpenOptions, Role, Transport, open};

use crate::cli::{DumpArgs, SurveyArgs};
use crate::commands::Outcome;

pub fn run(args: &DumpArgs) -> Result<Outcome> {
    let (surveyed, mut transport, config) = survey_open(
        &args.fabric,
        &args.survey,
        "no dump written, since it would lack what they read",
    )?;
    let mut dump = surveyed.dump();
    let congestion = if args.congestion {
        Some(read_congestion(transport.as_mut(), config, &mut dump)?)
    } else {
        None
    };
    let json = dump.to_json();
    match &args.output {
        Some(path) => std::fs::write(path, json)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().lock().write_all(json.as_bytes())?,
    }
    let ports: usize = dump.nodes.values().map(|n| n.ports.len()).sum();
    eprint!(
        "ibqos dump: {} nodes, {ports} ports of {} read with {} SubnGets",
        dump.nodes.len(),
        args.fabric,
        surveyed.stats().total_sent()
    );
    match congestion {
        Some(gets) => {
            let agents = dump
                .nodes
                .values()
                .flat_map(|node| node.ports.values())
                .filter(|port| port.congestion.is_some())
                .count();
            eprintln!(" and {gets} congestion control Gets ({agents} agents read)");
        }
        None => eprintln!(),
    }
    Ok(Outcome::Success)
}

/// Reads every congestion control agent of `dump`'s fabric into it, returning the Gets sent. A
/// port whose agent gave no usable answer keeps no congestion section, and a warning says why.
fn read_congestion(
    transport: &mut dyn Transport,
    config: SchedulerConfig,
    dump: &mut FabricDump,
) -> Result<u64> {
    let mut reader = CongestionReader::start(dump, config);
    drive(
        transport,
        &mut reader,
        |r: &mut CongestionReader| r.is_done().then_some(()),
        &|| false,
    )?;
    for unread in reader.unread() {
        eprintln!("warning: {unread}; its congestion settings are not in the dump");
    }
    reader.fill(dump);
    Ok(reader.stats().total_sent())
}

/// The fabric dump in the file `path` (`ibqos dump`, `ibqos fabric dump`).
pub fn read(path: &Path) -> Result<FabricDump> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    FabricDump::from_json(&text).with_context(|| format!("{} is no fabric dump", path.display()))
}

/// The fabric dump in the file `path`, which must hold the switches' LFTs: the forwarding a
/// report on routes reads.
pub fn read_with_lfts(path: &Path) -> Result<FabricDump> {
    let dump = read(path)?;
    if !dump.has_lfts() {
        bail!(
            "{} holds no LFT: no SM had programmed the fabric, or an ibqos older than dumps \
             with LFTs wrote it",
            path.display()
        );
    }
    Ok(dump)
}

/// Surveys `fabric` to the end, sending Gets as `args` says. A Get with no usable answer after
/// its retries is an error, naming each, and the whole is one that ends with `consequence`.
pub fn survey(fabric: &FabricSpec, args: &SurveyArgs, consequence: &str) -> Result<Survey> {
    survey_open(fabric, args, consequence).map(|(surveyed, ..)| surveyed)
}

/// [`survey`], and the fabric still open with the scheduling it was read with.
fn survey_open(
    fabric: &FabricSpec,
    args: &SurveyArgs,
    consequence: &str,
) -> Result<(Survey, Box<dyn Transport>, SchedulerConfig)> {
    // The SM's own scheduling, OpenSM's defaults unless told otherwise.
    let defaults = scheduler_config(&Settings::default());
    let config = SchedulerConfig {
        max_outstanding: args.max_wire_smps.map_or(defaults.max_outstanding, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        }),
        timeout: args
            .timeout_ms
            .map_or(defaults.timeout, Duration::from_millis),
        retries: args.retries.unwrap_or(defaults.retries),
    };
    let options = OpenOptions {
        role: Role::Client,
        response_timeout: config.response_timeout(),
    };
    let mut transport =
        open(fabric, &options).with_context(|| format!("cannot open fabric {fabric}"))?;
    let mut surveyed = Survey::start(config);
    drive(
        transport.as_mut(),
        &mut surveyed,
        |s: &mut Survey| s.is_done().then_some(()),
        &|| false,
    )?;
    let unread = surveyed.unread();
    if !unread.is_empty() {
        for get in unread {
            eprintln!("error: {get}");
        }
        bail!(
            "{} Get(s) of {fabric} got no usable answer: {consequence}",
            unread.len()
        );
    }
    Ok((surveyed, transport, config))
}
