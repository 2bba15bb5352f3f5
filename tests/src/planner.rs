//! `ibqos plan`: what ibqos would program on a port, as JSON.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::process::{command_line, run_bounded};
use crate::smpquery::VlArbEntry;
use crate::{Error, Result};

const PLAN_TIMEOUT: Duration = Duration::from_secs(60);

pub use ibqos_qos::PortClass;

/// What the planner needs to know about a port. VL values are counts of data VLs (1, 2, 4, 8
/// or 15), not PortInfo's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlanCaps {
    pub vls: u8,
    pub oper_vls: u8,
    pub low_cap: u8,
    pub high_cap: u8,
}

/// The planner's answer for one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub class: String,
    pub qos_enabled: bool,
    pub sl2vl: [u8; 16],
    pub vlarb_low: Vec<VlArbEntry>,
    pub vlarb_high: Vec<VlArbEntry>,
    pub vl_high_limit: u8,
    /// As printed; the oracle tests do not interpret them.
    pub diagnostics: Vec<Value>,
}

/// The `ibqos` binary under test, built if needed.
///
/// `$IBQOS_BIN` if set (to test another build). Otherwise this runs
/// `cargo build -p ibqos --bin ibqos` (once per test process) for the profile and target
/// directory of the running test, with ibqos's `mpi` feature when this crate has its own, and
/// returns `target/<profile>/ibqos`.
///
/// Why not `env!("CARGO_BIN_EXE_ibqos")`: cargo sets it only when compiling integration tests of
/// the package that owns the binary (ibqos), not for a package that depends on it. And why
/// build instead of just looking next to the test executable: `cargo test --workspace` does build
/// `target/<profile>/ibqos` (because ibqos has integration tests of its own), but
/// `cargo test -p ibqos-tests` does not, and would silently test a stale binary. The nested
/// build is a no-op when the binary is up to date; cargo releases its build lock while tests
/// run, so it does not deadlock.
pub fn ibqos_binary() -> Result<PathBuf> {
    static BINARY: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BINARY
        .get_or_init(|| build_ibqos().map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::new)
}

/// Building with clap and friends from scratch on a loaded machine can take minutes.
const BUILD_TIMEOUT: Duration = Duration::from_secs(1800);

fn build_ibqos() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("IBQOS_BIN") {
        return Ok(PathBuf::from(path));
    }
    // A test runs as <target-dir>/<profile>/deps/<name>-<hash>.
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(format!("cannot locate the test executable: {e}")))?;
    let profile_dir = exe.parent().and_then(Path::parent);
    let (profile_dir, target_dir, profile) = profile_dir
        .and_then(|dir| Some((dir, dir.parent()?, dir.file_name()?.to_str()?)))
        .ok_or_else(|| Error::new(format!("unexpected test executable path {}", exe.display())))?;
    // The dev profile's directory is called "debug"; every other profile's is its name.
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "-p", "ibqos", "--bin", "ibqos"])
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir);
    // The binary the outer build made, not one without MPI in its place.
    if cfg!(feature = "mpi") {
        cmd.args(["--features", "mpi"]);
    }
    let line = command_line(&cmd);
    run_bounded(&mut cmd, BUILD_TIMEOUT)?.success(&line)?;
    let binary = profile_dir.join("ibqos");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(Error::new(format!(
            "`{line}` succeeded but {} does not exist",
            binary.display()
        )))
    }
}

/// Runs `ibqos plan -F <config> --class <class> --vls .. --oper-vls .. --low-cap .. --high-cap ..
/// --json` and parses its output.
pub fn plan(ibqos: &Path, config: &Path, class: PortClass, caps: PlanCaps) -> Result<Plan> {
    let mut cmd = Command::new(ibqos);
    cmd.arg("plan")
        .arg("-F")
        .arg(config)
        .args(["--class", class.name()])
        .args(["--vls", &caps.vls.to_string()])
        .args(["--oper-vls", &caps.oper_vls.to_string()])
        .args(["--low-cap", &caps.low_cap.to_string()])
        .args(["--high-cap", &caps.high_cap.to_string()])
        .arg("--json");
    let line = command_line(&cmd);
    let out = run_bounded(&mut cmd, PLAN_TIMEOUT)?.success(&line)?;
    parse_plan(&out.stdout).map_err(|e| e.context(format!("output of `{line}`")))
}

/// Parses the JSON object `ibqos plan --json` prints.
pub fn parse_plan(text: &str) -> Result<Plan> {
    let v: Value = serde_json::from_str(text.trim())
        .map_err(|e| Error::new(format!("not JSON ({e}):\n{text}")))?;
    let field = |key: &str| {
        v.get(key)
            .ok_or_else(|| Error::new(format!("no \"{key}\" in {v}")))
    };
    let byte = |x: &Value, what: &str| -> Result<u8> {
        x.as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(|| Error::new(format!("{what} is not a byte: {x}")))
    };
    let array = |key: &str| -> Result<&Vec<Value>> {
        field(key)?
            .as_array()
            .ok_or_else(|| Error::new(format!("\"{key}\" is not an array in {v}")))
    };
    let entries = |key: &str| -> Result<Vec<VlArbEntry>> {
        array(key)?
            .iter()
            .map(|e| {
                Ok(VlArbEntry {
                    vl: byte(field_of(e, "vl")?, "vl")?,
                    weight: byte(field_of(e, "weight")?, "weight")?,
                })
            })
            .collect()
    };
    let sl2vl: Vec<u8> = array("sl2vl")?
        .iter()
        .map(|x| byte(x, "an sl2vl entry"))
        .collect::<Result<_>>()?;
    Ok(Plan {
        class: field("class")?
            .as_str()
            .ok_or_else(|| Error::new("\"class\" is not a string"))?
            .to_owned(),
        qos_enabled: field("qos_enabled")?
            .as_bool()
            .ok_or_else(|| Error::new("\"qos_enabled\" is not a boolean"))?,
        sl2vl: sl2vl
            .try_into()
            .map_err(|v: Vec<u8>| Error::new(format!("sl2vl has {} entries, not 16", v.len())))?,
        vlarb_low: entries("vlarb_low")?,
        vlarb_high: entries("vlarb_high")?,
        vl_high_limit: byte(field("vl_high_limit")?, "vl_high_limit")?,
        diagnostics: array("diagnostics")?.clone(),
    })
}

fn field_of<'v>(v: &'v Value, key: &str) -> Result<&'v Value> {
    v.get(key)
        .ok_or_else(|| Error::new(format!("no \"{key}\" in {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_shape() {
        let text = r#"{"class":"ca","qos_enabled":true,
            "sl2vl":[0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15],
            "vlarb_low":[{"vl":0,"weight":32},{"vl":1,"weight":32}],
            "vlarb_high":[{"vl":0,"weight":8}],
            "vl_high_limit":9,"diagnostics":[]}"#;
        let plan = parse_plan(text).unwrap();
        assert_eq!(plan.class, "ca");
        assert!(plan.qos_enabled);
        assert_eq!(plan.sl2vl[15], 15);
        assert_eq!(plan.vlarb_low[1], VlArbEntry { vl: 1, weight: 32 });
        assert_eq!(plan.vlarb_high.len(), 1);
        assert_eq!(plan.vl_high_limit, 9);
    }

    #[test]
    fn rejects_a_short_sl2vl_and_a_wide_weight() {
        let short = r#"{"class":"ca","qos_enabled":true,"sl2vl":[0,1],"vlarb_low":[],
            "vlarb_high":[],"vl_high_limit":0,"diagnostics":[]}"#;
        assert!(parse_plan(short).is_err());
        let wide = r#"{"class":"ca","qos_enabled":true,"sl2vl":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            "vlarb_low":[{"vl":0,"weight":256}],"vlarb_high":[],"vl_high_limit":0,
            "diagnostics":[]}"#;
        assert!(parse_plan(wide).is_err());
    }
}
