//! OpenSM's congestion control options as it holds them, and the MAD data it derives from them
//! (`cc_setup_mad_data`).

use std::time::Duration;

use ibqos_mad::{
    CaCongestionEntry, CaCongestionSettingRepr, CctEntry, CongestionControlTableRepr,
    SwitchCongestionSettingRepr, SwitchControlMap,
};

/// The most entries `cc_cct` holds (`OSM_CCT_ENTRY_MAX`): two blocks.
pub const CCT_ENTRIES_MAX: usize = 128;

/// Entries in one CongestionControlTable block.
const BLOCK_ENTRIES: usize = 64;

/// A `shift:multiplier` option value as OpenSM keeps it (`osm_cct_entry_t`): the shift in 8
/// bits and the multiplier in 16, neither cut to its field's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CctOption {
    pub shift: u8,
    pub multiplier: u16,
}

impl CctOption {
    /// The entry OpenSM puts on the wire, `shift << 14 | multiplier` in 16 bits: a shift above
    /// 3 loses its high bits and a multiplier above 14 bits runs into the shift.
    pub fn entry(self) -> CctEntry {
        CctEntry(((u32::from(self.shift) << 14) as u16) | self.multiplier)
    }
}

/// The `congestion_control` and `cc_*` options of opensm.conf (or ibqos.toml), as OpenSM holds
/// them after reading the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcOptions {
    /// `congestion_control`: program the fabric at all.
    pub enabled: bool,
    /// `cc_key`: the CC_Key every MAD carries (OpenSM never programs it into the agents).
    pub cc_key: u64,
    /// `cc_max_outstanding_mads`.
    pub max_outstanding_mads: u32,
    /// `cc_sw_cong_setting_control_map`.
    pub switch_control_map: u32,
    /// `cc_sw_cong_setting_victim_mask`, big-endian, port 0 in the last byte's lowest bit.
    pub switch_victim_mask: [u8; 32],
    /// `cc_sw_cong_setting_credit_mask`.
    pub switch_credit_mask: [u8; 32],
    /// `cc_sw_cong_setting_threshold`.
    pub switch_threshold: u8,
    /// `cc_sw_cong_setting_packet_size`.
    pub switch_packet_size: u8,
    /// `cc_sw_cong_setting_credit_starvation_threshold`.
    pub switch_cs_threshold: u8,
    /// `cc_sw_cong_setting_credit_starvation_return_delay`.
    pub switch_cs_return_delay: CctOption,
    /// `cc_sw_cong_setting_marking_rate`.
    pub switch_marking_rate: u16,
    /// `cc_ca_cong_setting_port_control`.
    pub ca_port_control: u16,
    /// `cc_ca_cong_setting_control_map`.
    pub ca_control_map: u16,
    /// `cc_ca_cong_setting_ccti_timer`, `_ccti_increase`, `_trigger_threshold` and `_ccti_min`,
    /// by SL.
    pub ca_entries: [CaCongestionEntry; 16],
    /// `cc_cct`, at most [`CCT_ENTRIES_MAX`] entries.
    pub cct: Vec<CctOption>,
    /// `transaction_timeout`: how long each MAD waits for its answer.
    pub timeout: Duration,
    /// `transaction_retries`: how often a MAD without an answer is sent again.
    pub retries: u32,
    /// Beyond OpenSM (ibqos.toml's `[sm] cc_read_back`): Get what each port was Set, after the
    /// Sets and at every later programming, and Set again what a port does not hold.
    pub read_back: bool,
    /// Beyond OpenSM (ibqos.toml's `[sm] cc_key_program`): program `cc_key` into every agent
    /// before its other Sets, with this protection.
    pub key_program: Option<KeyProgram>,
}

/// How `cc_key` is programmed into the agents (CongestionKeyInfo, IBA A10.4.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyProgram {
    /// CC_KeyProtectBit: a Get without the key reads the key as 0.
    pub protect: bool,
    /// CC_KeyLeasePeriod in seconds: how long after a violation the protect bit holds (0: for
    /// ever).
    pub lease_period: u16,
}

impl Default for CcOptions {
    /// OpenSM's defaults (off, every setting 0, no table), with ibqos's read back and no key
    /// programmed.
    fn default() -> CcOptions {
        CcOptions {
            enabled: false,
            cc_key: 0,
            max_outstanding_mads: 500,
            switch_control_map: 0,
            switch_victim_mask: [0; 32],
            switch_credit_mask: [0; 32],
            switch_threshold: 0,
            switch_packet_size: 0,
            switch_cs_threshold: 0,
            switch_cs_return_delay: CctOption::default(),
            switch_marking_rate: 0,
            ca_port_control: 0,
            ca_control_map: 0,
            ca_entries: [CaCongestionEntry::default(); 16],
            cct: Vec::new(),
            timeout: Duration::from_millis(200),
            retries: 3,
            read_back: true,
            key_program: None,
        }
    }
}

/// What OpenSM sends: one switch setting for every switch, one CA setting and the table blocks
/// for every CA port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcData {
    pub switch: SwitchCongestionSettingRepr,
    pub ca: CaCongestionSettingRepr,
    /// One block per 64 entries of `cc_cct`, at least one.
    pub table: Vec<CongestionControlTableRepr>,
}

impl CcOptions {
    /// `cc_setup_mad_data`: the settings as they go on the wire. The thresholds are 4-bit
    /// fields a larger option value overflows. The table has CCTI_Limit, the last entry's
    /// index, in every block, and OpenSM's quirk kept on purpose so that both SMs leave the
    /// same tables: with one entry (CCTI_Limit 0) the block goes out all zero.
    pub fn data(&self) -> CcData {
        let switch = SwitchCongestionSettingRepr {
            control_map: SwitchControlMap(self.switch_control_map),
            victim_mask: self.switch_victim_mask,
            credit_mask: self.switch_credit_mask,
            // OpenSM shifts into the byte's (or short's) high nibble: bits above 4 are lost.
            threshold: self.switch_threshold & 0xf,
            packet_size: self.switch_packet_size,
            cs_threshold: self.switch_cs_threshold & 0xf,
            cs_return_delay: self.switch_cs_return_delay.entry(),
            marking_rate: self.switch_marking_rate,
        };
        let ca = CaCongestionSettingRepr {
            port_control: self.ca_port_control,
            control_map: self.ca_control_map,
            entries: self.ca_entries,
        };
        let cct = &self.cct[..self.cct.len().min(CCT_ENTRIES_MAX)];
        let ccti_limit = u16::try_from(cct.len().saturating_sub(1)).unwrap_or(u16::MAX);
        let blocks = cct.len().saturating_sub(1) / BLOCK_ENTRIES + 1;
        let table = (0..blocks)
            .map(|block| {
                let mut entries = [CctEntry::default(); BLOCK_ENTRIES];
                if ccti_limit != 0 {
                    for (slot, option) in entries
                        .iter_mut()
                        .zip(cct.iter().skip(block * BLOCK_ENTRIES))
                    {
                        *slot = option.entry();
                    }
                }
                CongestionControlTableRepr {
                    ccti_limit,
                    entries,
                }
            })
            .collect();
        CcData { switch, ca, table }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cct(entries: &[(u8, u16)]) -> CcOptions {
        CcOptions {
            cct: entries
                .iter()
                .map(|&(shift, multiplier)| CctOption { shift, multiplier })
                .collect(),
            ..CcOptions::default()
        }
    }

    #[test]
    fn no_table_is_one_block_with_limit_0() {
        let data = cct(&[]).data();
        assert_eq!(data.table.len(), 1);
        assert_eq!(data.table[0].ccti_limit, 0);
        assert_eq!(data.table[0].entries, [CctEntry::default(); 64]);
    }

    #[test]
    fn one_entry_goes_out_all_zero_as_opensm_sends_it() {
        let data = cct(&[(1, 5)]).data();
        assert_eq!(data.table.len(), 1);
        assert_eq!(data.table[0].ccti_limit, 0);
        assert_eq!(data.table[0].entries[0], CctEntry(0));
    }

    #[test]
    fn sixty_five_entries_fill_two_blocks_with_the_same_limit() {
        let entries: Vec<(u8, u16)> = (0..65).map(|i| (1, i)).collect();
        let data = cct(&entries).data();
        assert_eq!(data.table.len(), 2);
        assert!(data.table.iter().all(|block| block.ccti_limit == 64));
        assert_eq!(data.table[0].entries[63], CctEntry::new(1, 63));
        assert_eq!(data.table[1].entries[0], CctEntry::new(1, 64));
        assert_eq!(data.table[1].entries[1], CctEntry(0));
    }

    #[test]
    fn entries_past_128_are_dropped() {
        let entries: Vec<(u8, u16)> = (0..200).map(|i| (0, i)).collect();
        let data = cct(&entries).data();
        assert_eq!(data.table.len(), 2);
        assert_eq!(data.table[1].ccti_limit, 127);
    }

    #[test]
    fn out_of_range_fields_overflow_as_in_opensm() {
        let options = CcOptions {
            switch_threshold: 0x1f,
            switch_cs_threshold: 0x12,
            switch_cs_return_delay: CctOption {
                shift: 5,
                multiplier: 0x7fff,
            },
            ..CcOptions::default()
        };
        let data = options.data();
        assert_eq!(
            (data.switch.threshold, data.switch.cs_threshold),
            (0xf, 0x2)
        );
        // (5 << 14) keeps bit 14 in 16 bits; the multiplier's bit 14 joins it.
        assert_eq!(data.switch.cs_return_delay, CctEntry(0x7fff));
    }
}
