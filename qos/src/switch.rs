//! Which SL-to-VL Sets a switch needs, and with which attribute-modifier scope.
//!
//! A switch holds one SL2VL table per (input port, output port) pair. OpenSM programs them in one
//! of two ways (OpenSM 3.3.23 `osm_qos.c:334-416`):
//! - per pair: for every output port that is not down (from port 0 on an enhanced port 0) and
//!   every input port 0..=N — down ports and input == output included — one Set with the switch
//!   external table masked by the output port's OperVLs;
//! - optimized, when SwitchInfo advertises OptimizedSLtoVLMappingProgramming and the
//!   configuration allows it: one Set to all pairs, masked with the OperVLs most up ports run,
//!   then one all-inputs Set for each up port that runs a different number of VLs.
//!
//! On an enhanced port 0 the (0, 0) table is the sw0 table. OpenSM sends it twice per sweep on
//! the per-pair path (once with the swe table from the external-port loop, then with the sw0
//! table); ibqos sends it once, with the table OpenSM leaves in place.

use ibqos_mad::SlToVlModifier;

use crate::config::{PortClass, QosConfig};
use crate::tables::Sl2VlTable;
use crate::types::VlCount;

/// What the SL2VL planning needs to know about a switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSl2VlView {
    /// Port 0's CapabilityMask.IsSLMappingSupported: OpenSM reads it for the whole switch.
    pub sl_mapping_supported: bool,
    /// SwitchInfo.EnhancedPort0.
    pub enhanced_port0: bool,
    /// SwitchInfo.OptimizedSLtoVLMappingProgramming (bit 0 of the field, as OpenSM reads it).
    pub optimized_supported: bool,
    /// Port 0's OperationalVLs.
    pub port0_oper_vls: VlCount,
    /// External ports 1..=N in order: `Some(OperVLs)` for a port that is not down.
    pub ports: Vec<Option<VlCount>>,
}

impl SwitchSl2VlView {
    /// N, the number of external ports.
    fn num_ports(&self) -> u8 {
        u8::try_from(self.ports.len()).unwrap_or(u8::MAX)
    }

    /// The up external ports and their OperVLs.
    fn up_ports(&self) -> impl Iterator<Item = (u8, VlCount)> + '_ {
        (1..=self.num_ports())
            .zip(&self.ports)
            .filter_map(|(port, vls)| vls.map(|v| (port, v)))
    }
}

/// The Sets of a switch's qos-setup entries (input, output, table): one per pair, the table
/// masked with its output's OperVLs; none for an output that is not one (down, or a base port
/// 0), and none at all when port 0 does not support SL mapping.
pub fn setup_sl2vl(
    switch: &SwitchSl2VlView,
    entries: impl IntoIterator<Item = (u8, u8, Sl2VlTable)>,
) -> Vec<Sl2VlSet> {
    if !switch.sl_mapping_supported {
        return Vec::new();
    }
    let output_vls = |output: u8| match output {
        0 => switch.enhanced_port0.then_some(switch.port0_oper_vls),
        n => switch.ports.get(usize::from(n) - 1).copied().flatten(),
    };
    entries
        .into_iter()
        .filter_map(|(input, output, table)| {
            Some(Sl2VlSet {
                scope: SlToVlModifier::Pair { input, output },
                table: table.masked(output_vls(output)?.vl_mask()),
            })
        })
        .collect()
}

/// One SLtoVLMappingTable Set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sl2VlSet {
    /// The pairs the Set covers.
    pub scope: SlToVlModifier,
    pub table: Sl2VlTable,
}

/// How the SM may program a switch's SL2VL tables: OpenSM's `use_optimized_slvl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sl2VlProgramming {
    /// One Set per (input, output) pair (`use_optimized_slvl FALSE`, OpenSM's default).
    PerPair,
    /// The all-pairs and all-inputs Sets on a switch that advertises
    /// OptimizedSLtoVLMappingProgramming, per pair on the others (`use_optimized_slvl TRUE`).
    OptimizedIfSupported,
}

impl Sl2VlProgramming {
    /// The programming OpenSM's `use_optimized_slvl` option selects.
    pub const fn from_use_optimized_slvl(use_optimized_slvl: bool) -> Self {
        if use_optimized_slvl {
            Sl2VlProgramming::OptimizedIfSupported
        } else {
            Sl2VlProgramming::PerPair
        }
    }
}

/// The SL2VL Sets that program every table of a switch, or none when port 0 does not support SL
/// mapping.
pub fn switch_sl2vl(
    config: &QosConfig,
    switch: &SwitchSl2VlView,
    programming: Sl2VlProgramming,
) -> Vec<Sl2VlSet> {
    if !switch.sl_mapping_supported {
        return Vec::new();
    }
    let swe = config.effective(PortClass::Swe).sl2vl;
    let sw0 = config.effective(PortClass::Sw0).sl2vl;
    let optimize =
        switch.optimized_supported && programming == Sl2VlProgramming::OptimizedIfSupported;
    let mut sets = if optimize {
        optimized(switch, &swe)
    } else {
        per_pair(switch, &swe)
    };
    // Optimized: the all-pairs Set covered (0, 0) with the swe table, so port 0 needs its own
    // Set only when the sw0 table differs (compared unmasked, as OpenSM does).
    let optimized_covers_port0 = optimize && sw0 == swe;
    if switch.enhanced_port0 && !optimized_covers_port0 {
        let table = sw0.masked(switch.port0_oper_vls.vl_mask());
        sets.push(Sl2VlSet {
            scope: SlToVlModifier::Pair {
                input: 0,
                output: 0,
            },
            table,
        });
    }
    sets
}

fn per_pair(switch: &SwitchSl2VlView, swe: &Sl2VlTable) -> Vec<Sl2VlSet> {
    let port0 = switch.enhanced_port0.then_some((0, switch.port0_oper_vls));
    let mut sets = Vec::new();
    for (output, vls) in port0.into_iter().chain(switch.up_ports()) {
        let table = swe.masked(vls.vl_mask());
        for input in 0..=switch.num_ports() {
            // (0, 0) on an enhanced port 0 is programmed once, with the sw0 table.
            if (input, output) != (0, 0) {
                sets.push(Sl2VlSet {
                    scope: SlToVlModifier::Pair { input, output },
                    table,
                });
            }
        }
    }
    sets
}

fn optimized(switch: &SwitchSl2VlView, swe: &Sl2VlTable) -> Vec<Sl2VlSet> {
    // The representative OperVLs: the first value to reach the strictly highest count, scanning
    // ports in order (OpenSM's histogram, `osm_qos.c:338-360`). With no port up OpenSM falls back
    // to port 1's cached value, which is stale; port 0's is the one value known to be current.
    let mut counts = [0u16; VlCount::ALL.len()];
    let mut common: Option<(u16, VlCount)> = None;
    for (_, vls) in switch.up_ports() {
        let count = &mut counts[usize::from(vls.encoding() - 1)];
        *count += 1;
        if common.is_none_or(|(best, _)| *count > best) {
            common = Some((*count, vls));
        }
    }
    let common = common.map_or(switch.port0_oper_vls, |(_, vls)| vls);
    let mut sets = vec![Sl2VlSet {
        scope: SlToVlModifier::All,
        table: swe.masked(common.vl_mask()),
    }];
    for (output, vls) in switch.up_ports().filter(|(_, vls)| *vls != common) {
        let table = swe.masked(vls.vl_mask());
        sets.push(Sl2VlSet {
            scope: SlToVlModifier::AllInputs { output },
            table,
        });
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::Sl2VlProgramming::{OptimizedIfSupported, PerPair};
    use super::*;
    use crate::tables::Sl2VlTable;

    fn switch(
        enhanced_port0: bool,
        optimized_supported: bool,
        ports: Vec<Option<VlCount>>,
    ) -> SwitchSl2VlView {
        SwitchSl2VlView {
            sl_mapping_supported: true,
            enhanced_port0,
            optimized_supported,
            port0_oper_vls: VlCount::Eight,
            ports,
        }
    }

    fn qos_on() -> QosConfig {
        QosConfig {
            enabled: true,
            ..QosConfig::default()
        }
    }

    /// Vector 26: 36 ports up, base port 0, per-pair programming: 36 outputs x 37 inputs.
    #[test]
    fn base_port0_per_pair_programs_every_input_to_every_up_output() {
        let sw = switch(false, false, vec![Some(VlCount::Eight); 36]);
        let sets = switch_sl2vl(&qos_on(), &sw, PerPair);
        assert_eq!(sets.len(), 1332);
        assert!(
            sets.iter()
                .all(|s| !matches!(s.scope, SlToVlModifier::Pair { output: 0, .. }))
        );
        assert!(sets.contains(&Sl2VlSet {
            scope: SlToVlModifier::Pair {
                input: 36,
                output: 36
            },
            table: crate::defaults::sl2vl().masked(0x7),
        }));
    }

    /// Vector 27: the same with an enhanced port 0: OpenSM sends 37 x 37 + 1 (the (0, 0) table
    /// twice); ibqos sends (0, 0) once, with the sw0 table OpenSM leaves in place.
    #[test]
    fn enhanced_port0_programs_port0_once_with_the_sw0_table() {
        let mut config = qos_on();
        config.sw0.sl2vl = Some(Sl2VlTable::ALL_VL0);
        let sw = switch(true, false, vec![Some(VlCount::Eight); 36]);
        let sets = switch_sl2vl(&config, &sw, PerPair);
        assert_eq!(sets.len(), 37 * 37);
        let port0: Vec<_> = sets
            .iter()
            .filter(|s| {
                s.scope
                    == SlToVlModifier::Pair {
                        input: 0,
                        output: 0,
                    }
            })
            .collect();
        assert_eq!(port0.len(), 1);
        assert_eq!(port0[0].table, Sl2VlTable::ALL_VL0);
    }

    /// Vector 28: optimized programming, 30 ports with 8 VLs and 6 with 4: one all-pairs Set
    /// masked for 8 VLs and six all-inputs Sets masked for 4.
    #[test]
    fn optimized_sends_one_all_pairs_set_and_one_per_odd_port() {
        let mut ports = vec![Some(VlCount::Eight); 30];
        ports.extend([Some(VlCount::Four); 6]);
        let sw = switch(false, true, ports);
        let sets = switch_sl2vl(&qos_on(), &sw, OptimizedIfSupported);
        let default = crate::defaults::sl2vl();
        assert_eq!(
            sets[0],
            Sl2VlSet {
                scope: SlToVlModifier::All,
                table: default.masked(0x7)
            }
        );
        let rest: Vec<_> = sets[1..].iter().map(|s| (s.scope, s.table)).collect();
        let expected: Vec<_> = (31..=36)
            .map(|output| (SlToVlModifier::AllInputs { output }, default.masked(0x3)))
            .collect();
        assert_eq!(rest, expected);
    }

    #[test]
    fn optimized_is_used_only_when_advertised_and_allowed() {
        let ports = vec![Some(VlCount::Eight); 4];
        let unsupported = switch(false, false, ports.clone());
        assert_eq!(
            switch_sl2vl(&qos_on(), &unsupported, OptimizedIfSupported).len(),
            4 * 5
        );
        let supported = switch(false, true, ports);
        assert_eq!(switch_sl2vl(&qos_on(), &supported, PerPair).len(), 4 * 5);
        assert_eq!(
            switch_sl2vl(&qos_on(), &supported, OptimizedIfSupported).len(),
            1
        );
    }

    #[test]
    fn down_outputs_get_nothing_and_no_sl_mapping_means_no_sets() {
        let sw = switch(
            false,
            false,
            vec![Some(VlCount::Eight), None, Some(VlCount::Two)],
        );
        let sets = switch_sl2vl(&qos_on(), &sw, PerPair);
        let outputs: std::collections::BTreeSet<u8> = sets
            .iter()
            .map(|s| match s.scope {
                SlToVlModifier::Pair { output, .. } => output,
                other => panic!("unexpected scope {other:?}"),
            })
            .collect();
        assert_eq!(outputs.into_iter().collect::<Vec<_>>(), vec![1, 3]);
        let no_sl_mapping = SwitchSl2VlView {
            sl_mapping_supported: false,
            ..sw
        };
        assert!(switch_sl2vl(&qos_on(), &no_sl_mapping, PerPair).is_empty());
    }

    /// With an enhanced port 0 and the optimized path, port 0 gets its own Set only if its table
    /// differs from the switch external one.
    #[test]
    fn optimized_enhanced_port0_set_only_when_tables_differ() {
        let sw = switch(true, true, vec![Some(VlCount::Eight); 4]);
        assert_eq!(switch_sl2vl(&qos_on(), &sw, OptimizedIfSupported).len(), 1);
        let mut config = qos_on();
        config.sw0.sl2vl = Some(Sl2VlTable::ALL_VL0);
        let sets = switch_sl2vl(&config, &sw, OptimizedIfSupported);
        assert_eq!(sets.len(), 2);
        assert_eq!(
            sets[1].scope,
            SlToVlModifier::Pair {
                input: 0,
                output: 0
            }
        );
    }
}
