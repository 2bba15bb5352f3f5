//! Where a configuration's QoS levels cannot survive its routing engines: the SLs the policy
//! and the partitions choose, replaced or cut by an engine's path SL; fewer data VLs than an
//! engine needs; SL-to-VL tables that put two of an engine's layers on one VL.
//!
//! Every engine of `routing_engine` that may route is checked: the one that routes depends on
//! the fabric (an engine short of VLs passes to the next).

use std::collections::BTreeSet;

use ibqos_fabric::routing::{EngineList, Listed, PolicySl, TORUS_FEATURES, TORUS_ROUTES};
use ibqos_opensm::{Code, Diagnostic, Loaded, Location, Settings};
use ibqos_qos::{PortClass, VlCount};

/// An engine the list names, with where its name is written.
pub(super) struct Named {
    pub name: String,
    pub listed: Listed,
    pub location: Option<Location>,
}

/// Every name of `routing_engine`, each placed at its own column of the option's line.
pub(super) fn named_engines(loaded: &Loaded) -> Vec<Named> {
    let Some(value) = loaded.settings.sm.routing_engine.as_deref() else {
        return Vec::new();
    };
    let place = loaded.places.get("routing_engine");
    // The value's first byte in its line, to place each name at its own column.
    let value_at = place.and_then(|p| {
        let after = p.col.checked_sub(1)?;
        Some(after + p.line_text.get(after..)?.find(value)?)
    });
    EngineList::parse(Some(value))
        .entries()
        .iter()
        .map(|entry| Named {
            name: entry.name.clone(),
            listed: entry.listed,
            location: place.map(|p| match value_at {
                Some(at) => Location {
                    col: at + entry.offset + 1,
                    len: entry.name.len(),
                    ..p.clone()
                },
                None => p.clone(),
            }),
        })
        .collect()
}

/// The QoS-routing diagnostics of `loaded`, in no particular order: `ibqos check`'s and
/// `ibqos plan`'s.
pub(crate) fn diagnostics(loaded: &Loaded) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let vls = data_vls(settings);
    let mut found = Vec::new();
    for engine in named_engines(loaded) {
        if !matches!(engine.listed, Listed::Engine(_) | Listed::OpenSmOnly) {
            continue;
        }
        let fate = PolicySl::of(&engine.name, nue_layered(settings, vls));
        found.extend(chosen_sls_lost(loaded, &engine, fate));
        found.extend(short_of_vls(loaded, &engine, fate, vls));
        if fate == PolicySl::Layered {
            found.extend(merged_layers(loaded, &engine, vls));
        }
    }
    found
}

/// The data VLs the switch ports run at most, as `max_op_vls` caps them (0, which OpenSM
/// programs as no VL at all, counts as one).
fn data_vls(settings: &Settings) -> VlCount {
    settings.links.oper_vls_cap().unwrap_or(VlCount::One)
}

/// Whether Nue spends more than one VL: with qos on (OpenSM forces one layer with qos off,
/// `WRN NUE48`), `nue_max_num_vls` (default 1) other than 1, and more than one data VL on the
/// switch ports (Nue takes no more layers than the ports run, and on one it keeps the policy's
/// SL and routes any fabric, on its escape paths).
fn nue_layered(settings: &Settings, vls: VlCount) -> bool {
    settings.qos.enabled
        && settings.opensm_uint("nue_max_num_vls").unwrap_or(1) != 1
        && vls > VlCount::One
}

/// The SLs the policy's levels and qos-ulps and the partitions' `sl=` choose, where each is
/// chosen: only with qos on does OpenSM read them.
fn chosen_sls(settings: &Settings) -> (BTreeSet<u8>, Vec<String>) {
    let mut sls = BTreeSet::new();
    let mut sources = Vec::new();
    if !settings.qos.enabled {
        return (sls, sources);
    }
    if let Some(policy) = &settings.qos_policy {
        let before = sls.len();
        sls.extend(policy.qos_levels.iter().map(|level| level.sl));
        sls.extend(policy.ulps.iter().map(|ulp| ulp.sl));
        if sls.len() > before {
            let file = settings
                .qos_policy_file
                .as_deref()
                .unwrap_or("the QoS policy");
            sources.push(file.to_string());
        }
    }
    if let Some(partitions) = &settings.partitions {
        let own: Vec<u8> = partitions
            .partitions
            .iter()
            .map(|p| p.flags.sl)
            .filter(|&sl| sl != 0)
            .collect();
        if !own.is_empty() {
            sls.extend(own);
            sources.push("the partitions' `sl=`".to_string());
        }
    }
    (sls, sources)
}

/// SLs as a person reads them: `3, 5 and 7`.
fn sl_list(sls: &BTreeSet<u8>) -> String {
    let all: Vec<String> = sls.iter().map(u8::to_string).collect();
    match all.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => all.concat(),
    }
}

/// A warning at the engine's name when the SLs the configuration chooses do not reach the
/// fabric as chosen: replaced by its layers, or cut to bit 3 by torus-2QoS.
fn chosen_sls_lost(loaded: &Loaded, engine: &Named, fate: PolicySl) -> Option<Diagnostic> {
    let (sls, sources) = chosen_sls(&loaded.settings);
    let lost: BTreeSet<u8> = sls
        .iter()
        .copied()
        .filter(|&sl| fate.replaces(sl))
        .collect();
    if lost.is_empty() {
        return None;
    }
    let name = &engine.name;
    let message = match fate {
        PolicySl::Kept => return None,
        PolicySl::Layered => format!(
            "if {name} routes, every PathRecord carries its layer's SL: the SLs the \
             configuration chooses ({}) do not reach the fabric",
            sl_list(&sls)
        ),
        PolicySl::Bit3Kept => {
            let levels: BTreeSet<u8> = lost.iter().map(|sl| sl >> 3).collect();
            format!(
                "if {name} routes, it keeps only bit 3 of the SL the configuration chooses: \
                 SLs {} become its QoS level {}",
                sl_list(&lost),
                sl_list(&levels)
            )
        }
    };
    let help = format!(
        "the SLs are chosen by {}; a request for another SL than the engine's gets no path \
         (OpenSM ERR 1F2A)",
        sources.join(" and ")
    );
    Some(
        Diagnostic::warning(Code::EngineReplacesSl, message)
            .at(engine.location.clone())
            .with_help(help),
    )
}

/// A warning at `max_op_vls` (else at the engine's name) when the switch ports run fewer data
/// VLs than the engine needs to keep what it promises.
fn short_of_vls(loaded: &Loaded, engine: &Named, fate: PolicySl, vls: VlCount) -> Vec<Diagnostic> {
    let name = &engine.name;
    let have = vls.count();
    let shortages: Vec<String> = match fate {
        PolicySl::Bit3Kept => std::iter::once(&TORUS_ROUTES)
            .chain(&TORUS_FEATURES)
            .filter(|(needed, _)| have < *needed)
            .map(|(needed, what)| format!("below {needed} data VLs {what}"))
            .collect(),
        PolicySl::Layered if have == 1 => vec![
            "it has one VL layer, so it routes only a fabric without a credit loop and fails \
             on any other"
                .to_string(),
        ],
        _ => Vec::new(),
    };
    let location = loaded
        .places
        .get("max_op_vls")
        .cloned()
        .or_else(|| engine.location.clone());
    shortages
        .into_iter()
        .map(|what| {
            Diagnostic::warning(
                Code::EngineShortOfVls,
                format!(
                    "the switch ports run at most {have} data VL{} (`max_op_vls`); for {name}, \
                     {what}",
                    if have == 1 { "" } else { "s" }
                ),
            )
            .at(location.clone())
        })
        .collect()
}

/// The SLs `engine` may hand out as layers on ports of `vls` data VLs: DFSSSP and Nue spread
/// over all of them; LASH starts at `lash_start_vl`.
fn layer_sls(settings: &Settings, engine: &str, vls: VlCount) -> std::ops::Range<u8> {
    let first = match engine {
        "lash" => settings
            .opensm_uint("lash_start_vl")
            .map_or(0, |start| start.min(15) as u8),
        _ => 0,
    };
    first..vls.count()
}

/// A warning at each configured SL-to-VL table that maps two SLs the engine may hand out as
/// layers to one VL, once masked to the ports' VLs: OpenSM does not check it, and the merged
/// layers can close the credit loop the engine broke.
fn merged_layers(loaded: &Loaded, engine: &Named, vls: VlCount) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let layers = layer_sls(settings, &engine.name, vls);
    let classes = [None]
        .into_iter()
        .chain(PortClass::ALL.into_iter().map(Some));
    classes
        .filter_map(|class| {
            let (set, key) = match class {
                None => (&settings.qos.generic, "qos_sl2vl".to_string()),
                Some(c) => (settings.qos.set(c), format!("qos_{}_sl2vl", c.name())),
            };
            let table = set.sl2vl?.masked(vls.vl_mask());
            let (first, second) = layers.clone().find_map(|a| {
                let b = (a + 1..layers.end)
                    .find(|&b| table.0[usize::from(b)] == table.0[usize::from(a)])?;
                Some((a, b))
            })?;
            let vl = table.0[usize::from(first)].get();
            let message = format!(
                "`{key}` maps SLs {first} and {second} to VL {vl} on ports of {} data VLs: they \
                 are two of {}'s layers, merged, and a credit loop it broke can close again",
                vls.count(),
                engine.name
            );
            Some(
                Diagnostic::warning(Code::Sl2vlMergesLayers, message)
                    .at(loaded.places.get(&key).cloned())
                    .with_help(format!(
                        "{} needs SL i on VL i for its SLs {}-{}",
                        engine.name,
                        layers.start,
                        layers.end.saturating_sub(1)
                    )),
            )
        })
        .collect()
}
