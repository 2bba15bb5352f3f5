//! `ibqos migrate`: opensm.conf to ibqos.toml and back.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ibqos_opensm::{Format, PolicyLoad, qos_policy, to_native_toml, to_opensm_conf};
use ibqos_qos::policy::QosPolicy;

use crate::cli::MigrateArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &MigrateArgs) -> Result<Outcome> {
    let loaded = load_config(&args.input)?;
    let mut report = Report::new(args.diagnostics.strict);
    report.extend(loaded.diagnostics);
    // A policy OpenSM would not load is not migrated: say why, as `check` does.
    report.extend(loaded.policy.iter().flat_map(PolicyLoad::diagnostics));
    // A line the reader could not use would silently vanish from the output: refuse until it
    // is fixed, before converting anything.
    if report.error_count() > 0 {
        eprint!("{}", report.render_human(true));
        eprintln!(
            "nothing written: {} has errors; fix them and run again",
            args.input.display()
        );
        return Ok(Outcome::Failed);
    }
    let (text, losses) = match loaded.format {
        Format::OpenSmConf => to_native_toml(&loaded.settings),
        Format::NativeToml => to_opensm_conf(&loaded.settings),
    };
    report.extend(losses);
    eprint!("{}", report.render_human(true));
    let outcome = Outcome::from_report(&report);
    if outcome == Outcome::Failed {
        eprintln!("nothing written: see the problems above");
        return Ok(outcome);
    }
    let policy = match (loaded.format, &loaded.settings.qos_policy) {
        (Format::NativeToml, Some(policy)) => Some(policy_output(args, policy)?),
        _ => None,
    };
    write_output(&args.output, args.force, &text)?;
    if let Some((path, text)) = policy {
        write_output(&path, args.force, &text)?;
        if let Some(named) = &loaded.settings.qos_policy_file {
            eprintln!("note: opensm.conf reads its policy from {named} (qos_policy_file)");
        }
    }
    Ok(outcome)
}

/// Where an ibqos.toml's policy goes as qos-policy.conf, and its text.
fn policy_output(args: &MigrateArgs, policy: &QosPolicy) -> Result<(PathBuf, String)> {
    let (text, losses) = qos_policy::to_policy_conf(policy);
    if !losses.is_empty() {
        let mut report = Report::new(args.diagnostics.strict);
        report.extend(losses);
        eprint!("{}", report.render_human(true));
    }
    let path = match &args.policy_output {
        Some(path) => path.clone(),
        None if args.output.as_os_str() == "-" => {
            bail!("the ibqos.toml has a [qos_policy]: name its file with --policy-output")
        }
        None => args
            .output
            .parent()
            .unwrap_or(Path::new("."))
            .join("qos-policy.conf"),
    };
    if path.exists() && !args.force {
        bail!("{} exists; pass --force to replace it", path.display());
    }
    Ok((path, text))
}

fn write_output(output: &Path, force: bool, text: &str) -> Result<()> {
    if output.as_os_str() == "-" {
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(());
    }
    if output.exists() && !force {
        bail!("{} exists; pass --force to replace it", output.display());
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
