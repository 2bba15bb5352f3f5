//! `ibqos sm`'s Prometheus metrics: the registry, kept up to date from the manager's events and
//! counters, and its two ways out: a textfile for node_exporter's textfile collector, replaced
//! after each sweep, and a small HTTP endpoint serving `GET /metrics`.
//!
//! The SM itself keeps only plain numbers (`ibqos_sm::counters`, the sweep summaries); the
//! names, labels and encoding are all here. Counters the SM already adds up are mirrored into
//! the registry's counters by storing their value, so nothing is counted twice. Every label of
//! the SM's metrics is a small closed set (SM states, sweep modes, tables, port classes, node
//! types, port states, attributes, methods, trap numbers). The PerfMgr's per-VL and per-SL
//! counters (`perfmgr_lanes`) and the QoS conformance report's shares are the exceptions: they
//! are by port, so each is capped by `--metrics-lane-series-max`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ibqos_mad::{
    AttributeId, CcAttributeId, InvalidField, Method, NodeType, PortState, SmState, Status,
};
use ibqos_perfmgr::SweepState;
use ibqos_perfmgr::lanes::{DISCARD_CAUSES, Index, Lane, LaneDatabase};
use ibqos_qos::PortClass;
use ibqos_sm::counters::{Counters, Inventory, QosPorts};
use ibqos_sm::engine::sweep::{SetResult, SweepMode, Table};
use ibqos_sm::manager::{Event, Manager};
use ibqos_sm::qos_report::{QosReport, Verdict};
use ibqos_sm::summary::SweepSummary;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use tracing::{debug, info, warn};

use crate::cli::MetricsArgs;
use crate::files::{PUBLIC, write_atomically};

/// A metric's labels: names from a fixed list, values from small closed sets.
type Labels = Vec<(&'static str, String)>;

/// A metric family whose series are encoded in the order of their labels, the same at every
/// scrape: prometheus-client's `Family` keeps them in a `HashMap`, whose order changes as
/// series are added. Clones share the series, as `Family`'s do.
#[derive(Debug, Clone)]
struct SortedFamily<M> {
    series: Arc<RwLock<BTreeMap<Labels, M>>>,
    new_metric: fn() -> M,
}

impl<M: Clone + Default> Default for SortedFamily<M> {
    fn default() -> SortedFamily<M> {
        SortedFamily::new_with_constructor(M::default)
    }
}

impl<M: Clone> SortedFamily<M> {
    fn new_with_constructor(new_metric: fn() -> M) -> SortedFamily<M> {
        SortedFamily {
            series: Arc::default(),
            new_metric,
        }
    }

    /// The series of `labels`, made on first use. Metrics share their value between clones,
    /// so the one returned is the family's.
    fn get_or_create(&self, labels: &Labels) -> M {
        let known = self.series.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(metric) = known.get(labels) {
            return metric.clone();
        }
        drop(known);
        let mut series = self.series.write().unwrap_or_else(PoisonError::into_inner);
        series
            .entry(labels.clone())
            .or_insert_with(self.new_metric)
            .clone()
    }

    /// Every series gone.
    fn clear(&self) {
        self.series
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl<M: TypedMetric> TypedMetric for SortedFamily<M> {
    const TYPE: MetricType = M::TYPE;
}

impl<M: EncodeMetric + TypedMetric> EncodeMetric for SortedFamily<M> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
        for (labels, metric) in series.iter() {
            metric.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }

    fn is_empty(&self) -> bool {
        self.series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

/// What Prometheus asks for when it scrapes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// What everything else reads: node_exporter's textfile collector, promtool, a person with curl.
const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Sweep durations: a small fabric sweeps in milliseconds, a large one or a faulty one in
/// minutes.
const SWEEP_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The congestion control settings the read back checks, under their `table` label.
const CONGESTION_TABLES: [(CcAttributeId, &str); 3] = [
    (CcAttributeId::SwitchCongestionSetting, "cc_switch"),
    (CcAttributeId::CaCongestionSetting, "cc_ca"),
    (CcAttributeId::CongestionControlTable, "cct"),
];

/// A client that sends nothing for this long is dropped, so it cannot hold the endpoint.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of a request read: far more than a scraper's request line and headers.
const MAX_REQUEST: u64 = 16 * 1024;

/// The metrics of one SM, and where they go.
#[derive(Debug)]
pub struct Exporter {
    metrics: SmMetrics,
    lanes: LaneMetrics,
    qos_report: QosReportMetrics,
    registry: Arc<Registry>,
    textfile: Option<PathBuf>,
}

impl Exporter {
    /// The metrics `args` ask for: listening at once (so a port in use stops the SM before it
    /// touches the fabric), or `None` when neither a textfile nor an address is given.
    pub fn start(args: &MetricsArgs) -> Result<Option<Exporter>> {
        if args.metrics_textfile.is_none() && args.metrics_listen.is_none() {
            return Ok(None);
        }
        let mut registry = Registry::with_prefix("ibqos");
        let metrics = SmMetrics::register(&mut registry);
        let lanes = LaneMetrics::register(&mut registry, args.metrics_lane_series_max);
        let qos_report = QosReportMetrics::register(&mut registry, args.metrics_lane_series_max);
        // Last, as it always was: a reader knows a whole exposition by its last line.
        let start_time = Gauge::<f64, AtomicU64>::default();
        start_time.set(unix_now());
        registry.register_with_unit(
            "start_time",
            "When this SM started (Unix time)",
            Unit::Seconds,
            start_time,
        );
        let registry = Arc::new(registry);
        if let Some(address) = args.metrics_listen {
            serve(address, Arc::clone(&registry))?;
        }
        Ok(Some(Exporter {
            metrics,
            lanes,
            qos_report,
            registry,
            textfile: args.metrics_textfile.clone(),
        }))
    }

    /// Between events: what changes while a sweep runs, and the PerfMgr's per-VL and per-SL
    /// counters and the QoS conformance report once its sweep has read them all, every answer
    /// in (the textfile then replaced): a scrape never sees half a sweep.
    pub fn watch(&self, manager: &Manager) {
        let outstanding = i64::try_from(manager.smps_outstanding()).unwrap_or(i64::MAX);
        self.metrics.smps_outstanding.set(outstanding);
        if let Some(perfmgr) = manager.perfmgr()
            && perfmgr.sweep_state() == SweepState::Sleep
            && perfmgr.outstanding() == 0
            && self.lanes.export(perfmgr.lanes())
        {
            if let Some(report) = manager.qos_report() {
                self.qos_report.export(&report);
            }
            self.write_textfile();
        }
    }

    /// After each event of the manager: the metrics brought up to date, and after a sweep, a
    /// change of the SM's state (a standby sweeps no more) or the run's end the textfile
    /// replaced. An SM that ended is no longer master: the textfile outlives it and says so.
    pub fn on_event(&self, event: &Event, manager: &Manager) {
        let m = &self.metrics;
        m.mirror(manager.counters());
        self.watch(manager);
        match event {
            Event::StateChanged(change) => m.set_state(change.to),
            Event::SweepDone(summary) => {
                m.set_state(summary.sm_state);
                m.sweep_done(summary);
                if let Some(sweep) = manager.last_sweep() {
                    m.set_fabric(&Inventory::of(sweep), &QosPorts::of(sweep));
                }
                if let Some(loops) = manager.credit_loops() {
                    m.credit_loops.set(i64::try_from(loops).unwrap_or(i64::MAX));
                }
            }
            Event::Finished(_) => m.set_state(SmState::NotActive),
            _ => return,
        }
        self.write_textfile();
    }

    fn write_textfile(&self) {
        if let Some(path) = &self.textfile
            && let Err(error) = write_textfile(path, &self.registry)
        {
            warn!(path = %path.display(), %error, "cannot write the metrics textfile");
        }
    }
}

/// The PerfMgr's per-VL and per-SL counters: per attribute, a family of last readings and one
/// of rates, by node GUID, port and SL, VL or discard cause. A fabric of P ports can make
/// 2 x 116 x P series (16 per SL or VL attribute, 4 discard causes), so at most `max_series`
/// are exported: whole attributes of ports in node GUID and port order, up to the first that
/// does not fit.
#[derive(Debug)]
struct LaneMetrics {
    /// By lane, in the order of [`Lane::ALL`].
    families: [LaneFamilies; Lane::ALL.len()],
    left_out: Gauge,
    max_series: usize,
    /// The PerfMgr's [`LaneDatabase::changes`] at the last export.
    exported: AtomicU64,
}

/// One lane attribute's two families.
#[derive(Debug, Default)]
struct LaneFamilies {
    readings: SortedFamily<Gauge>,
    rates: SortedFamily<Gauge<f64, AtomicU64>>,
}

impl LaneMetrics {
    fn register(r: &mut Registry, max_series: usize) -> LaneMetrics {
        let metrics = LaneMetrics {
            families: Default::default(),
            left_out: Gauge::default(),
            max_series,
            exported: AtomicU64::new(0),
        };
        for (lane, families) in Lane::ALL.into_iter().zip(&metrics.families) {
            let (name, what) = lane_metric(lane);
            let by = index_label(lane);
            r.register(
                format!("perfmgr_{name}"),
                format!("The PerfMgr's last reading of {what}, by port and {by}"),
                families.readings.clone(),
            );
            r.register(
                format!("perfmgr_{name}_per_second"),
                format!(
                    "How fast {what} grew between the PerfMgr's last two readings, by port and \
                     {by}"
                ),
                families.rates.clone(),
            );
        }
        r.register(
            "perfmgr_lane_series_left_out",
            "Per-VL and per-SL series not exported, beyond --metrics-lane-series-max",
            metrics.left_out.clone(),
        );
        metrics
    }

    /// Replaces the series with `lanes`' when they changed since the last export; whether they
    /// did.
    fn export(&self, lanes: &LaneDatabase) -> bool {
        let changes = lanes.changes();
        if self.exported.swap(changes, Ordering::Relaxed) == changes {
            return false;
        }
        for families in &self.families {
            families.readings.clear();
            families.rates.clear();
        }
        let mut exported = 0;
        let mut left_out = 0;
        for (guid, port, lane, counters) in lanes.iter() {
            let cost = counters.last.len() * if counters.rate.is_some() { 2 } else { 1 };
            if left_out > 0 || exported + cost > self.max_series {
                left_out += cost;
                continue;
            }
            exported += cost;
            let place = [
                ("node_guid", format!("{guid:#018x}")),
                ("port", port.to_string()),
            ];
            let LaneFamilies { readings, rates } = &self.families[lane as usize];
            for (i, &value) in counters.last.iter().enumerate() {
                let mut labels = place.to_vec();
                labels.push((index_label(lane), index_value(lane, i)));
                readings
                    .get_or_create(&labels)
                    .set(i64::try_from(value).unwrap_or(i64::MAX));
                if let Some(rate) = counters.rate.as_ref().and_then(|rates| rates.get(i)) {
                    rates.get_or_create(&labels).set(*rate);
                }
            }
        }
        if left_out > 0 && self.left_out.get() == 0 {
            warn!(
                exported,
                left_out,
                "the per-VL and per-SL series exceed --metrics-lane-series-max; the ports past \
                 it are left out"
            );
        }
        self.left_out
            .set(i64::try_from(left_out).unwrap_or(i64::MAX));
        true
    }
}

/// The QoS conformance report: how many ports stand where, and each judged port's measured
/// and promised share by VL. A port has at most 2 x 15 series; at most `max_series` are
/// exported, the ports outside the tolerance first, then in node GUID and port order.
#[derive(Debug)]
struct QosReportMetrics {
    ports: SortedFamily<Gauge>,
    shares: SortedFamily<Gauge<f64, AtomicU64>>,
    left_out: Gauge,
    max_series: usize,
}

impl QosReportMetrics {
    fn register(r: &mut Registry, max_series: usize) -> QosReportMetrics {
        let metrics = QosReportMetrics {
            ports: SortedFamily::default(),
            shares: SortedFamily::default(),
            left_out: Gauge::default(),
            max_series,
        };
        r.register(
            "qos_report_ports",
            "Ports the QoS conformance report holds to their VL arbitration, by verdict",
            metrics.ports.clone(),
        );
        r.register(
            "qos_report_share_ratio",
            "The share of a port's data a VL got over the PerfMgr's last window (measured) and \
             what its VL arbitration promises (promised), by port and VL",
            metrics.shares.clone(),
        );
        r.register(
            "qos_report_series_left_out",
            "QoS conformance report series not exported, beyond --metrics-lane-series-max",
            metrics.left_out.clone(),
        );
        metrics
    }

    fn export(&self, report: &QosReport) {
        self.ports.clear();
        self.shares.clear();
        for (verdict, name) in [
            (Verdict::Conforms, "conforms"),
            (Verdict::Outside, "outside"),
            (Verdict::Idle, "idle"),
            (Verdict::Unread, "unread"),
        ] {
            let count = i64::try_from(report.count(verdict)).unwrap_or(i64::MAX);
            self.ports
                .get_or_create(&vec![("verdict", name.to_string())])
                .set(count);
        }
        let judged = [Verdict::Outside, Verdict::Conforms]
            .into_iter()
            .flat_map(|verdict| report.ports.iter().filter(move |p| p.verdict == verdict));
        let (mut exported, mut left_out) = (0, 0);
        for port in judged {
            let cost = 2 * port.vls.len();
            if left_out > 0 || exported + cost > self.max_series {
                left_out += cost;
                continue;
            }
            exported += cost;
            for share in &port.vls {
                for (figure, value) in [("measured", share.measured), ("promised", share.promised)]
                {
                    let labels = vec![
                        ("node_guid", format!("{:#018x}", port.node_guid.0)),
                        ("port", port.port.to_string()),
                        ("vl", share.vl.to_string()),
                        ("figure", figure.to_string()),
                    ];
                    self.shares.get_or_create(&labels).set(value);
                }
            }
        }
        self.left_out
            .set(i64::try_from(left_out).unwrap_or(i64::MAX));
    }
}

/// A lane attribute's metric name (after `ibqos_perfmgr_`) and what its counters count.
fn lane_metric(lane: Lane) -> (&'static str, &'static str) {
    match lane {
        Lane::XmitDataSl => (
            "xmit_data_sl_words",
            "PortXmitDataSL (words of 4 octets sent)",
        ),
        Lane::RcvDataSl => (
            "rcv_data_sl_words",
            "PortRcvDataSL (words of 4 octets received)",
        ),
        Lane::SlRcvFecn => ("rcv_fecn_sl_packets", "PortSLRcvFECN (packets with FECN)"),
        Lane::SlRcvBecn => ("rcv_becn_sl_packets", "PortSLRcvBECN (packets with BECN)"),
        Lane::VlXmitWait => (
            "xmit_wait_vl_ticks",
            "PortVLXmitWait (ticks with data to send and no credit)",
        ),
        Lane::VlOpPackets => ("vl_op_packets", "PortVLOpPackets (packets received)"),
        Lane::VlOpData => (
            "vl_op_data_words",
            "PortVLOpData (words of 4 octets received)",
        ),
        Lane::XmitDiscardDetails => (
            "xmit_discards_packets",
            "PortXmitDiscardDetails (outbound packets discarded)",
        ),
    }
}

fn index_label(lane: Lane) -> &'static str {
    match lane.index() {
        Index::Sl => "sl",
        Index::Vl => "vl",
        Index::Cause => "cause",
    }
}

fn index_value(lane: Lane, i: usize) -> String {
    match lane.index() {
        Index::Cause => DISCARD_CAUSES
            .get(i)
            .copied()
            .unwrap_or("other")
            .to_string(),
        Index::Sl | Index::Vl => i.to_string(),
    }
}

/// The registry's metrics, by what they measure.
#[derive(Debug)]
struct SmMetrics {
    sm_state: SortedFamily<Gauge>,
    sweeps: SortedFamily<Counter>,
    sweep_duration: SortedFamily<Histogram>,
    last_sweep: Gauge<f64, AtomicU64>,
    subnet_up: Gauge,
    subnet_up_sweeps: Counter,
    smps_sent: SortedFamily<Counter>,
    smps_received: SortedFamily<Counter>,
    smp_timeouts: SortedFamily<Counter>,
    smp_errors: SortedFamily<Counter>,
    smps_outstanding: Gauge,
    traps: SortedFamily<Counter>,
    nodes: SortedFamily<Gauge>,
    ports: SortedFamily<Gauge>,
    lids: Gauge,
    table_sets: SortedFamily<Counter>,
    table_sets_skipped: SortedFamily<Counter>,
    drift_found: SortedFamily<Counter>,
    drift_repaired: SortedFamily<Counter>,
    qos_ports_configured: SortedFamily<Gauge>,
    qos_ports_pending: SortedFamily<Gauge>,
    qos_ports_vl_clamped: SortedFamily<Gauge>,
    credit_loop_checks: Counter,
    credit_loops: Gauge,
}

impl SmMetrics {
    fn register(r: &mut Registry) -> SmMetrics {
        let build_info = SortedFamily::<Gauge>::default();
        build_info
            .get_or_create(&vec![("version", env!("CARGO_PKG_VERSION").to_string())])
            .set(1);
        r.register("build_info", "The ibqos version running: 1", build_info);
        let m = SmMetrics {
            sm_state: SortedFamily::default(),
            sweeps: SortedFamily::default(),
            sweep_duration: SortedFamily::new_with_constructor(|| Histogram::new(SWEEP_BUCKETS)),
            last_sweep: Gauge::default(),
            subnet_up: Gauge::default(),
            subnet_up_sweeps: Counter::default(),
            smps_sent: SortedFamily::default(),
            smps_received: SortedFamily::default(),
            smp_timeouts: SortedFamily::default(),
            smp_errors: SortedFamily::default(),
            smps_outstanding: Gauge::default(),
            traps: SortedFamily::default(),
            nodes: SortedFamily::default(),
            ports: SortedFamily::default(),
            lids: Gauge::default(),
            table_sets: SortedFamily::default(),
            table_sets_skipped: SortedFamily::default(),
            drift_found: SortedFamily::default(),
            drift_repaired: SortedFamily::default(),
            qos_ports_configured: SortedFamily::default(),
            qos_ports_pending: SortedFamily::default(),
            qos_ports_vl_clamped: SortedFamily::default(),
            credit_loop_checks: Counter::default(),
            credit_loops: Gauge::default(),
        };
        m.set_state(SmState::Discovering);
        r.register(
            "sm_state",
            "The SM's state (IBA 14.4): 1 on the current one",
            m.sm_state.clone(),
        );
        r.register("sweeps", "Sweeps ended, by mode", m.sweeps.clone());
        r.register_with_unit(
            "sweep_duration",
            "How long sweeps took, by mode",
            Unit::Seconds,
            m.sweep_duration.clone(),
        );
        r.register_with_unit(
            "last_sweep_timestamp",
            "When the last sweep ended (Unix time)",
            Unit::Seconds,
            m.last_sweep.clone(),
        );
        r.register(
            "subnet_up",
            "Whether the last sweep brought the subnet up (1) or not (0)",
            m.subnet_up.clone(),
        );
        r.register(
            "subnet_up_sweeps",
            "Sweeps that ended in SUBNET UP",
            m.subnet_up_sweeps.clone(),
        );
        r.register(
            "smps_sent",
            "SMPs sent, by attribute and method",
            m.smps_sent.clone(),
        );
        r.register(
            "smps_received",
            "SMPs received (answers, requests, traps), by attribute and method",
            m.smps_received.clone(),
        );
        r.register(
            "smp_timeouts",
            "Sweep SMP attempts that got no answer in time or were handed back, by attribute",
            m.smp_timeouts.clone(),
        );
        r.register(
            "smp_error_statuses",
            "Sweep SMP answers with an error status, by attribute and status",
            m.smp_errors.clone(),
        );
        r.register(
            "smps_outstanding",
            "SMPs on the wire waiting for their answers",
            m.smps_outstanding.clone(),
        );
        r.register(
            "traps_received",
            "Traps received, by trap number",
            m.traps.clone(),
        );
        r.register(
            "fabric_nodes",
            "Nodes the last sweep found, by type",
            m.nodes.clone(),
        );
        r.register(
            "fabric_ports",
            "Ports the last sweep found, by node type and port state",
            m.ports.clone(),
        );
        r.register(
            "lids_assigned",
            "End ports with a LID after the last sweep",
            m.lids.clone(),
        );
        r.register(
            "table_sets",
            "Table Sets sent (SL2VL, VLArb, VLHighLimit, P_Key, MFT), by table and result: ok \
             (echoed back as sent) or failed",
            m.table_sets.clone(),
        );
        r.register(
            "table_sets_skipped",
            "Table Sets not sent because the fabric already held the table, by table",
            m.table_sets_skipped.clone(),
        );
        r.register(
            "table_drift_found",
            "Tables (and congestion control settings) a sweep read back holding something else \
             than the SM programs, by table",
            m.drift_found.clone(),
        );
        r.register(
            "table_drift_repaired",
            "Of the drift found, tables Set again and echoed back as sent, by table",
            m.drift_repaired.clone(),
        );
        r.register(
            "qos_ports_configured",
            "Ports holding the QoS tables planned for them after the last sweep, by port class",
            m.qos_ports_configured.clone(),
        );
        r.register(
            "qos_ports_pending",
            "Ports with QoS tables to program that do not hold them yet (failed or \
             unanswered), by port class",
            m.qos_ports_pending.clone(),
        );
        r.register(
            "qos_ports_vl_clamped",
            "Linked ports running fewer VLs than max_op_vls (the port or its peer supports \
             fewer), by port class",
            m.qos_ports_vl_clamped.clone(),
        );
        r.register(
            "credit_loop_checks",
            "Routings checked for credit loops, each once after the sweep that programmed it",
            m.credit_loop_checks.clone(),
        );
        r.register(
            "credit_loops",
            "Credit loops (cycles of channels waiting on each other's credits) the last check \
             of a routing found; 0 proves the unicast routes deadlock-free",
            m.credit_loops.clone(),
        );
        m
    }

    /// One gauge per SM state, 1 on `state`.
    fn set_state(&self, state: SmState) {
        for (candidate, name) in SM_STATES {
            let value = i64::from(candidate == state);
            self.sm_state
                .get_or_create(&label("state", name))
                .set(value);
        }
    }

    fn sweep_done(&self, summary: &SweepSummary) {
        let kind = label("kind", mode_name(summary.mode));
        self.sweeps.get_or_create(&kind).inc();
        self.sweep_duration
            .get_or_create(&kind)
            .observe(summary.duration.as_secs_f64());
        self.last_sweep.set(unix_now());
        self.subnet_up.set(i64::from(summary.subnet_up));
        if summary.subnet_up {
            self.subnet_up_sweeps.inc();
        }
    }

    /// The SM's own counters, stored as they are: they only grow, as Prometheus counters must.
    /// Values the fabric chooses (attributes, methods, trap numbers) that the IBA does not name
    /// are added up under `other`, so that no device can make series without end.
    fn mirror(&self, counters: &Counters) {
        let smp_labels = |attribute: AttributeId, method: Method| {
            vec![
                ("attribute", attribute_name(attribute)),
                ("method", method_name(method)),
            ]
        };
        let smps = [
            (&self.smps_sent, &counters.smps_sent),
            (&self.smps_received, &counters.smps_received),
        ];
        for (family, counts) in smps {
            let totals = sum_by(counts, |&(attribute, method)| smp_labels(attribute, method));
            store_all(family, totals);
        }
        let timeouts = sum_by(&counters.timeouts, |&attribute| {
            vec![("attribute", attribute_name(attribute))]
        });
        store_all(&self.smp_timeouts, timeouts);
        let errors = sum_by(&counters.error_statuses, |&(attribute, status)| {
            vec![
                ("attribute", attribute_name(attribute)),
                ("status", status_name(status).to_string()),
            ]
        });
        store_all(&self.smp_errors, errors);
        let traps = sum_by(&counters.traps, |&trap| label("trap", &trap_name(trap)));
        store_all(&self.traps, traps);
        self.credit_loop_checks
            .inner()
            .store(counters.credit_loop_checks, Ordering::Relaxed);
        let tables = &counters.tables;
        for table in Table::ALL {
            let name = table.name();
            for result in SetResult::ALL {
                let count = tables.sets.get(&(table, result)).copied().unwrap_or(0);
                if result == SetResult::Skipped {
                    store(&self.table_sets_skipped, &label("table", name), count);
                } else {
                    let labels = vec![
                        ("table", name.to_string()),
                        ("result", result.name().to_string()),
                    ];
                    store(&self.table_sets, &labels, count);
                }
            }
            let found = tables.drift_found.get(&table).copied().unwrap_or(0);
            store(&self.drift_found, &label("table", name), found);
            let repaired = tables.drift_repaired.get(&table).copied().unwrap_or(0);
            store(&self.drift_repaired, &label("table", name), repaired);
        }
        let drift = &counters.congestion_drift;
        for (attribute, name) in CONGESTION_TABLES {
            let found = drift.found.get(&attribute).copied().unwrap_or(0);
            store(&self.drift_found, &label("table", name), found);
            let repaired = drift.repaired.get(&attribute).copied().unwrap_or(0);
            store(&self.drift_repaired, &label("table", name), repaired);
        }
    }

    /// What the last sweep found. Every label value of a closed set is set, to 0 where none,
    /// so a series never lingers with a stale value.
    fn set_fabric(&self, inventory: &Inventory, qos: &QosPorts) {
        for (node_type, type_name) in NODE_TYPES {
            let nodes = inventory.nodes.get(&node_type).copied().unwrap_or(0);
            set(&self.nodes, &label("type", type_name), nodes);
            for (state, state_name) in PORT_STATES {
                let ports = inventory.ports.get(&(node_type, state)).copied();
                let labels = vec![
                    ("type", type_name.to_string()),
                    ("state", state_name.to_string()),
                ];
                set(&self.ports, &labels, ports.unwrap_or(0));
            }
        }
        self.lids
            .set(i64::try_from(inventory.lids).unwrap_or(i64::MAX));
        for class in PortClass::ALL {
            let labels = label("port_class", class_name(class));
            let counts = qos.tables.get(&class).copied().unwrap_or_default();
            set(&self.qos_ports_configured, &labels, counts.verified);
            let pending = counts.configured - counts.verified;
            set(&self.qos_ports_pending, &labels, pending);
            let clamped = qos.vl_clamped.get(&class).copied().unwrap_or(0);
            set(&self.qos_ports_vl_clamped, &labels, clamped);
        }
    }
}

const SM_STATES: [(SmState, &str); 4] = [
    (SmState::NotActive, "not_active"),
    (SmState::Discovering, "discovering"),
    (SmState::Standby, "standby"),
    (SmState::Master, "master"),
];

const NODE_TYPES: [(NodeType, &str); 3] = [
    (NodeType::Ca, "ca"),
    (NodeType::Switch, "switch"),
    (NodeType::Router, "router"),
];

const PORT_STATES: [(PortState, &str); 4] = [
    (PortState::Down, "down"),
    (PortState::Init, "init"),
    (PortState::Armed, "armed"),
    (PortState::Active, "active"),
];

fn label(name: &'static str, value: &str) -> Labels {
    vec![(name, value.to_string())]
}

/// `counts` added up by the labels `labels_of` gives each key.
fn sum_by<K>(counts: &BTreeMap<K, u64>, labels_of: impl Fn(&K) -> Labels) -> BTreeMap<Labels, u64> {
    let mut totals = BTreeMap::new();
    for (key, count) in counts {
        *totals.entry(labels_of(key)).or_default() += count;
    }
    totals
}

fn store_all(family: &SortedFamily<Counter>, totals: BTreeMap<Labels, u64>) {
    for (labels, value) in totals {
        store(family, &labels, value);
    }
}

/// An attribute by its IBA name; one the IBA does not name is `other`.
fn attribute_name(attribute: AttributeId) -> String {
    match attribute {
        AttributeId::Unknown(_) => "other".to_string(),
        known => known.to_string(),
    }
}

/// A method by its IBA name; one the IBA does not name is `other`.
fn method_name(method: Method) -> String {
    match method {
        Method::Unknown(_) => "other".to_string(),
        known => known.to_string(),
    }
}

/// A trap number the IBA defines for the SM's class (IBA 14.2.5.1: 64-69 for the SA's events,
/// 128-131 and 144-145 from ports, 256-259 for key violations), else `other`.
fn trap_name(trap: u16) -> String {
    match trap {
        64..=69 | 128..=131 | 144 | 145 | 256..=259 => trap.to_string(),
        _ => "other".to_string(),
    }
}

fn store(family: &SortedFamily<Counter>, labels: &Labels, value: u64) {
    family
        .get_or_create(labels)
        .inner()
        .store(value, Ordering::Relaxed);
}

fn set(family: &SortedFamily<Gauge>, labels: &Labels, value: usize) {
    family
        .get_or_create(labels)
        .set(i64::try_from(value).unwrap_or(i64::MAX));
}

fn mode_name(mode: SweepMode) -> &'static str {
    match mode {
        SweepMode::Forced => "forced",
        SweepMode::Diff => "diff",
        SweepMode::DryRun => "dryrun",
    }
}

fn class_name(class: PortClass) -> &'static str {
    match class {
        PortClass::Ca => "ca",
        PortClass::Sw0 => "sw0",
        PortClass::Swe => "swe",
        PortClass::Rtr => "rtr",
    }
}

/// A MAD status as a label: its invalid-field code (IBA 13.4.7), else busy or class-specific,
/// a set of a few values whatever the fabric answers.
fn status_name(status: Status) -> &'static str {
    match status.invalid_field() {
        InvalidField::None if status.is_busy() => "busy",
        InvalidField::None => "class_specific",
        InvalidField::BadVersion => "bad_version",
        InvalidField::MethodUnsupported => "method_unsupported",
        InvalidField::MethodAttributeUnsupported => "method_attribute_unsupported",
        InvalidField::InvalidValue => "invalid_value",
        InvalidField::Unknown(_) => "reserved",
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The registry in OpenMetrics text, as prometheus-client encodes it.
fn openmetrics(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail; a metric that could not be encoded would be a bug
    // here, and an empty scrape says so more plainly than a dead SM.
    if let Err(error) = encode(&mut text, registry) {
        warn!(%error, "cannot encode the metrics");
    }
    text
}

/// OpenMetrics text made the Prometheus text format (0.0.4) that node_exporter's textfile
/// collector and promtool read: the samples are the same; a counter's family is named as its
/// samples (`x_total`, where OpenMetrics says `x`), and the `# UNIT` and `# EOF` lines, which
/// that format lacks, are left out.
fn classic_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        match renamed {
            Some(line) => text.push_str(&line),
            None => text.push_str(line),
        }
        text.push('\n');
    }
    text
}

/// Replaces the textfile with the registry's metrics, by way of a temporary file renamed over
/// it: node_exporter never reads half a file, and reads only names ending in `.prom`, which
/// the temporary file's does not.
fn write_textfile(path: &Path, registry: &Registry) -> std::io::Result<()> {
    let text = classic_text(&openmetrics(registry));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let dir = dir.unwrap_or_else(|| Path::new("."));
    write_atomically(dir, &name.to_string_lossy(), &text, PUBLIC)
}

/// Listens on `address` and serves the registry from a thread of its own.
///
/// One endpoint scraped every few seconds needs no async runtime nor HTTP framework: std's
/// `TcpListener` on a thread, one connection at a time, each bounded by [`CLIENT_TIMEOUT`],
/// reads the request line and headers and answers with one response and `Connection: close`.
fn serve(address: SocketAddr, registry: Arc<Registry>) -> Result<()> {
    let listener = TcpListener::bind(address).with_context(|| {
        format!(
            "cannot listen for metrics on {address} (--metrics-listen): another process may \
             have this port; choose another"
        )
    })?;
    // Port 0 asks the system for a free port: the log says the one it gave.
    let address = listener.local_addr().unwrap_or(address);
    info!(%address, "serving metrics at http://{address}/metrics");
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(stream) => {
                        if let Err(error) = answer(stream, &registry) {
                            debug!(%error, "metrics client");
                        }
                    }
                    Err(error) => debug!(%error, "metrics connection not accepted"),
                }
            }
        })
        .context("cannot start the metrics thread")?;
    Ok(())
}

/// One HTTP/1.x exchange: `GET /metrics` (or HEAD) gets the metrics, in OpenMetrics when the
/// client accepts it (Prometheus does) and in the Prometheus text format otherwise.
fn answer(stream: TcpStream, registry: &Registry) -> std::io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    // A request is a line and a few headers; a client sending more is cut off there.
    let mut reader = BufReader::new(Read::take(stream.try_clone()?, MAX_REQUEST));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut openmetrics_wanted = false;
    // The headers, up to the empty line; only Accept matters. Bounded, so a client cannot
    // make the thread read forever.
    for _ in 0..100 {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("accept")
        {
            openmetrics_wanted |= value.contains("application/openmetrics-text");
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let text = openmetrics(registry);
            if openmetrics_wanted {
                ("200 OK", OPENMETRICS, text)
            } else {
                ("200 OK", TEXT, classic_text(&text))
            }
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "ibqos serves its metrics at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET and HEAD\n".to_string(),
        ),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Mutex;

    use super::*;

    /// A log written into memory, for a test to read.
    struct LogBuffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for LogBuffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .expect("not poisoned")
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `--metrics-listen 127.0.0.1:0` lets the system choose the port: the log names the one
    /// bound, where the endpoint answers.
    #[test]
    fn the_log_names_the_port_bound() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || LogBuffer(Arc::clone(&shared)))
            .with_ansi(false)
            .finish();
        let any_port = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        tracing::subscriber::with_default(subscriber, || {
            serve(any_port, Arc::new(Registry::default()))
        })
        .expect("listening");
        let log = String::from_utf8(log.lock().expect("not poisoned").clone()).expect("text");
        let port: u16 = log
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no address in the log: {log}"));
        assert_ne!(port, 0, "{log}");
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("answers");
        write!(stream, "GET /metrics HTTP/1.0\r\n\r\n").expect("request sent");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("answer read");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    /// The congestion control settings the read back found drifted join the tables' drift
    /// series, under their own `table` labels.
    #[test]
    fn congestion_control_drift_is_counted_with_the_tables() {
        let mut registry = Registry::default();
        let metrics = SmMetrics::register(&mut registry);
        let mut counters = Counters::default();
        let switch = CcAttributeId::SwitchCongestionSetting;
        counters.congestion_drift.found.insert(switch, 2);
        counters.congestion_drift.repaired.insert(switch, 1);
        metrics.mirror(&counters);
        let text = openmetrics(&registry);
        for line in [
            "table_drift_found_total{table=\"cc_switch\"} 2",
            "table_drift_repaired_total{table=\"cc_switch\"} 1",
            "table_drift_found_total{table=\"cct\"} 0",
            "table_drift_found_total{table=\"sl2vl\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }

    /// A family's series come in the order of their labels at every scrape, however they were
    /// added.
    #[test]
    fn series_are_encoded_in_label_order() {
        let mut registry = Registry::default();
        let metrics = SmMetrics::register(&mut registry);
        let mut counters = Counters::default();
        for trap in [259, 64, 144, 131, 65, 258, 128, 257, 145, 129, 66, 256, 130] {
            counters.traps.insert(trap, 1);
            metrics.mirror(&counters);
            let text = openmetrics(&registry);
            let traps: Vec<&str> = text
                .lines()
                .filter(|line| line.starts_with("traps_received_total{"))
                .collect();
            let mut sorted = traps.clone();
            sorted.sort_unstable();
            assert_eq!(traps, sorted);
        }
    }

    #[test]
    fn values_the_iba_does_not_name_are_added_up_under_other() {
        let counts = BTreeMap::from([
            ((AttributeId::NodeInfo, Method::Get), 3),
            ((AttributeId::Unknown(0x7777), Method::Get), 1),
            ((AttributeId::Unknown(0x7778), Method::Unknown(0x7f)), 2),
        ]);
        let totals = sum_by(&counts, |&(attribute, method)| {
            vec![
                ("attribute", attribute_name(attribute)),
                ("method", method_name(method)),
            ]
        });
        let series =
            |a: &str, m: &str| vec![("attribute", a.to_string()), ("method", m.to_string())];
        assert_eq!(
            totals,
            BTreeMap::from([
                (series("NodeInfo", "Get"), 3),
                (series("other", "Get"), 1),
                (series("other", "other"), 2),
            ])
        );
        assert_eq!(trap_name(128), "128");
        assert_eq!(trap_name(259), "259");
        assert_eq!(trap_name(1000), "other");
    }

    #[test]
    fn classic_text_names_counter_families_as_their_samples() {
        let openmetrics = "# HELP ibqos_sweeps Sweeps.\n# TYPE ibqos_sweeps counter\n\
                           ibqos_sweeps_total{kind=\"diff\"} 3\n\
                           # HELP ibqos_sweep_duration_seconds Time.\n\
                           # TYPE ibqos_sweep_duration_seconds histogram\n\
                           # UNIT ibqos_sweep_duration_seconds seconds\n\
                           ibqos_sweep_duration_seconds_sum 0.5\n\
                           # HELP ibqos_subnet_up Up.\n# TYPE ibqos_subnet_up gauge\n\
                           ibqos_subnet_up 1\n# EOF\n";
        assert_eq!(
            classic_text(openmetrics),
            "# HELP ibqos_sweeps_total Sweeps.\n# TYPE ibqos_sweeps_total counter\n\
             ibqos_sweeps_total{kind=\"diff\"} 3\n\
             # HELP ibqos_sweep_duration_seconds Time.\n\
             # TYPE ibqos_sweep_duration_seconds histogram\n\
             ibqos_sweep_duration_seconds_sum 0.5\n\
             # HELP ibqos_subnet_up Up.\n# TYPE ibqos_subnet_up gauge\n\
             ibqos_subnet_up 1\n"
        );
    }

    /// Two ports' per-VL wait counters and one port's per-SL data, read twice ten seconds
    /// apart: rates for all.
    fn lanes_read() -> LaneDatabase {
        let start = std::time::Instant::now();
        let later = start + Duration::from_secs(10);
        let mut lanes = LaneDatabase::default();
        for (port, lane) in [
            (1, Lane::VlXmitWait),
            (2, Lane::VlXmitWait),
            (1, Lane::XmitDataSl),
        ] {
            lanes.take(0x0002_c903_0000_0001, port, lane, vec![0; 16], start);
            let mut row = vec![0; 16];
            row[3] = 250;
            lanes.take(0x0002_c903_0000_0001, port, lane, row, later);
        }
        lanes
    }

    #[test]
    fn lane_series_are_by_port_and_lane_and_stop_at_the_bound() {
        let lanes = lanes_read();
        let exposition = |max_series| {
            let mut registry = Registry::with_prefix("ibqos");
            let metrics = LaneMetrics::register(&mut registry, max_series);
            assert!(metrics.export(&lanes));
            assert!(!metrics.export(&lanes), "nothing new to export");
            classic_text(&openmetrics(&registry))
        };
        let series = |text: &str| {
            text.lines()
                .filter(|line| line.starts_with("ibqos_perfmgr_") && line.contains('{'))
                .count()
        };
        let all = exposition(10_000);
        // 3 attributes of 16 counters, each a reading and a rate.
        assert_eq!(series(&all), 96, "{all}");
        assert!(all.contains(
            "ibqos_perfmgr_xmit_wait_vl_ticks{node_guid=\"0x0002c90300000001\",port=\"2\",\
             vl=\"3\"} 250\n"
        ));
        assert!(all.contains(
            "ibqos_perfmgr_xmit_data_sl_words_per_second{node_guid=\"0x0002c90300000001\",\
             port=\"1\",sl=\"3\"} 25.0\n"
        ));
        assert!(all.contains("ibqos_perfmgr_lane_series_left_out 0\n"));
        // Room for two attributes and a half: the third is left out whole.
        let bounded = exposition(80);
        assert_eq!(series(&bounded), 64, "{bounded}");
        assert!(bounded.contains("ibqos_perfmgr_lane_series_left_out 32\n"));
        assert!(
            !bounded.contains("port=\"2\""),
            "the last port in order is left out"
        );
        assert_eq!(series(&exposition(0)), 0);
    }

    /// Two judged ports, one outside and one conforming, and one idle.
    fn qos_report() -> QosReport {
        use ibqos_mad::Guid;
        use ibqos_sm::qos_report::{PortShares, VlShare};
        let port = |number: u8, verdict: Verdict, shares: &[(f64, f64)]| PortShares {
            node_guid: Guid(0x0002_c903_0000_0001),
            node: "sw".to_string(),
            port: number,
            verdict,
            vls: shares
                .iter()
                .enumerate()
                .map(|(vl, &(measured, promised))| VlShare {
                    vl: vl as u8,
                    measured,
                    promised,
                    backlogged: true,
                })
                .collect(),
        };
        QosReport {
            tolerance_points: 2,
            ports: vec![
                port(1, Verdict::Conforms, &[(0.75, 0.75), (0.25, 0.25)]),
                port(2, Verdict::Outside, &[(0.5, 0.75), (0.5, 0.25)]),
                port(3, Verdict::Idle, &[]),
            ],
        }
    }

    /// `promtool check metrics` (Debian's prometheus package, which the test command installs)
    /// passes `text` with nothing to say.
    fn promtool_accepts(text: &str) {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("promtool is required: apt-get install prometheus");
        let mut stdin = child.stdin.take().expect("promtool's stdin");
        stdin.write_all(text.as_bytes()).expect("write to promtool");
        drop(stdin);
        let out = child.wait_with_output().expect("promtool");
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool check metrics rejects:\n{}{}\n--- the exposition ---\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
    }

    #[test]
    fn qos_report_series_put_the_ports_outside_first_and_stop_at_the_bound() {
        let exposition = |max_series| {
            let mut registry = Registry::with_prefix("ibqos");
            let metrics = QosReportMetrics::register(&mut registry, max_series);
            metrics.export(&qos_report());
            classic_text(&openmetrics(&registry))
        };
        let all = exposition(100);
        for line in [
            "ibqos_qos_report_ports{verdict=\"outside\"} 1\n",
            "ibqos_qos_report_ports{verdict=\"conforms\"} 1\n",
            "ibqos_qos_report_ports{verdict=\"idle\"} 1\n",
            "ibqos_qos_report_ports{verdict=\"unread\"} 0\n",
            "ibqos_qos_report_share_ratio{node_guid=\"0x0002c90300000001\",port=\"2\",vl=\"0\",\
             figure=\"measured\"} 0.5\n",
            "ibqos_qos_report_share_ratio{node_guid=\"0x0002c90300000001\",port=\"2\",vl=\"0\",\
             figure=\"promised\"} 0.75\n",
            "ibqos_qos_report_share_ratio{node_guid=\"0x0002c90300000001\",port=\"1\",vl=\"1\",\
             figure=\"measured\"} 0.25\n",
            "ibqos_qos_report_series_left_out 0\n",
        ] {
            assert!(all.contains(line), "{line} in\n{all}");
        }
        let shares = |text: &str| text.matches("ibqos_qos_report_share_ratio{").count();
        assert_eq!(shares(&all), 8);
        promtool_accepts(&all);
        // Room for one port: the one outside stays, the conforming one is left out.
        let bounded = exposition(5);
        assert_eq!(shares(&bounded), 4, "{bounded}");
        assert!(!bounded.contains("port=\"1\""), "{bounded}");
        assert!(bounded.contains("ibqos_qos_report_series_left_out 4\n"));
    }

    #[test]
    fn lane_families_follow_the_order_of_every_lane() {
        for (i, lane) in Lane::ALL.into_iter().enumerate() {
            assert_eq!(lane as usize, i, "{lane:?}");
        }
    }
}
