//! The congestion control settings a plan shows when `congestion_control` is TRUE: what
//! OpenSM's `cc_setup_mad_data` derives from the `cc_*` options, for one kind of port, with
//! the places where OpenSM's handling of a value bites.

use std::fmt::Write as _;

use ibqos_congestion::{CCT_ENTRIES_MAX, CcData, CcOptions, CctOption};
use ibqos_fabric::dump::{CaCongestionDump, SwitchCongestionDump};
use ibqos_mad::CctEntry;
use ibqos_qos::PortClass;
use serde_json::{Value, json};

/// What a port of `class` is sent, derived once from the options.
pub(super) struct CongestionPlan {
    class: PortClass,
    data: CcData,
    notes: Vec<String>,
}

impl CongestionPlan {
    /// The plan for `class`, or None when `congestion_control` is not TRUE (nothing is sent).
    pub(super) fn new(options: &CcOptions, class: PortClass) -> Option<CongestionPlan> {
        options.enabled.then(|| CongestionPlan {
            class,
            data: options.data(),
            notes: notes(options, class),
        })
    }

    /// The JSON form: the sections in `ibqos dump`'s format (`switch` or `ca`) and the notes.
    pub(super) fn to_json(&self) -> Value {
        let mut object = json!({ "notes": self.notes });
        match self.class {
            PortClass::Sw0 | PortClass::Swe => {
                object["switch"] = json!(SwitchCongestionDump::new(&self.data.switch));
            }
            PortClass::Ca => object["ca"] = json!(self.ca_dump()),
            PortClass::Rtr => {}
        }
        object
    }

    /// The plan as a person reads it.
    pub(super) fn describe(&self) -> String {
        let mut out = String::from("\nCongestion control (congestion_control TRUE)\n");
        match self.class {
            PortClass::Sw0 | PortClass::Swe => out.push_str(&self.switch_text()),
            PortClass::Ca => out.push_str(&self.ca_text()),
            PortClass::Rtr => {
                out.push_str(
                    "  none: OpenSM programs congestion control on switches and CAs only\n",
                );
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }

    /// The CA setting with the table as the blocks hold it.
    fn ca_dump(&self) -> CaCongestionDump {
        let limit = self.data.table.first().map_or(0, |block| block.ccti_limit);
        let entries: Vec<CctEntry> = self
            .data
            .table
            .iter()
            .flat_map(|block| block.entries)
            .collect();
        CaCongestionDump::new(&self.data.ca, limit, &entries)
    }

    fn switch_text(&self) -> String {
        let s = SwitchCongestionDump::new(&self.data.switch);
        let delay = self.data.switch.cs_return_delay;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "SwitchCongestionSetting (the switch's, sent to its port 0)\n  \
             Control_Map 0x{:08x}  Threshold {}  Packet_Size {}  Marking_Rate {}\n  \
             CS_Threshold {}  CS_ReturnDelay 0x{:04x} (shift {}, multiplier {})\n  \
             Victim_Mask {}\n  Credit_Mask {}",
            s.control_map,
            s.threshold,
            s.packet_size,
            s.marking_rate,
            s.cs_threshold,
            s.cs_return_delay,
            delay.shift(),
            delay.multiplier(),
            s.victim_mask,
            s.credit_mask,
        );
        out
    }

    fn ca_text(&self) -> String {
        let ca = self.ca_dump();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "CACongestionSetting\n  Port_Control 0x{:04x}  Control_Map 0x{:04x}\n  \
             SL  CCTI_Timer  CCTI_Increase  Trigger_Threshold  CCTI_Min",
            ca.port_control, ca.control_map
        );
        for (sl, [timer, increase, trigger, min]) in ca.sls.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {sl:>2}  {timer:>10}  {increase:>13}  {trigger:>17}  {min:>8}"
            );
        }
        let _ = writeln!(
            out,
            "CongestionControlTable ({} block{}, CCTI_Limit {}), index:shift:multiplier",
            self.data.table.len(),
            if self.data.table.len() == 1 { "" } else { "s" },
            ca.ccti_limit
        );
        for (row, chunk) in ca.table.chunks(8).enumerate() {
            let entries: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(i, &raw)| {
                    let entry = CctEntry(raw);
                    format!("{}:{}:{}", row * 8 + i, entry.shift(), entry.multiplier())
                })
                .collect();
            let _ = writeln!(out, "  {}", entries.join(" "));
        }
        out
    }
}

/// Where OpenSM sends something other than the option says, for the settings `class` gets.
fn notes(options: &CcOptions, class: PortClass) -> Vec<String> {
    let mut notes = Vec::new();
    let mut nibble = |name: &str, value: u8| {
        if value > 0xf {
            notes.push(format!(
                "{name} {value} is wider than its 4-bit field: OpenSM sends {}",
                value & 0xf
            ));
        }
    };
    match class {
        PortClass::Sw0 | PortClass::Swe => {
            nibble("cc_sw_cong_setting_threshold", options.switch_threshold);
            nibble(
                "cc_sw_cong_setting_credit_starvation_threshold",
                options.switch_cs_threshold,
            );
            notes.extend(overflowing_entry(
                "cc_sw_cong_setting_credit_starvation_return_delay",
                options.switch_cs_return_delay,
            ));
        }
        PortClass::Ca => {
            match options.cct.len() {
                0 => notes.push("cc_cct is empty: OpenSM sends CCTI_Limit 0".to_owned()),
                1 => notes.push(
                    "cc_cct has one entry: OpenSM sends CCTI_Limit 0 and an all-zero table"
                        .to_owned(),
                ),
                n if n > CCT_ENTRIES_MAX => notes.push(format!(
                    "cc_cct has {n} entries: OpenSM sends the first {CCT_ENTRIES_MAX}"
                )),
                _ => {}
            }
            for (index, &entry) in options.cct.iter().enumerate().take(CCT_ENTRIES_MAX) {
                notes.extend(overflowing_entry(&format!("cc_cct entry {index}"), entry));
            }
        }
        PortClass::Rtr => {}
    }
    notes
}

/// A note for a `shift:multiplier` value whose fields run over their 2 and 14 bits.
fn overflowing_entry(name: &str, option: CctOption) -> Option<String> {
    (option.shift > 3 || option.multiplier > 0x3fff).then(|| {
        let sent = option.entry();
        format!(
            "{name} {}:{} runs over its 2-bit shift or 14-bit multiplier: OpenSM sends \
             0x{:04x} (shift {}, multiplier {})",
            option.shift,
            option.multiplier,
            sent.0,
            sent.shift(),
            sent.multiplier()
        )
    })
}
