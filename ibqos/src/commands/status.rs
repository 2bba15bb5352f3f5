//! `ibqos ctl status`: what OpenSM's console `status` prints (version, SM state and priority,
//! SA state, routing engine, sweeping, known SMs), plus what it lacks: why the SM is in its
//! state, the last sweep, and the QoS and P_Key state of the ports.

use std::fmt::Write as _;

use ibqos_mad::SmState;
use ibqos_opensm::Settings;
use ibqos_sm::election::state_name;
use ibqos_sm::manager::Manager;
use ibqos_sm::summary::SweepSummary;
use serde::Serialize;

/// The daemon's state, as `status` prints it and `status --json` writes it.
#[derive(Debug, Serialize)]
pub struct Status {
    pub version: String,
    pub port_guid: String,
    pub sm_state: &'static str,
    pub sm_state_reason: String,
    pub sm_priority: u8,
    /// "Ready" when master and answering, "Not serving" otherwise (the SA is silent).
    pub sa_state: &'static str,
    pub routing_engine: String,
    pub sweep_interval_s: u32,
    pub sweeps: u32,
    pub known_sms: Vec<KnownSm>,
    pub qos_enabled: bool,
    /// The last sweep's summary, as `ibqos sm --json` prints it; none before the first ends.
    pub last_sweep: Option<SweepSummary>,
}

/// An SM on the subnet, this one (`self_`) included, as OpenSM's "Known SMs" lists them.
#[derive(Debug, Serialize)]
pub struct KnownSm {
    pub port_guid: String,
    pub sm_state: &'static str,
    pub priority: u8,
    #[serde(rename = "self")]
    pub self_: bool,
}

impl Status {
    /// The state of the SM `manager` runs on `port_guid` with `settings`, after `sweeps`
    /// sweeps of which `last` ended last.
    pub fn of(
        manager: &Manager,
        settings: &Settings,
        port_guid: u64,
        sweeps: u32,
        last: Option<&SweepSummary>,
    ) -> Status {
        let election = manager.election();
        let state = election.state();
        let mut known_sms = vec![KnownSm {
            port_guid: format!("{port_guid:#018x}"),
            sm_state: state_name(state),
            priority: settings.sm.priority & 0xf,
            self_: true,
        }];
        known_sms.extend(election.known().map(|sm| KnownSm {
            port_guid: format!("{:#018x}", sm.info.guid),
            sm_state: state_name(sm.info.sm_state),
            priority: sm.info.priority,
            self_: false,
        }));
        Status {
            version: format!("ibqos {}", env!("CARGO_PKG_VERSION")),
            port_guid: format!("{port_guid:#018x}"),
            sm_state: state_name(state),
            sm_state_reason: election.reason().to_string(),
            sm_priority: settings.sm.priority & 0xf,
            sa_state: if state == SmState::Master {
                "Ready"
            } else {
                "Not serving"
            },
            routing_engine: settings
                .sm
                .routing_engine
                .clone()
                .unwrap_or_else(|| "minhop".to_string()),
            sweep_interval_s: settings.sm.sweep_interval,
            sweeps,
            known_sms,
            qos_enabled: settings.qos.enabled,
            last_sweep: last.cloned(),
        }
    }

    /// The text `ibqos ctl status` prints, laid out as OpenSM's console.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "   ibqos Version        : {}", self.version);
        let _ = writeln!(
            out,
            "   SM State             : {} ({})",
            self.sm_state, self.sm_state_reason
        );
        let _ = writeln!(out, "   SM Priority          : {}", self.sm_priority);
        let _ = writeln!(out, "   SA State             : {}", self.sa_state);
        let _ = writeln!(out, "   Routing Engine       : {}", self.routing_engine);
        let _ = write!(
            out,
            "\n   Sweeps\n   ------\n   Sweeps done                    : {}\n   Sweep interval (seconds)       : {}\n",
            self.sweeps, self.sweep_interval_s
        );
        if let Some(last) = &self.last_sweep {
            let _ = writeln!(
                out,
                "   Last sweep                     : {}, {} nodes ({} switches), {} ports, {} LIDs",
                last.result.to_uppercase(),
                last.nodes,
                last.switches,
                last.ports,
                last.lids
            );
            let _ = writeln!(
                out,
                "   SMPs in the last sweep         : {} ({} retries, {} timeouts, {} error statuses)",
                last.smps_sent, last.retries, last.timeouts, last.error_statuses
            );
        }
        let _ = write!(
            out,
            "\n   QoS\n   ---\n   QoS enabled                    : {}\n",
            u8::from(self.qos_enabled)
        );
        if let Some(last) = &self.last_sweep {
            let _ = write!(
                out,
                "   QoS ports configured           : {}\n   QoS ports verified             : {}\n   QoS ports failed               : {}\n   P_Key ports configured         : {}\n   Values changed in last sweep   : {}\n",
                last.qos_ports_configured,
                last.qos_ports_verified,
                last.qos_ports_failed,
                last.pkey_ports_configured,
                last.changes.len()
            );
        }
        let _ = write!(
            out,
            "\n   Known SMs\n   ---------\n   Port GUID          SM State    Priority\n   ---------          --------    --------\n"
        );
        for sm in &self.known_sms {
            let _ = writeln!(
                out,
                "   {} {:<11} {:<8}{}",
                sm.port_guid,
                sm.sm_state,
                sm.priority,
                if sm.self_ { " SELF" } else { "" }
            );
        }
        out
    }
}
