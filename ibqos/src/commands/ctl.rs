//! `ibqos ctl`: one request to a running `ibqos sm` over its control socket, its answer on
//! standard output.

use std::io::Write as _;

use anyhow::Result;

use crate::cli::{CtlArgs, CtlRequest, PerfRequest};
use crate::commands::Outcome;
use crate::control::{self, Command, PerfCommand};

pub fn run(args: &CtlArgs) -> Result<Outcome> {
    let command = match &args.request {
        CtlRequest::Status { json } => Command::Status { json: *json },
        CtlRequest::Sweep => Command::Sweep,
        CtlRequest::Reload => Command::Reload,
        CtlRequest::Dump => Command::Dump,
        CtlRequest::Loglevel { flags } => Command::LogLevel(*flags),
        CtlRequest::Perf { request } => Command::Perf(match request {
            None => PerfCommand::Status,
            Some(PerfRequest::Sweep) => PerfCommand::Sweep,
            Some(PerfRequest::Dump { format }) => PerfCommand::Dump {
                machine: format.is_some(),
            },
            Some(PerfRequest::Counters { node }) => PerfCommand::Counters(node.clone()),
            Some(PerfRequest::Errors { node }) => PerfCommand::Errors(node.clone()),
            Some(PerfRequest::Enable) => PerfCommand::Enable(true),
            Some(PerfRequest::Disable) => PerfCommand::Enable(false),
            Some(PerfRequest::ClearCounters) => PerfCommand::ClearCounters,
            Some(PerfRequest::ClearInactive) => PerfCommand::ClearInactive,
            Some(PerfRequest::SetRmNodes) => PerfCommand::RemoveNodes(true),
            Some(PerfRequest::ClearRmNodes) => PerfCommand::RemoveNodes(false),
            Some(PerfRequest::SetQueryCpi) => PerfCommand::QueryCpi(true),
            Some(PerfRequest::ClearQueryCpi) => PerfCommand::QueryCpi(false),
            Some(PerfRequest::DumpRedir { node }) => PerfCommand::Redirections(node.clone()),
            Some(PerfRequest::ClearRedir { node }) => PerfCommand::ClearRedirections(node.clone()),
            Some(PerfRequest::SweepTime { seconds }) => PerfCommand::SweepTime(seconds.clone()),
        }),
        CtlRequest::QosReport { json } => Command::QosReport { json: *json },
    };
    let socket = match &args.socket {
        Some(path) => path.clone(),
        None => control::find_socket()?,
    };
    let answer = control::ask(&socket, &command)?;
    std::io::stdout().lock().write_all(answer.as_bytes())?;
    Ok(Outcome::Success)
}
