//! SVG charts of a report: each VL's share of a link over time, and the latency CDF per SL (on
//! Ethernet: each traffic class's share, and the CDF per priority; with DCQCN, each flow's
//! DCQCN rate over time, and the switch buffers' occupancy over time).

use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::report::{BufferOccupancy, CctiTimeline, DcqcnRates, Report, Timeline};

/// Why the charts could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot create {}: {error}", dir.display())]
    CreateDir { dir: PathBuf, error: std::io::Error },
    #[error("{}: {reason}", path.display())]
    Draw { path: PathBuf, reason: String },
    #[error("nothing to plot: no link carried traffic")]
    NothingToPlot,
}

/// Writes `share_per_vl.svg`, `latency_cdf.svg`, on Ethernet `buffer_occupancy.svg` and, with
/// DCQCN, `dcqcn_rate.svg`, with InfiniBand congestion control `ccti.svg`, into `dir`; returns
/// their paths.
pub fn write_plots(dir: &Path, report: &Report) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|error| PlotError::CreateDir {
        dir: dir.to_owned(),
        error,
    })?;
    let drawn = |path: &Path, result: PlotResult| {
        result.map_err(|e| PlotError::Draw {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    };
    let mut written = Vec::new();
    if let Some(timeline) = &report.timeline {
        let path = dir.join("share_per_vl.svg");
        drawn(&path, plot_shares(&path, report, timeline))?;
        written.push(path);
    }
    if let Some(rates) = &report.dcqcn_rates {
        let path = dir.join("dcqcn_rate.svg");
        drawn(&path, plot_dcqcn_rates(&path, report, rates))?;
        written.push(path);
    }
    if let Some(ccti) = &report.ccti {
        let path = dir.join("ccti.svg");
        drawn(&path, plot_ccti(&path, report, ccti))?;
        written.push(path);
    }
    if let Some(occupancy) = &report.buffer_occupancy {
        let path = dir.join("buffer_occupancy.svg");
        drawn(&path, plot_occupancy(&path, report, occupancy))?;
        written.push(path);
    }
    if report.sl_latency.iter().any(|(_, h)| h.count() > 0) {
        let path = dir.join("latency_cdf.svg");
        drawn(&path, plot_cdf(&path, report))?;
        written.push(path);
    }
    if written.is_empty() {
        return Err(PlotError::NothingToPlot);
    }
    Ok(written)
}

type PlotResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// A line per series over the run's time, `y` from 0 to `y_max`, with a legend.
struct TimeChart<'a> {
    caption: &'a str,
    end_us: f64,
    y_max: f64,
    y_desc: &'a str,
}

impl TimeChart<'_> {
    /// Draws `series` (a label and its (time in us, value) points each) into `path`.
    fn draw(
        &self,
        path: &Path,
        series: impl Iterator<Item = (String, Vec<(f64, f64)>)>,
    ) -> PlotResult {
        let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(self.caption, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..self.end_us, 0f64..self.y_max)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .x_desc("time (us)")
            .y_desc(self.y_desc)
            .draw()?;
        for (i, (label, points)) in series.enumerate() {
            let color = series_color(i);
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }
}

/// Bandwidth share per VL over time on the busiest link: each VL's bytes in an interval over
/// what the link could carry in it.
fn plot_shares(path: &Path, report: &Report, timeline: &Timeline) -> PlotResult {
    let link = report
        .links
        .iter()
        .find(|l| l.from == timeline.from && l.to == timeline.to)
        .ok_or("the busiest link is missing from the report")?;
    let capacity = link.gbps * timeline.interval_ns as f64 / 8.0;
    let (lanes, lane) = match link.ethernet {
        Some(_) => ("traffic class", "TC"),
        None => ("VL", "VL"),
    };
    let interval_us = timeline.interval_ns as f64 / 1e3;
    let caption = format!(
        "Bandwidth share per {lanes}, {} -> {}",
        timeline.from, timeline.to
    );
    let chart = TimeChart {
        caption: &caption,
        end_us: report.duration_ns as f64 / 1e3,
        y_max: 1.05,
        y_desc: "share of link bandwidth",
    };
    chart.draw(
        path,
        timeline.vls.iter().map(|(vl, series)| {
            let points = series
                .iter()
                .enumerate()
                .map(|(k, bytes)| ((k as f64 + 0.5) * interval_us, *bytes as f64 / capacity))
                .collect();
            (format!("{lane} {vl}"), points)
        }),
    )
}

/// Each DCQCN flow's rate at the end of each timeline interval, against the line rate.
fn plot_dcqcn_rates(path: &Path, report: &Report, rates: &DcqcnRates) -> PlotResult {
    let line_gbps = report.links.first().map_or(1.0, |l| l.gbps);
    let chart = TimeChart {
        caption: "DCQCN rate per flow",
        end_us: report.duration_ns as f64 / 1e3,
        y_max: line_gbps * 1.05,
        y_desc: "rate (Gb/s)",
    };
    chart.draw(
        path,
        rates.flows.iter().map(|(flow, series)| {
            let points = interval_points(series, rates.interval_ns, |gbps| gbps);
            (flow.clone(), points)
        }),
    )
}

/// Each flow's CCTI under InfiniBand congestion control at the end of each timeline interval.
fn plot_ccti(path: &Path, report: &Report, ccti: &CctiTimeline) -> PlotResult {
    let highest = ccti.flows.iter().flat_map(|(_, s)| s).max().copied();
    let chart = TimeChart {
        caption: "Congestion control table index per flow",
        end_us: report.duration_ns as f64 / 1e3,
        y_max: f64::from(highest.unwrap_or(0).max(1)) * 1.05,
        y_desc: "CCTI",
    };
    chart.draw(
        path,
        ccti.flows.iter().map(|(flow, series)| {
            let points = interval_points(series, ccti.interval_ns, f64::from);
            (flow.clone(), points)
        }),
    )
}

/// A series of values at the end of each timeline interval (of `interval_ns`) as points at
/// those times in microseconds.
fn interval_points<T: Copy>(
    values: &[T],
    interval_ns: u64,
    y: impl Fn(T) -> f64,
) -> Vec<(f64, f64)> {
    let interval_us = interval_ns as f64 / 1e3;
    (values.iter().enumerate())
        .map(|(k, &value)| ((k as f64 + 1.0) * interval_us, y(value)))
        .collect()
}

/// The regions drawn beside the pools in the occupancy chart: the highest peaks, so that a
/// fabric of thousands of ports stays readable.
const OCCUPANCY_REGIONS: usize = 8;

/// Every switch pool's shared bytes, and the [`OCCUPANCY_REGIONS`] regions with the highest
/// peaks, at the end of each timeline interval.
fn plot_occupancy(path: &Path, report: &Report, occupancy: &BufferOccupancy) -> PlotResult {
    let (pools, mut regions): (Vec<_>, Vec<_>) =
        occupancy.series.iter().partition(|s| s.port.is_none());
    let peak = |bytes: &[u64]| bytes.iter().copied().max().unwrap_or(0);
    // Stable: equal peaks keep the report's order.
    regions.sort_by_key(|s| std::cmp::Reverse(peak(&s.bytes)));
    regions.truncate(OCCUPANCY_REGIONS);
    let shown: Vec<_> = pools.into_iter().chain(regions).collect();
    let kb_max = shown.iter().map(|s| peak(&s.bytes)).max().unwrap_or(0) as f64 / 1e3;
    let chart = TimeChart {
        caption: "Switch buffer occupancy",
        end_us: report.duration_ns as f64 / 1e3,
        y_max: kb_max.max(1.0) * 1.05,
        y_desc: "occupancy (KB)",
    };
    chart.draw(
        path,
        shown.into_iter().map(|s| {
            let points =
                interval_points(&s.bytes, occupancy.interval_ns, |bytes| bytes as f64 / 1e3);
            let label = match s.port {
                Some(port) => format!("{}[{port}] {}", s.switch, s.region),
                None => format!("{} {}", s.switch, s.region),
            };
            (label, points)
        }),
    )
}

/// Latency CDF per SL (log time axis).
fn plot_cdf(path: &Path, report: &Report) -> PlotResult {
    let max = report
        .sl_latency
        .iter()
        .flat_map(|(_, h)| h.cdf())
        .map(|(v, _)| v)
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let min = report
        .sl_latency
        .iter()
        .flat_map(|(_, h)| h.cdf())
        .map(|(v, _)| v)
        .min()
        .unwrap_or(1)
        .max(1) as f64;
    // On Ethernet a flow's class is its priority.
    let class = if report.links.iter().any(|l| l.ethernet.is_some()) {
        "priority"
    } else {
        "SL"
    };
    // plotters' own log axis labels nothing below its first power of ten and each power of ten
    // twice; these ticks label both ends and every step between.
    let (x_range, ticks) = log_axis(min, max);
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Latency CDF per {class}"), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.log_scale().with_key_points(ticks), 0f64..1.02f64)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|v| compact_ns(*v))
        .light_line_style(WHITE)
        .x_desc("latency (ns, log scale)")
        .y_desc("fraction of packets")
        .draw()?;
    for (i, (sl, histogram)) in report
        .sl_latency
        .iter()
        .filter(|(_, h)| h.count() > 0)
        .enumerate()
    {
        let color = series_color(i);
        // A step line: each fraction holds until the next bucket.
        let mut points = Vec::new();
        let mut last = 0.0;
        for (value, fraction) in histogram.cdf() {
            let x = (value as f64).max(min);
            points.push((x, last));
            points.push((x, fraction));
            last = fraction;
        }
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(format!("{class} {sl}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The colours of the series, in order: Palette99's without its pale ones (yellow, cyan, lime,
/// pink, lavender, beige, mint, apricot), which hardly show as a line on white.
const SERIES_COLORS: [RGBColor; 13] = [
    RGBColor(230, 25, 75),
    RGBColor(60, 180, 75),
    RGBColor(0, 130, 200),
    RGBColor(245, 130, 48),
    RGBColor(145, 30, 180),
    RGBColor(240, 50, 230),
    RGBColor(0, 128, 128),
    RGBColor(170, 110, 40),
    RGBColor(128, 0, 0),
    RGBColor(128, 128, 0),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 128),
    RGBColor(0, 0, 0),
];

fn series_color(index: usize) -> RGBAColor {
    SERIES_COLORS[index % SERIES_COLORS.len()].to_rgba()
}

/// A log axis over `low..=high` (both above 0): it runs from the round value just below `low`
/// to the one just above `high`, with a tick at every round value between. Round values are
/// 1 to 9 times a power of ten when the data span at most a decade, 1, 2, 3 and 5 times up to
/// four, 1 and 3 times up to eight, and powers of ten beyond.
fn log_axis(low: f64, high: f64) -> (Range<f64>, Vec<f64>) {
    let decades = (high / low).log10();
    let mantissas: &[f64] = match decades {
        d if d <= 1.0 => &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        d if d <= 4.0 => &[1.0, 2.0, 3.0, 5.0],
        d if d <= 8.0 => &[1.0, 3.0],
        _ => &[1.0],
    };
    let first = low.log10().floor() as i32 - 1;
    let last = high.log10().ceil() as i32 + 1;
    let round: Vec<f64> = (first..=last)
        .flat_map(|exponent| mantissas.iter().map(move |m| m * 10f64.powi(exponent)))
        .collect();
    let start = round
        .iter()
        .rev()
        .find(|&&v| v < low)
        .copied()
        .unwrap_or(low);
    let end = round.iter().find(|&&v| v > high).copied().unwrap_or(high);
    let ticks = round
        .into_iter()
        .filter(|v| (start..=end).contains(v))
        .collect();
    (start..end, ticks)
}

/// A latency axis label that stays short on a log axis: 900, 2k, 30k, 1.5M.
fn compact_ns(ns: f64) -> String {
    match ns {
        n if n >= 1e6 => format!("{}M", tick_label(n / 1e6)),
        n if n >= 1e3 => format!("{}k", tick_label(n / 1e3)),
        n => tick_label(n),
    }
}

/// A tick's value with no more decimals than it has (to a millionth): 50, 0.1, 2.5.
fn tick_label(value: f64) -> String {
    format!("{}", (value * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tick once, ascending, and both ends labelled: the lowest latency is never left of
    /// the first tick, nor the highest right of the last.
    #[test]
    fn a_log_axis_is_labelled_from_below_its_lowest_value_to_above_its_highest() {
        for (low, high) in [
            (2200.0, 132_460.0),
            (383.0, 63_408.0),
            (700.0, 1744.0),
            (100.0, 100.0),
            (1.0, 5e9),
            (2000.0, 3000.0),
        ] {
            let (range, ticks) = log_axis(low, high);
            assert!(
                range.start < low && range.end > high,
                "{low}..{high}: {range:?}"
            );
            assert_eq!(ticks.first(), Some(&range.start));
            assert_eq!(ticks.last(), Some(&range.end));
            assert!(ticks.windows(2).all(|w| w[0] < w[1]), "{ticks:?}");
            let labels: Vec<String> = ticks.iter().map(|&t| compact_ns(t)).collect();
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(unique, labels);
        }
        // A class at 2 to 3 us among others up to 132 us: 2k and 3k are labelled.
        let (_, ticks) = log_axis(2200.0, 132_460.0);
        let labels: Vec<String> = ticks.iter().map(|&t| compact_ns(t)).collect();
        assert_eq!(
            labels,
            ["2k", "3k", "5k", "10k", "20k", "30k", "50k", "100k", "200k"]
        );
        let (_, ticks) = log_axis(700.0, 1744.0);
        let labels: Vec<String> = ticks.iter().map(|&t| compact_ns(t)).collect();
        assert_eq!(labels, ["600", "700", "800", "900", "1k", "2k"]);
    }
}
