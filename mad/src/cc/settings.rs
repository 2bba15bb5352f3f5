//! The settings a congestion control manager programs (IBA A10.4.3.5-A10.4.3.8): where a switch
//! marks FECN, how a CA slows a flow on BECN, and the table of injection delays it steps
//! through.

flags! {
    /// SwitchCongestionSetting's Control_Map: which of the attribute's fields a Set changes.
    pub struct SwitchControlMap(u32) {
        /// Victim_Mask.
        const VICTIM_MASK = 1 << 0;
        /// Credit_Mask.
        const CREDIT_MASK = 1 << 1;
        /// Threshold and Packet_Size.
        const THRESHOLD = 1 << 2;
        /// CS_Threshold and CS_ReturnDelay (credit starvation).
        const CREDIT_STARVATION = 1 << 3;
        /// Marking_Rate.
        const MARKING_RATE = 1 << 4;
    }
}

layout! {
    /// A view of SwitchCongestionSetting (attribute 0x0014, 76 bytes): when a switch's ports
    /// mark FECN. Each mask holds one bit per port, port 0 in the last byte's lowest bit.
    pub struct SwitchCongestionSetting[76];
    {
        /// Control_Map: the fields a Set changes.
        control_map / set_control_map: SwitchControlMap = 0, 32;
        /// Victim_Mask: ports that mark even when they are only victims of congestion.
        victim_mask / victim_mask_mut: bytes = 32, 256;
        /// Credit_Mask: ports that may withhold credits (credit starvation).
        credit_mask / credit_mask_mut: bytes = 288, 256;
        /// Threshold: 0 never marks, 1 marks loosely, 15 most aggressively.
        threshold / set_threshold: u8 = 544, 4;
        /// Packet_Size: packets smaller than this many 64-byte credits are never marked.
        packet_size / set_packet_size: u8 = 552, 8;
        /// CS_Threshold: when credit starvation starts.
        cs_threshold / set_cs_threshold: u8 = 560, 4;
        /// CS_ReturnDelay, as a CCT entry ([`CctEntry`]).
        cs_return_delay / set_cs_return_delay: u16 = 576, 16;
        /// Marking_Rate: the mean number of eligible packets between two marked ones.
        marking_rate / set_marking_rate: u16 = 592, 16;
    }
}

layout! {
    /// A view of SwitchPortCongestionSetting (attribute 0x0015, 128 bytes): per-port settings
    /// of 32 ports, the block the attribute modifier names (ports 32·AM to 32·AM + 31).
    pub struct SwitchPortCongestionSetting[128];
    {
        /// Valid: the element's settings take the place of the switch's.
        valid / set_valid: bool[32] = 0, 1, 32;
        /// Control_Type: false for congestion control, true for credit starvation.
        control_type / set_control_type: bool[32] = 1, 1, 32;
        /// Threshold.
        threshold / set_threshold: u8[32] = 4, 4, 32;
        /// Packet_Size, in 64-byte credits.
        packet_size / set_packet_size: u8[32] = 8, 8, 32;
        /// Cong_Parm: Marking_Rate for congestion control, CS_ReturnDelay for credit
        /// starvation.
        cong_parm / set_cong_parm: u16[32] = 16, 16, 32;
    }
}

layout! {
    /// A view of CACongestionSetting (attribute 0x0016, 132 bytes): how a CA reacts to BECN,
    /// for each of the 16 SLs.
    pub struct CaCongestionSetting[132];
    {
        /// Port_Control: bit 0 clear reacts per QP, set per SL (per port).
        port_control / set_port_control: u16 = 0, 16;
        /// Control_Map: bit `sl` set means a Set changes SL `sl`'s entry.
        control_map / set_control_map: u16 = 16, 16;
        /// CCTI_Timer of SL `index`: how often the CCTI falls by one, in 1.024 us units.
        ccti_timer / set_ccti_timer: u16[16] = 32, 16, 64;
        /// CCTI_Increase of SL `index`: how far a BECN raises the CCTI.
        ccti_increase / set_ccti_increase: u8[16] = 48, 8, 64;
        /// Trigger_Threshold of SL `index`: the CCTI at which the CA logs an event.
        trigger_threshold / set_trigger_threshold: u8[16] = 56, 8, 64;
        /// CCTI_Min of SL `index`: the lowest CCTI the timer brings it to.
        ccti_min / set_ccti_min: u8[16] = 64, 8, 64;
    }
}

layout! {
    /// A view of CongestionControlTable (attribute 0x0017, 132 bytes): 64 entries of a CA's
    /// table of injection delays, the block the attribute modifier names (entries 64·AM to
    /// 64·AM + 63).
    pub struct CongestionControlTable[132];
    {
        /// CCTI_Limit: the table's last index, across all blocks.
        ccti_limit / set_ccti_limit: u16 = 0, 16;
        /// Entry `index` of the block, as a [`CctEntry`].
        entry / set_entry: u16[64] = 32, 16, 16;
    }
}

/// One entry of a congestion control table: the delay a CA waits between a flow's packets,
/// (packet time >> shift) × multiplier. Bits 15-14 are the shift, bits 13-0 the multiplier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CctEntry(pub u16);

impl CctEntry {
    /// The entry of `shift` (0-3) and `multiplier` (0-16383); bits beyond each field's width are
    /// dropped.
    pub const fn new(shift: u8, multiplier: u16) -> CctEntry {
        CctEntry(((shift as u16 & 0x3) << 14) | (multiplier & 0x3fff))
    }

    /// CCT_Shift.
    pub const fn shift(self) -> u8 {
        (self.0 >> 14) as u8
    }

    /// CCT_Multiplier.
    pub const fn multiplier(self) -> u16 {
        self.0 & 0x3fff
    }
}

/// Every field of a [`SwitchCongestionSetting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchCongestionSettingRepr {
    /// Control_Map: the fields a Set changes.
    pub control_map: SwitchControlMap,
    /// Victim_Mask, port 0 in the last byte's lowest bit.
    pub victim_mask: [u8; 32],
    /// Credit_Mask, laid out as Victim_Mask.
    pub credit_mask: [u8; 32],
    /// Threshold: 0 never marks, 15 marks most.
    pub threshold: u8,
    /// Packet_Size, in 64-byte credits.
    pub packet_size: u8,
    /// CS_Threshold.
    pub cs_threshold: u8,
    /// CS_ReturnDelay.
    pub cs_return_delay: CctEntry,
    /// Marking_Rate.
    pub marking_rate: u16,
}

impl SwitchCongestionSettingRepr {
    /// Reads every field, after checking the view's length.
    pub fn parse<T: AsRef<[u8]>>(view: &SwitchCongestionSetting<T>) -> crate::Result<Self> {
        view.check_len()?;
        let mask = |bytes: &[u8]| <[u8; 32]>::try_from(bytes).unwrap_or_default();
        Ok(SwitchCongestionSettingRepr {
            control_map: view.control_map(),
            victim_mask: mask(view.victim_mask()),
            credit_mask: mask(view.credit_mask()),
            threshold: view.threshold(),
            packet_size: view.packet_size(),
            cs_threshold: view.cs_threshold(),
            cs_return_delay: CctEntry(view.cs_return_delay()),
            marking_rate: view.marking_rate(),
        })
    }

    /// Writes every byte of the view: each field, and zero in reserved bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut SwitchCongestionSetting<T>) {
        view.clear();
        view.set_control_map(self.control_map);
        view.victim_mask_mut().copy_from_slice(&self.victim_mask);
        view.credit_mask_mut().copy_from_slice(&self.credit_mask);
        view.set_threshold(self.threshold);
        view.set_packet_size(self.packet_size);
        view.set_cs_threshold(self.cs_threshold);
        view.set_cs_return_delay(self.cs_return_delay.0);
        view.set_marking_rate(self.marking_rate);
    }
}

/// One port's element of a [`SwitchPortCongestionSetting`] block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchPortCongestionElement {
    /// Valid: the element takes the place of the switch's settings.
    pub valid: bool,
    /// False for congestion control, true for credit starvation.
    pub control_type: bool,
    /// Threshold: 0 never marks, 15 marks most.
    pub threshold: u8,
    /// Packet_Size, in 64-byte credits.
    pub packet_size: u8,
    /// Cong_Parm: Marking_Rate, or CS_ReturnDelay for credit starvation.
    pub cong_parm: u16,
}

impl SwitchPortCongestionElement {
    /// Element `index` (0-31) of a block.
    pub fn read<T: AsRef<[u8]>>(view: &SwitchPortCongestionSetting<T>, index: usize) -> Self {
        SwitchPortCongestionElement {
            valid: view.valid(index),
            control_type: view.control_type(index),
            threshold: view.threshold(index),
            packet_size: view.packet_size(index),
            cong_parm: view.cong_parm(index),
        }
    }

    /// Writes this element as element `index` (0-31) of a block.
    pub fn write<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut SwitchPortCongestionSetting<T>,
        index: usize,
    ) {
        view.set_valid(index, self.valid);
        view.set_control_type(index, self.control_type);
        view.set_threshold(index, self.threshold);
        view.set_packet_size(index, self.packet_size);
        view.set_cong_parm(index, self.cong_parm);
    }
}

/// One SL's entry of a [`CaCongestionSetting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CaCongestionEntry {
    /// CCTI_Timer, in 1.024 us units.
    pub ccti_timer: u16,
    /// CCTI_Increase.
    pub ccti_increase: u8,
    /// Trigger_Threshold.
    pub trigger_threshold: u8,
    /// CCTI_Min.
    pub ccti_min: u8,
}

/// Every field of a [`CaCongestionSetting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CaCongestionSettingRepr {
    /// Port_Control: bit 0 set for SL-based (per port) control.
    pub port_control: u16,
    /// Control_Map: the SLs a Set changes.
    pub control_map: u16,
    /// By SL.
    pub entries: [CaCongestionEntry; 16],
}

impl CaCongestionSettingRepr {
    /// Reads every field, after checking the view's length.
    pub fn parse<T: AsRef<[u8]>>(view: &CaCongestionSetting<T>) -> crate::Result<Self> {
        view.check_len()?;
        Ok(CaCongestionSettingRepr {
            port_control: view.port_control(),
            control_map: view.control_map(),
            entries: std::array::from_fn(|sl| CaCongestionEntry {
                ccti_timer: view.ccti_timer(sl),
                ccti_increase: view.ccti_increase(sl),
                trigger_threshold: view.trigger_threshold(sl),
                ccti_min: view.ccti_min(sl),
            }),
        })
    }

    /// Writes every byte of the view: each field, and zero in reserved bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut CaCongestionSetting<T>) {
        view.clear();
        view.set_port_control(self.port_control);
        view.set_control_map(self.control_map);
        for (sl, entry) in self.entries.iter().enumerate() {
            view.set_ccti_timer(sl, entry.ccti_timer);
            view.set_ccti_increase(sl, entry.ccti_increase);
            view.set_trigger_threshold(sl, entry.trigger_threshold);
            view.set_ccti_min(sl, entry.ccti_min);
        }
    }
}

/// Every field of one [`CongestionControlTable`] block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CongestionControlTableRepr {
    /// CCTI_Limit: the table's last index.
    pub ccti_limit: u16,
    /// The block's 64 entries.
    pub entries: [CctEntry; 64],
}

impl CongestionControlTableRepr {
    /// Reads every field, after checking the view's length.
    pub fn parse<T: AsRef<[u8]>>(view: &CongestionControlTable<T>) -> crate::Result<Self> {
        view.check_len()?;
        Ok(CongestionControlTableRepr {
            ccti_limit: view.ccti_limit(),
            entries: std::array::from_fn(|i| CctEntry(view.entry(i))),
        })
    }

    /// Writes every byte of the view: each field, and zero in reserved bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut CongestionControlTable<T>) {
        view.clear();
        view.set_ccti_limit(self.ccti_limit);
        for (i, entry) in self.entries.iter().enumerate() {
            view.set_entry(i, entry.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SwitchCongestionSetting with every field set, placed by hand at the IBA's offsets:
    /// Control_Map 0x1f, port 1 a victim, port 255 a credit-mask port, Threshold 15,
    /// Packet_Size 8, CS_Threshold 3, CS_ReturnDelay 1:0x0102, Marking_Rate 10.
    fn switch_setting() -> [u8; 76] {
        let mut bytes = [0u8; 76];
        bytes[3] = 0x1f;
        bytes[35] = 0x02; // Victim_Mask's last byte: port 1
        bytes[36] = 0x80; // Credit_Mask's first byte: port 255
        bytes[68] = 0xf0; // Threshold in the high nibble
        bytes[69] = 8;
        bytes[70] = 0x30; // CS_Threshold in the high nibble
        bytes[72..74].copy_from_slice(&[0x41, 0x02]);
        bytes[74..76].copy_from_slice(&[0x00, 0x0a]);
        bytes
    }

    #[test]
    fn switch_setting_fields_sit_at_their_iba_offsets() {
        let bytes = switch_setting();
        let view = SwitchCongestionSetting::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            view.control_map(),
            SwitchControlMap::VICTIM_MASK
                | SwitchControlMap::CREDIT_MASK
                | SwitchControlMap::THRESHOLD
                | SwitchControlMap::CREDIT_STARVATION
                | SwitchControlMap::MARKING_RATE
        );
        assert_eq!(view.victim_mask()[31], 0x02);
        assert_eq!(view.credit_mask()[0], 0x80);
        assert_eq!((view.threshold(), view.packet_size()), (15, 8));
        assert_eq!(view.cs_threshold(), 3);
        let delay = CctEntry(view.cs_return_delay());
        assert_eq!((delay.shift(), delay.multiplier()), (1, 0x0102));
        assert_eq!(view.marking_rate(), 10);
        assert!(SwitchCongestionSetting::new_checked(&bytes[..75]).is_err());

        let mut out = [0u8; 76];
        let mut view = SwitchCongestionSetting::new_unchecked(&mut out[..]);
        view.set_control_map(SwitchControlMap(0x1f));
        view.victim_mask_mut()[31] = 0x02;
        view.credit_mask_mut()[0] = 0x80;
        view.set_threshold(15);
        view.set_packet_size(8);
        view.set_cs_threshold(3);
        view.set_cs_return_delay(CctEntry::new(1, 0x0102).0);
        view.set_marking_rate(10);
        assert_eq!(out, bytes);

        let repr = SwitchCongestionSettingRepr::parse(
            &SwitchCongestionSetting::new_checked(&bytes[..]).unwrap(),
        )
        .unwrap();
        assert_eq!(repr.cs_return_delay, CctEntry::new(1, 0x0102));
        assert_eq!((repr.victim_mask[31], repr.credit_mask[0]), (0x02, 0x80));
        let mut again = [0xa5u8; 76];
        repr.emit(&mut SwitchCongestionSetting::new_unchecked(&mut again[..]));
        assert_eq!(again, bytes);
    }

    #[test]
    fn switch_port_settings_are_32_bits_a_port() {
        let mut bytes = [0u8; 128];
        // Port 0 of the block: valid, congestion control, threshold 7, 4 credits, rate 0x0203.
        bytes[..4].copy_from_slice(&[0x87, 0x04, 0x02, 0x03]);
        // Port 31: valid, credit starvation, threshold 1, 0 credits, return delay 0xffff.
        bytes[124..].copy_from_slice(&[0xc1, 0x00, 0xff, 0xff]);
        let view = SwitchPortCongestionSetting::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (view.valid(0), view.control_type(0), view.threshold(0)),
            (true, false, 7)
        );
        assert_eq!((view.packet_size(0), view.cong_parm(0)), (4, 0x0203));
        assert_eq!((view.valid(1), view.cong_parm(1)), (false, 0));
        assert_eq!(
            (view.valid(31), view.control_type(31), view.threshold(31)),
            (true, true, 1)
        );
        assert_eq!(view.cong_parm(31), 0xffff);
        assert!(SwitchPortCongestionSetting::new_checked(&bytes[..127]).is_err());

        let mut out = [0u8; 128];
        let mut block = SwitchPortCongestionSetting::new_unchecked(&mut out[..]);
        for i in [0, 31] {
            SwitchPortCongestionElement::read(&view, i).write(&mut block, i);
        }
        assert_eq!(out, bytes);
    }

    #[test]
    fn ca_setting_entries_are_8_bytes_a_sl_from_byte_4() {
        let mut bytes = [0u8; 132];
        bytes[..4].copy_from_slice(&[0x00, 0x01, 0x80, 0x01]); // per SL; SLs 15 and 0
        bytes[4..9].copy_from_slice(&[0x01, 0x50, 0x02, 0x03, 0x01]); // SL 0
        bytes[124..129].copy_from_slice(&[0xff, 0xfe, 0x7f, 0x80, 0x09]); // SL 15
        let view = CaCongestionSetting::new_checked(&bytes[..]).unwrap();
        assert_eq!((view.port_control(), view.control_map()), (1, 0x8001));
        let sl = |i| {
            (
                view.ccti_timer(i),
                view.ccti_increase(i),
                view.trigger_threshold(i),
                view.ccti_min(i),
            )
        };
        assert_eq!(sl(0), (0x0150, 2, 3, 1));
        assert_eq!(sl(1), (0, 0, 0, 0));
        assert_eq!(sl(15), (0xfffe, 0x7f, 0x80, 9));
        assert!(CaCongestionSetting::new_checked(&bytes[..131]).is_err());

        let mut out = [0u8; 132];
        let mut view = CaCongestionSetting::new_unchecked(&mut out[..]);
        view.set_port_control(1);
        view.set_control_map(0x8001);
        for (i, (timer, increase, trigger, min)) in [(0, (0x0150, 2, 3, 1)), (15, sl(15))] {
            view.set_ccti_timer(i, timer);
            view.set_ccti_increase(i, increase);
            view.set_trigger_threshold(i, trigger);
            view.set_ccti_min(i, min);
        }
        assert_eq!(out, bytes);

        let repr =
            CaCongestionSettingRepr::parse(&CaCongestionSetting::new_checked(&bytes[..]).unwrap())
                .unwrap();
        assert_eq!(repr.entries[0].ccti_timer, 0x0150);
        assert_eq!(repr.entries[15].ccti_min, 9);
        let mut again = [0xa5u8; 132];
        repr.emit(&mut CaCongestionSetting::new_unchecked(&mut again[..]));
        assert_eq!(again, bytes);
    }

    #[test]
    fn cct_entries_are_16_bits_from_byte_4() {
        let mut bytes = [0u8; 132];
        bytes[..2].copy_from_slice(&[0x00, 0x7f]); // CCTI_Limit 127: two blocks
        bytes[4..6].copy_from_slice(&[0x00, 0x00]); // entry 0: full speed
        bytes[6..8].copy_from_slice(&[0x40, 0x01]); // entry 1: shift 1, multiplier 1
        bytes[130..].copy_from_slice(&[0xff, 0xff]); // entry 63: shift 3, multiplier 0x3fff
        let view = CongestionControlTable::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.ccti_limit(), 127);
        let entry = |i| CctEntry(view.entry(i));
        assert_eq!(entry(0), CctEntry::new(0, 0));
        assert_eq!((entry(1).shift(), entry(1).multiplier()), (1, 1));
        assert_eq!((entry(63).shift(), entry(63).multiplier()), (3, 0x3fff));
        assert!(CongestionControlTable::new_checked(&bytes[..131]).is_err());

        let repr = CongestionControlTableRepr::parse(&view).unwrap();
        assert_eq!((repr.ccti_limit, repr.entries[63]), (127, CctEntry(0xffff)));
        let mut again = [0xa5u8; 132];
        repr.emit(&mut CongestionControlTable::new_unchecked(&mut again[..]));
        assert_eq!(again, bytes);
    }

    #[test]
    fn a_cct_entry_drops_bits_beyond_its_fields() {
        assert_eq!(CctEntry::new(1, 0x0102).0, 0x4102);
        assert_eq!(CctEntry::new(7, 0xffff), CctEntry(0xffff));
        assert_eq!(CctEntry::new(0, 0x4001), CctEntry(0x0001));
    }
}
