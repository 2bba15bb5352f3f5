//! The lossless-Ethernet sections of a traffic file (`[pfc]`, `[buffer]`, `[ets]`, `[host]`,
//! `[[storm]]`, `[ecn]`, `[dcqcn]`), and where in the file a problem with one of them is.

use std::ops::Range;

use toml::Spanned;

use super::{EthernetError, EthernetSettings, RawTraffic, Reader, TrafficError, TrafficErrorKind};
use crate::ethernet::dcqcn::{DcqcnConfigError, EcnConfigError};
use crate::ethernet::ets::EtsError;
use crate::ethernet::pfc::{PauseStormConfig, PfcError};
use crate::ethernet::shared_buffer::{BufferError, Region};

impl Reader<'_> {
    /// A credit run must not carry the Ethernet sections.
    pub(super) fn no_ethernet_sections(&self, raw: &RawTraffic) -> Result<(), TrafficError> {
        let sections = [
            ("[pfc]", raw.pfc.as_ref().map(Spanned::span)),
            ("[buffer]", raw.buffer.as_ref().map(Spanned::span)),
            ("[ets]", raw.ets.as_ref().map(Spanned::span)),
            ("[host]", raw.host.as_ref().map(Spanned::span)),
            ("[[storm]]", raw.storm.first().map(Spanned::span)),
            ("[dcqcn]", raw.dcqcn.as_ref().map(Spanned::span)),
            ("[ecn]", raw.ecn.as_ref().map(Spanned::span)),
            ("gbps", raw.link.gbps.as_ref().map(Spanned::span)),
        ];
        match sections
            .into_iter()
            .find_map(|(key, span)| Some((key, span?)))
        {
            Some((key, span)) => Err(self.wrong_key(span, key, false)),
            None => Ok(()),
        }
    }

    /// A `pfc` run's sections, each checked, each problem at the key it is about.
    pub(super) fn ethernet(&self, raw: &RawTraffic) -> Result<EthernetSettings, TrafficError> {
        let gbps = match &raw.link.gbps {
            None => 100.0,
            Some(g) => {
                let v = *g.get_ref();
                // Below 1 b/s a rate rounds to nothing.
                if !(v.is_finite() && (1e-9..=1e6).contains(&v)) {
                    return Err(self.error(g.span(), TrafficErrorKind::BadGbps(v)));
                }
                v
            }
        };
        fn section<T: Clone + Default>(value: &Option<Spanned<T>>) -> T {
            value
                .as_ref()
                .map_or_else(T::default, |v| v.get_ref().clone())
        }
        let pfc = section(&raw.pfc);
        let buffer = section(&raw.buffer);
        let ets = section(&raw.ets);
        let host = section(&raw.host);
        let invalid =
            |path: Vec<Step>, e| self.error(self.locate(&path), TrafficErrorKind::Ethernet(e));
        pfc.validate()
            .map_err(|e| invalid(pfc_path("pfc", &e), EthernetError::Pfc(e)))?;
        buffer
            .validate()
            .map_err(|e| invalid(buffer_path(&e), EthernetError::Buffer(e)))?;
        ets.validate()
            .map_err(|e| invalid(ets_path(&e), EthernetError::Ets(e)))?;
        host.validate().map_err(|e| {
            let key = e.key.clone();
            invalid(
                vec![Step::Key("host"), Step::Key(&key)],
                EthernetError::Host(e),
            )
        })?;
        let mut storms = Vec::new();
        for (i, spanned) in raw.storm.iter().enumerate() {
            let storm = spanned.get_ref();
            let pause: PauseStormConfig = toml::Value::Table(storm.pause.clone())
                .try_into()
                .map_err(|e: toml::de::Error| {
                    let message = e.message().trim();
                    // Read apart from the file, the error has no place of its own: it is the
                    // key it names (an unknown one), else the entry (a wrong type names none).
                    let span = message
                        .split('`')
                        .skip(1)
                        .step_by(2)
                        .find(|word| storm.pause.contains_key(*word))
                        .map_or(spanned.span(), |key| {
                            self.locate(&[Step::Key("storm"), Step::Index(i), Step::Key(key)])
                        });
                    self.error(
                        span,
                        TrafficErrorKind::Toml(format!("[[storm]]: {message}")),
                    )
                })?;
            pause.validate().map_err(|e| {
                let mut path = pfc_path("storm", &e);
                path.insert(1, Step::Index(i));
                invalid(path, EthernetError::Storm(e))
            })?;
            storms.push((self.name(&storm.host), pause));
        }
        let dcqcn = raw.dcqcn.as_ref().map(|d| *d.get_ref());
        let ecn = raw.ecn.as_ref().map(|e| *e.get_ref());
        if let Some(dcqcn) = &dcqcn {
            dcqcn.validate().map_err(|e| {
                let key = match &e {
                    DcqcnConfigError::OutOfRange { key, .. } => key,
                    DcqcnConfigError::NoIncrease => "DcqcnRpgTimeReset",
                };
                invalid(
                    vec![Step::Key("dcqcn"), Step::Key(key)],
                    EthernetError::Dcqcn(e),
                )
            })?;
        }
        if let Some(ecn) = &ecn {
            ecn.validate().map_err(|e| {
                let key = match &e {
                    EcnConfigError::KminAboveKmax { .. } => "kmin_bytes",
                    EcnConfigError::Pmax(_) => "pmax",
                };
                invalid(
                    vec![Step::Key("ecn"), Step::Key(key)],
                    EthernetError::Ecn(e),
                )
            })?;
        }
        if dcqcn.is_some() && ecn.is_none() {
            return Err(invalid(
                vec![Step::Key("dcqcn")],
                EthernetError::DcqcnWithoutEcn,
            ));
        }
        Ok(EthernetSettings {
            link_bps: (gbps * 1e9).round() as u64,
            pfc,
            buffer,
            ets,
            host,
            storms,
            dcqcn,
            ecn,
        })
    }

    /// The span of the key at `path`, or of the nearest part of it the file has (the whole
    /// file when it has none: a default that the rest of the file makes impossible).
    pub(super) fn locate(&self, path: &[Step]) -> Range<usize> {
        let Ok(doc) = toml::de::DeTable::parse(self.text) else {
            return 0..0;
        };
        let mut span = 0..0;
        let mut value: Option<&toml::de::DeValue<'_>> = None;
        let mut table = Some(doc.get_ref());
        for step in path {
            let next = match (step, table, value) {
                (Step::Key(key), Some(t), _) => t
                    .iter()
                    .find(|(k, _)| k.get_ref().as_ref() == *key)
                    .map(|(k, v)| (k.span(), v)),
                (Step::Index(i), _, Some(toml::de::DeValue::Array(items))) => {
                    items.get(*i).map(|v| (v.span(), v))
                }
                (Step::Where(field, wanted), _, Some(toml::de::DeValue::Array(items))) => items
                    .iter()
                    .find(|item| match item.get_ref() {
                        toml::de::DeValue::Table(t) => t.iter().any(|(k, v)| {
                            k.get_ref().as_ref() == *field
                                && self.text[v.span()].trim_matches('"') == wanted.as_str()
                        }),
                        _ => false,
                    })
                    .map(|v| (v.span(), v)),
                _ => None,
            };
            let Some((at, next)) = next else {
                break;
            };
            span = at;
            value = Some(next.get_ref());
            table = match next.get_ref() {
                toml::de::DeValue::Table(t) => Some(t),
                _ => None,
            };
        }
        span
    }
}

/// One step of a path to a key in the file, to place an error.
pub(super) enum Step<'a> {
    /// A table's key.
    Key(&'a str),
    /// An array's element by index.
    Index(usize),
    /// An array's element whose `field` is written as this (quotes aside).
    Where(&'static str, String),
}

/// Where a [`PfcError`] of section `section` (`pfc` or `storm`, the index to insert after it)
/// is.
fn pfc_path(section: &'static str, e: &PfcError) -> Vec<Step<'static>> {
    let key = match e {
        PfcError::BadPriority(_)
        | PfcError::DuplicatePriority(_)
        | PfcError::PrioritiesInGlobalMode
        | PfcError::NoStormPriority => "priorities",
        PfcError::ZeroPauseQuanta => "pause_quanta",
        PfcError::BadRefresh { .. } => "refresh_quanta",
        PfcError::BadTime { field, .. } => field,
        PfcError::StopBeforeStart { .. } => "stop_us",
        PfcError::BadStormInterval { .. } => "interval_quanta",
    };
    vec![Step::Key(section), Step::Key(key)]
}

/// Where a [`BufferError`] is: the pool, the region's entry, or the priority map.
fn buffer_path(e: &BufferError) -> Vec<Step<'static>> {
    let region = |name: crate::ethernet::shared_buffer::RegionName| {
        let (key, field, value) = match name.region {
            Region::IPortPg => ("pg", "pg", name.index.to_string()),
            Region::EPortTc => ("tc", "tc", name.index.to_string()),
            Region::IPort => ("iport", "pool", format!("iPool{}", name.index)),
            Region::EPort => ("eport", "pool", format!("ePool{}", name.index)),
        };
        vec![
            Step::Key("buffer"),
            Step::Key(key),
            Step::Where(field, value),
        ]
    };
    match e {
        BufferError::NoBuffer => vec![Step::Key("buffer"), Step::Key("shared_buffer_bytes")],
        BufferError::DuplicatePool(pool) | BufferError::PoolTooLarge { pool, .. } => vec![
            Step::Key("buffer"),
            Step::Key("pool"),
            Step::Where("name", pool.to_string()),
        ],
        BufferError::MissingRegion { region, .. } => {
            let map = match region.region {
                Region::EPortTc | Region::EPort => "priority_tc",
                Region::IPortPg | Region::IPort => "priority_pg",
            };
            vec![Step::Key("buffer"), Step::Key(map)]
        }
        BufferError::OutOfRange(name)
        | BufferError::DuplicateRegion(name)
        | BufferError::LosslessWithoutThresholds(name)
        | BufferError::ThresholdsOnLossy(name) => region(*name),
        BufferError::UnknownPool { region: name, .. }
        | BufferError::WrongDirection { region: name, .. }
        | BufferError::SharedModeMismatch { region: name, .. }
        | BufferError::PercentOfInfinitePool { region: name, .. }
        | BufferError::BadPercent { region: name, .. }
        | BufferError::BadThresholds { region: name, .. } => region(*name),
    }
}

/// Where an [`EtsError`] is: the QoS profile's key, the dot1p map, or the section.
fn ets_path(e: &EtsError) -> Vec<Step<'static>> {
    const PROFILES: [&str; 8] = ["qp1", "qp2", "qp3", "qp4", "qp5", "qp6", "qp7", "qp8"];
    let (qp, key) = match e {
        EtsError::WeightOutOfRange { qp, .. } => (Some(qp), "weight"),
        EtsError::NotAPercentage { qp, field, .. } => (Some(qp), *field),
        EtsError::ZeroMaxbw { qp } | EtsError::MaxbwBelowMinbw { qp, .. } => (Some(qp), "maxbw"),
        EtsError::ZeroPeakRate { qp }
        | EtsError::PeakBelowCommitted { qp, .. }
        | EtsError::MaximumTwice { qp } => (Some(qp), "peak_rate"),
        EtsError::MinimumTwice { qp } => (Some(qp), "committed_rate"),
        EtsError::MinbwOver100 { .. } => (None, "minbw"),
        EtsError::MissingProfile { .. } => (None, "dot1p"),
        EtsError::ZeroBurst => (None, "rate-burst-bytes"),
    };
    let mut path = vec![Step::Key("ets")];
    if let Some(qp) = qp {
        path.push(Step::Key(PROFILES[usize::from(qp.traffic_class())]));
    }
    path.push(Step::Key(key));
    path
}
