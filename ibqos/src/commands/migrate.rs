//! `ibqos migrate`: opensm.conf to ibqos.toml and back.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ibqos_opensm::{
    Format, PartitionsLoad, PolicyLoad, partitions, qos_policy, to_native_toml, to_opensm_conf,
};

use crate::cli::MigrateArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &MigrateArgs) -> Result<Outcome> {
    let loaded = load_config(&args.input)?;
    let mut report = Report::new(args.diagnostics.strict);
    report.extend(loaded.diagnostics);
    // A policy or partitions file OpenSM would not load is not migrated: say why, as `check`
    // does.
    report.extend(loaded.policy.iter().flat_map(PolicyLoad::diagnostics));
    report.extend(
        loaded
            .partitions
            .iter()
            .flat_map(PartitionsLoad::diagnostics),
    );
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
    let mut settings = loaded.settings;
    // What ibqos.toml holds inline goes to the files opensm.conf names, beside it.
    let mut beside = Vec::new();
    let mut notes = Vec::new();
    if loaded.format == Format::NativeToml {
        if let Some(policy) = &settings.qos_policy {
            let (text, losses) = qos_policy::to_policy_conf(policy);
            report.extend(losses);
            let path = beside_output(
                args,
                args.policy_output.as_deref(),
                "--policy-output",
                "qos-policy.conf",
            )?;
            beside.push((path, text));
            if let Some(named) = &settings.qos_policy_file {
                notes.push(format!(
                    "opensm.conf reads its policy from {named} (qos_policy_file)"
                ));
            }
        }
        if let Some(p) = &settings.partitions {
            let (text, losses) = partitions::to_partitions_conf(p);
            report.extend(losses);
            let path = beside_output(
                args,
                args.partitions_output.as_deref(),
                "--partitions-output",
                "partitions.conf",
            )?;
            let named = std::path::absolute(&path)
                .ok()
                .and_then(|named| named.to_str().map(str::to_string))
                .with_context(|| format!("{} has no absolute UTF-8 name", path.display()))?;
            let key = "partition_config_file".to_string();
            if let Some(was) = settings.opensm.insert(key, named.clone())
                && was != named
            {
                notes.push(format!(
                    "partition_config_file names {named}, which holds [partitions], not {was}"
                ));
            }
            beside.push((path, text));
        }
    }
    let (text, losses) = match loaded.format {
        Format::OpenSmConf => to_native_toml(&settings),
        Format::NativeToml => to_opensm_conf(&settings),
    };
    report.extend(losses);
    eprint!("{}", report.render_human(true));
    let outcome = Outcome::from_report(&report);
    if outcome == Outcome::Failed {
        eprintln!("nothing written: see the problems above");
        return Ok(outcome);
    }
    write_output(&args.output, args.force, &text)?;
    for (path, text) in beside {
        write_output(&path, args.force, &text)?;
    }
    for note in notes {
        eprintln!("note: {note}");
    }
    Ok(outcome)
}

/// Where a file beside the opensm.conf goes: the path given with `option`, else `name` beside
/// OUTPUT. An existing file is not replaced without `--force`, and nothing is written then.
fn beside_output(
    args: &MigrateArgs,
    given: Option<&Path>,
    option: &str,
    name: &str,
) -> Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None if args.output.as_os_str() == "-" => {
            bail!("writing to standard output: name the {name} to write with {option}")
        }
        None => args.output.parent().unwrap_or(Path::new(".")).join(name),
    };
    if path.exists() && !args.force {
        bail!("{} exists; pass --force to replace it", path.display());
    }
    Ok(path)
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
