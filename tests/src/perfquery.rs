//! perfquery (infiniband-diags) as an ibsim client: run from one node against the LIDs of
//! others, its output kept whole for comparison. ibccquery and ibccconfig run the same way.

use std::path::Path;
use std::time::Duration;

use crate::netfile::DrPath;
use crate::process::{command_line, run_bounded};
use crate::smpquery::{SmpQuery, Target};
use crate::{Error, Ibsim, Result, SimTools};

/// perfquery takes milliseconds; the limit only bounds a hang.
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// perfquery and smpquery at one node of one fabric, and the LIDs of the nodes it addresses.
#[derive(Debug)]
pub struct PerfQuery<'a> {
    tools: &'a SimTools,
    sim: &'a Ibsim,
    node: &'static str,
    /// Each target's name and LID.
    pub lids: Vec<(&'static str, u16)>,
}

impl<'a> PerfQuery<'a> {
    /// perfquery at `node`, with the LIDs of `targets` (each a name and its directed route from
    /// `node`) found by smpquery.
    pub fn new(
        tools: &'a SimTools,
        sim: &'a Ibsim,
        node: &'static str,
        targets: &[(&'static str, &[u8])],
    ) -> PerfQuery<'a> {
        let query = SmpQuery::new(tools, sim, node);
        let lids = targets
            .iter()
            .map(|&(name, path)| {
                let target = Target::Dr(DrPath(path.to_vec()));
                let info = query
                    .portinfo(&target, None)
                    .unwrap_or_else(|e| panic!("the LID of {name}: {e}"));
                (name, info.lid)
            })
            .collect();
        PerfQuery {
            tools,
            sim,
            node,
            lids,
        }
    }

    /// perfquery with `args`, target names replaced by their LIDs: its exit status, stdout and
    /// stderr, perfquery's own process ID left out.
    pub fn run(&self, args: &[&str]) -> String {
        self.run_tool(&self.tools.perfquery.path, args)
    }

    /// Another infiniband-diags tool at the same node (ibccquery, ibccconfig), as [`run`]
    /// runs perfquery.
    ///
    /// [`run`]: PerfQuery::run
    pub fn run_tool(&self, tool: &Path, args: &[&str]) -> String {
        let mut cmd = self.sim.client(tool, self.node);
        for arg in args {
            match self.lids.iter().find(|(name, _)| name == arg) {
                Some((_, lid)) => cmd.arg(lid.to_string()),
                None => cmd.arg(arg),
            };
        }
        let line = command_line(&cmd);
        let out = run_bounded(&mut cmd, QUERY_TIMEOUT).unwrap_or_else(|e| panic!("{line}: {e}"));
        format!(
            "{}\n--- stdout ---\n{}--- stderr ---\n{}",
            out.status,
            out.stdout,
            without_pids(&out.stderr)
        )
    }
}

/// `ibqos fabric serve NETFILE --attach NODE --preset-counters` with `presets` (entries made
/// by [`counter_preset`]), its files under `dir`.
pub fn serve_with_presets(
    tools: &SimTools,
    ibqos: &Path,
    netfile: &Path,
    attach: &str,
    dir: &Path,
    presets: &str,
) -> Result<Ibsim> {
    let file = dir.join("presets.toml");
    std::fs::write(&file, presets)
        .map_err(|e| Error::new(format!("cannot write {}: {e}", file.display())))?;
    let file = file.to_string_lossy();
    Ibsim::serve_with(
        tools,
        ibqos,
        netfile,
        attach,
        dir,
        &["--preset-counters", &file],
    )
}

/// One `[[counter]]` entry of a file for `ibqos fabric serve --preset-counters`.
pub fn counter_preset(node: &str, port: u8, attribute: &str, counter: &str, value: u64) -> String {
    format!(
        "[[counter]]\nnode = \"{node}\"\nport = {port}\nattribute = \"{attribute}\"\n\
         counter = \"{counter}\"\nvalue = {value}\n\n"
    )
}

/// `ibwarn: [12345] main: ...` with the process ID taken out: two runs never share it.
pub fn without_pids(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("ibwarn: [") {
            Some(rest) => {
                let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
                format!("ibwarn: [pid{rest}\n")
            }
            None => format!("{line}\n"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_process_id_is_left_out_of_ibwarn_lines() {
        let stderr = "ibwarn: [27455] main: Emulating AllPortSelect by iterating through all ports\n\
                      perfquery: iberror: failed: perfquery\n";
        assert_eq!(
            without_pids(stderr),
            "ibwarn: [pid] main: Emulating AllPortSelect by iterating through all ports\n\
             perfquery: iberror: failed: perfquery\n"
        );
    }
}
