//! The InfiniBand QoS domain.
//!
//! Service levels ([`Sl`]), virtual lanes ([`Vl`]) and VL counts ([`VlCount`]) with their PortInfo
//! encodings; SL-to-VL mapping tables ([`Sl2VlTable`]) and VL arbitration tables ([`VlArbTable`]);
//! the four port classes ([`PortClass`]); the QoS configuration with OpenSM's per-field fallback
//! ([`QosConfig`]); and [`plan`], which turns a configuration and a port's capabilities into exactly
//! the tables to program. [`partitions`] models OpenSM's partitions.conf. [`promise`] is the
//! share of a port's data its VL arbitration promises each VL.

mod config;
pub mod partitions;
mod plan;
pub mod policy;
pub mod promise;
mod switch;
mod tables;
mod types;

pub use config::{EffectiveQos, PortClass, QosConfig, QosSet, defaults};
pub use ibqos_mad::{Priority, SlToVlModifier, VlArbBlock, VlArbEntry};
pub use plan::{PlanError, PortCaps, PortPlan, VlArbSet, plan, plan_settings};
pub use switch::{Sl2VlProgramming, Sl2VlSet, SwitchSl2VlView, setup_sl2vl, switch_sl2vl};
pub use tables::{Sl2VlTable, VLARB_TABLE_ENTRIES, VlArbTable};
pub use types::{Sl, Vl, VlCount, VlCountError, oper_vls};
