//! The emulated fabric's congestion control agents: what a Set keeps (as its Control_Map
//! selects), what a Get answers, the statuses of a real agent, the CC_Key and its lease, and
//! malformed input. ibccquery and ibccconfig read and write the same agents through `ibqos
//! fabric serve` in tests/tests/fabric_serve_cc.rs.

mod support;

use ibqos_emu::{CONTROL_TABLE_CAP, CongestionSettings, Emulator, FaultSchedule};
use ibqos_fabric::{PortRef, Topology};
use ibqos_mad::{
    AttributeId, CC_CLASS_VERSION, CaCongestionEntry, CaCongestionSetting, CaCongestionSettingRepr,
    CcAttributeId, CcMad, CctEntry, CongestionControlTable, CongestionControlTableRepr,
    CongestionInfo, CongestionKeyInfo, CongestionKeyInfoRepr, LOG_TYPE_CA, LOG_TYPE_SWITCH, Method,
    MgmtClass, Status, SwitchCongestionLog, SwitchCongestionSetting, SwitchCongestionSettingRepr,
    SwitchControlMap, SwitchPortCongestionElement, SwitchPortCongestionSetting, TimeStamp,
};
use support::{emulator, exchange, node};

/// A CC request: `data` at the start of the attribute data, the rest zero.
fn cc(method: Method, attribute: CcAttributeId, modifier: u32, key: u64, data: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0; 256];
    let mut mad = CcMad::new_unchecked(&mut bytes[..]);
    let mut header = mad.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::CongestionControl);
    header.set_class_version(CC_CLASS_VERSION);
    header.set_method(method);
    header.set_transaction_id(0x7a93);
    header.set_attribute_id(AttributeId::from(u16::from(attribute)));
    header.set_attribute_modifier(modifier);
    mad.set_cc_key(key);
    mad.data_mut()[..data.len()].copy_from_slice(data);
    bytes
}

/// The agent's answer to `request`, sent from `at` to its own agent (a switch's port 0, a CA's
/// port) at `at_ns`; `None` when none comes.
fn ask(emu: &mut Emulator, at: PortRef, at_ns: u64, request: &[u8]) -> Option<Vec<u8>> {
    exchange(emu, at, at_ns, request, None).map(|reply| reply.mad)
}

fn status(response: &[u8]) -> Status {
    CcMad::new_checked(response).unwrap().header().status()
}

fn data(response: &[u8]) -> &[u8] {
    &response[64..]
}

fn switch_port(t: &Topology) -> PortRef {
    PortRef::new(node(t, "S1"), 0)
}

fn ca_port(t: &Topology) -> PortRef {
    PortRef::new(node(t, "H5"), 1)
}

/// A switch setting with every field other than zero, and `map` as its Control_Map.
fn switch_setting(map: SwitchControlMap) -> SwitchCongestionSettingRepr {
    let mut victim_mask = [0; 32];
    victim_mask[31] = 0x06;
    SwitchCongestionSettingRepr {
        control_map: map,
        victim_mask,
        credit_mask: [0xff; 32],
        threshold: 15,
        packet_size: 8,
        cs_threshold: 3,
        cs_return_delay: CctEntry::new(1, 7),
        marking_rate: 10,
    }
}

fn emit_switch(setting: &SwitchCongestionSettingRepr) -> [u8; 76] {
    let mut bytes = [0; 76];
    setting.emit(&mut SwitchCongestionSetting::new_unchecked(&mut bytes[..]));
    bytes
}

fn parse_switch(response: &[u8]) -> SwitchCongestionSettingRepr {
    let view = SwitchCongestionSetting::new_checked(&data(response)[..76]).unwrap();
    SwitchCongestionSettingRepr::parse(&view).unwrap()
}

#[test]
fn a_switch_setting_keeps_the_fields_its_control_map_selects() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = switch_port(&t);
    let threshold_only = switch_setting(SwitchControlMap::THRESHOLD);
    let set = cc(
        Method::Set,
        CcAttributeId::SwitchCongestionSetting,
        0,
        0,
        &emit_switch(&threshold_only),
    );
    let response = ask(&mut emu, at, 0, &set).unwrap();
    assert_eq!(status(&response), Status::OK);
    let kept = SwitchCongestionSettingRepr {
        control_map: SwitchControlMap::THRESHOLD,
        threshold: 15,
        packet_size: 8,
        ..SwitchCongestionSettingRepr::default()
    };
    assert_eq!(parse_switch(&response), kept);

    // Every bit: the whole setting. A Get from another port of the switch reads the same agent.
    let everything = switch_setting(SwitchControlMap(0x1f));
    let set = cc(
        Method::Set,
        CcAttributeId::SwitchCongestionSetting,
        0,
        0,
        &emit_switch(&everything),
    );
    assert_eq!(
        parse_switch(&ask(&mut emu, at, 0, &set).unwrap()),
        everything
    );
    let get = cc(
        Method::Get,
        CcAttributeId::SwitchCongestionSetting,
        0,
        0,
        &[],
    );
    assert_eq!(
        parse_switch(&ask(&mut emu, at, 0, &get).unwrap()),
        everything
    );
    let held = emu.congestion_agent(PortRef::new(at.node, 2)).unwrap();
    let CongestionSettings::Switch(switch) = held.settings else {
        panic!("a switch agent: {held:?}");
    };
    assert_eq!(switch.setting, everything);
    assert_eq!(
        switch.ports.len(),
        usize::from(t.node(at.node).unwrap().num_ports()) + 1
    );
}

#[test]
fn switch_port_settings_go_by_blocks_of_32_ports() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = switch_port(&t);
    let element = SwitchPortCongestionElement {
        valid: true,
        control_type: false,
        threshold: 7,
        packet_size: 4,
        cong_parm: 0x0203,
    };
    let mut block = [0u8; 128];
    element.write(
        &mut SwitchPortCongestionSetting::new_unchecked(&mut block[..]),
        2,
    );
    let set = cc(
        Method::Set,
        CcAttributeId::SwitchPortCongestionSetting,
        0,
        0,
        &block,
    );
    let response = ask(&mut emu, at, 0, &set).unwrap();
    assert_eq!(status(&response), Status::OK);
    let view = SwitchPortCongestionSetting::new_checked(&data(&response)[..128]).unwrap();
    assert_eq!(SwitchPortCongestionElement::read(&view, 2), element);
    assert_eq!(
        SwitchPortCongestionElement::read(&view, 1),
        SwitchPortCongestionElement::default()
    );
    let CongestionSettings::Switch(switch) = emu.congestion_agent(at).unwrap().settings else {
        panic!("a switch agent");
    };
    assert_eq!(switch.ports[2], element);

    // S1 has fewer than 32 ports: block 1 names none.
    let beyond = cc(
        Method::Get,
        CcAttributeId::SwitchPortCongestionSetting,
        1,
        0,
        &[],
    );
    assert_eq!(
        status(&ask(&mut emu, at, 0, &beyond).unwrap()),
        Status::INVALID_VALUE
    );
}

#[test]
fn a_ca_setting_keeps_port_control_and_the_sls_its_map_selects() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = ca_port(&t);
    let entry = CaCongestionEntry {
        ccti_timer: 0x0150,
        ccti_increase: 2,
        trigger_threshold: 3,
        ccti_min: 1,
    };
    let sent = CaCongestionSettingRepr {
        port_control: 1,
        control_map: 1 << 3,
        entries: [entry; 16],
    };
    let mut bytes = [0u8; 132];
    sent.emit(&mut CaCongestionSetting::new_unchecked(&mut bytes[..]));
    let set = cc(
        Method::Set,
        CcAttributeId::CaCongestionSetting,
        0,
        0,
        &bytes,
    );
    let response = ask(&mut emu, at, 0, &set).unwrap();
    assert_eq!(status(&response), Status::OK);
    let view = CaCongestionSetting::new_checked(&data(&response)[..132]).unwrap();
    let answered = CaCongestionSettingRepr::parse(&view).unwrap();
    let mut kept = CaCongestionSettingRepr {
        port_control: 1,
        control_map: 1 << 3,
        ..CaCongestionSettingRepr::default()
    };
    kept.entries[3] = entry;
    assert_eq!(answered, kept);
    let CongestionSettings::Ca(ca) = emu.congestion_agent(at).unwrap().settings else {
        panic!("a CA agent");
    };
    assert_eq!(ca.setting, kept);
    // The other port of H5 has an agent of its own.
    let CongestionSettings::Ca(other) = emu
        .congestion_agent(PortRef::new(at.node, 2))
        .unwrap()
        .settings
    else {
        panic!("a CA agent");
    };
    assert_eq!(other.setting, CaCongestionSettingRepr::default());
}

#[test]
fn a_table_block_goes_where_its_modifier_says_and_the_limit_must_index_the_table() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = ca_port(&t);
    let block = CongestionControlTableRepr {
        ccti_limit: 127,
        entries: std::array::from_fn(|i| CctEntry::new(0, i as u16)),
    };
    let mut bytes = [0u8; 132];
    block.emit(&mut CongestionControlTable::new_unchecked(&mut bytes[..]));
    let set = cc(
        Method::Set,
        CcAttributeId::CongestionControlTable,
        1,
        0,
        &bytes,
    );
    let response = ask(&mut emu, at, 0, &set).unwrap();
    assert_eq!(status(&response), Status::OK);
    let view = CongestionControlTable::new_checked(&data(&response)[..132]).unwrap();
    assert_eq!(CongestionControlTableRepr::parse(&view).unwrap(), block);
    let CongestionSettings::Ca(ca) = emu.congestion_agent(at).unwrap().settings else {
        panic!("a CA agent");
    };
    assert_eq!(ca.ccti_limit, 127);
    assert_eq!(ca.table[64..128], block.entries);
    assert_eq!(ca.table[..64], [CctEntry::default(); 64]);
    assert_eq!(ca.table.len(), usize::from(CONTROL_TABLE_CAP) * 64);

    let last = u32::from(CONTROL_TABLE_CAP) - 1;
    let get = cc(
        Method::Get,
        CcAttributeId::CongestionControlTable,
        last,
        0,
        &[],
    );
    assert_eq!(status(&ask(&mut emu, at, 0, &get).unwrap()), Status::OK);
    let beyond = cc(
        Method::Get,
        CcAttributeId::CongestionControlTable,
        last + 1,
        0,
        &[],
    );
    assert_eq!(
        status(&ask(&mut emu, at, 0, &beyond).unwrap()),
        Status::INVALID_VALUE
    );
    let too_long = CongestionControlTableRepr {
        ccti_limit: u16::from(CONTROL_TABLE_CAP) * 64,
        ..block
    };
    too_long.emit(&mut CongestionControlTable::new_unchecked(&mut bytes[..]));
    let set = cc(
        Method::Set,
        CcAttributeId::CongestionControlTable,
        0,
        0,
        &bytes,
    );
    assert_eq!(
        status(&ask(&mut emu, at, 0, &set).unwrap()),
        Status::INVALID_VALUE
    );
}

#[test]
fn info_log_and_timestamp_are_read_only_and_say_what_the_agent_is() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let (switch, ca) = (switch_port(&t), ca_port(&t));
    let info = |emu: &mut Emulator, at| {
        let get = cc(Method::Get, CcAttributeId::CongestionInfo, 0, 0, &[]);
        let response = ask(emu, at, 0, &get).unwrap();
        assert_eq!(status(&response), Status::OK);
        CongestionInfo::new_checked(&data(&response)[..4])
            .unwrap()
            .control_table_cap()
    };
    assert_eq!(info(&mut emu, switch), 0);
    assert_eq!(info(&mut emu, ca), CONTROL_TABLE_CAP);

    // 2.048 ms in: TimeStamp counts 1.024 us units.
    let get = cc(Method::Get, CcAttributeId::TimeStamp, 0, 0, &[]);
    let response = ask(&mut emu, ca, 2_048_000, &get).unwrap();
    let stamp = TimeStamp::new_checked(&data(&response)[..4])
        .unwrap()
        .timestamp();
    assert_eq!(stamp, 2000);

    let get = cc(Method::Get, CcAttributeId::CongestionLog, 0, 0, &[]);
    let response = ask(&mut emu, switch, 0, &get).unwrap();
    let log = CcMad::new_checked(&response[..]).unwrap();
    let log = SwitchCongestionLog::new_checked(log.log_and_data()).unwrap();
    assert_eq!(
        (log.log_type(), log.log_events_counter()),
        (LOG_TYPE_SWITCH, 0)
    );
    assert_eq!(log.current_time_stamp(), 2000);
    let response = ask(&mut emu, ca, 0, &get).unwrap();
    assert_eq!(response[32], LOG_TYPE_CA);

    for attribute in [
        CcAttributeId::CongestionInfo,
        CcAttributeId::CongestionLog,
        CcAttributeId::TimeStamp,
    ] {
        let set = cc(Method::Set, attribute, 0, 0, &[]);
        let response = ask(&mut emu, ca, 0, &set).unwrap();
        assert_eq!(
            status(&response),
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
            "{attribute:?}"
        );
    }
}

#[test]
fn an_agent_answers_as_a_real_one_to_what_it_does_not_take() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let (switch, ca) = (switch_port(&t), ca_port(&t));
    let cases = [
        (
            switch,
            CcAttributeId::CaCongestionSetting,
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
        (
            switch,
            CcAttributeId::CongestionControlTable,
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
        (
            ca,
            CcAttributeId::SwitchCongestionSetting,
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
        (
            ca,
            CcAttributeId::SwitchPortCongestionSetting,
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
        (
            ca,
            CcAttributeId::ClassPortInfo,
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
        (
            ca,
            CcAttributeId::from(0x00ff),
            Status::METHOD_ATTRIBUTE_UNSUPPORTED,
        ),
    ];
    for (at, attribute, expected) in cases {
        let get = cc(Method::Get, attribute, 0, 0, &[]);
        assert_eq!(
            status(&ask(&mut emu, at, 0, &get).unwrap()),
            expected,
            "{attribute:?}"
        );
    }
    let mut version_1 = cc(Method::Get, CcAttributeId::CongestionInfo, 0, 0, &[]);
    version_1[2] = 1;
    assert_eq!(
        status(&ask(&mut emu, ca, 0, &version_1).unwrap()),
        Status::BAD_VERSION
    );
    let send = cc(Method::Send, CcAttributeId::CongestionInfo, 0, 0, &[]);
    assert_eq!(
        status(&ask(&mut emu, ca, 0, &send).unwrap()),
        Status::METHOD_UNSUPPORTED
    );
    // A whole-attribute setting takes modifier 0 only.
    let get = cc(Method::Get, CcAttributeId::CaCongestionSetting, 1, 0, &[]);
    assert_eq!(
        status(&ask(&mut emu, ca, 0, &get).unwrap()),
        Status::INVALID_VALUE
    );
    // A response, a TrapRepress and a short MAD get no answer.
    let response = cc(Method::GetResp, CcAttributeId::CongestionInfo, 0, 0, &[]);
    assert_eq!(ask(&mut emu, ca, 0, &response), None);
    let repress = cc(
        Method::TrapRepress,
        CcAttributeId::CongestionInfo,
        0,
        0,
        &[],
    );
    assert_eq!(ask(&mut emu, ca, 0, &repress), None);
    let short = cc(Method::Get, CcAttributeId::CongestionInfo, 0, 0, &[]);
    assert_eq!(ask(&mut emu, ca, 0, &short[..255]), None);
}

fn key_info(key: u64, protect: bool, lease_period: u16) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    CongestionKeyInfoRepr {
        cc_key: key,
        protect,
        lease_period,
        violations: 0,
    }
    .emit(&mut CongestionKeyInfo::new_unchecked(&mut bytes[..]));
    bytes
}

fn read_key(response: &[u8]) -> CongestionKeyInfoRepr {
    CongestionKeyInfoRepr::parse(&CongestionKeyInfo::new_checked(&data(response)[..16]).unwrap())
        .unwrap()
}

#[test]
fn a_set_without_the_key_is_dropped_counted_and_starts_the_lease() {
    const KEY: u64 = 0x1122_3344_5566_7788;
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = ca_port(&t);
    // The key, protected, with a 2 s lease; set with no key, which a keyless agent takes.
    let set = cc(
        Method::Set,
        CcAttributeId::CongestionKeyInfo,
        0,
        0,
        &key_info(KEY, true, 2),
    );
    let response = ask(&mut emu, at, 0, &set).unwrap();
    assert_eq!(read_key(&response).cc_key, KEY);

    // A Set without the key: no answer, one violation, nothing changed.
    let table = cc(
        Method::Set,
        CcAttributeId::CaCongestionSetting,
        0,
        0,
        &[0, 1, 0xff, 0xff],
    );
    assert_eq!(ask(&mut emu, at, 1_000, &table), None);
    // A Get without it is answered, the key hidden by the protect bit.
    let get = cc(Method::Get, CcAttributeId::CongestionKeyInfo, 0, 0, &[]);
    let seen = read_key(&ask(&mut emu, at, 2_000, &get).unwrap());
    assert_eq!((seen.cc_key, seen.protect, seen.violations), (0, true, 1));
    let held = emu.congestion_agent(at).unwrap();
    assert_eq!(held.lease_end_ns, Some(1_000 + 2_000_000_000));
    let CongestionSettings::Ca(ca) = held.settings else {
        panic!("a CA agent");
    };
    assert_eq!(ca.setting.port_control, 0);

    // With the key the Set is taken and the lease stops.
    let keyed = cc(
        Method::Set,
        CcAttributeId::CaCongestionSetting,
        0,
        KEY,
        &[0, 1, 0, 0],
    );
    assert_eq!(
        status(&ask(&mut emu, at, 3_000, &keyed).unwrap()),
        Status::OK
    );
    assert_eq!(emu.congestion_agent(at).unwrap().lease_end_ns, None);

    // Another violation starts another lease; when it runs out the protect bit clears, and a Get
    // without the key reads the key.
    assert_eq!(ask(&mut emu, at, 4_000, &table), None);
    let seen = read_key(&ask(&mut emu, at, 4_000 + 2_000_000_000, &get).unwrap());
    assert_eq!(
        (seen.cc_key, seen.protect, seen.violations),
        (KEY, false, 2)
    );
}

/// A node the fault schedule leaves without an agent answers every CC MAD with status 0x0008,
/// as ibsim's switches answer a SwitchCongestionSetting Set, and keeps nothing.
#[test]
fn a_node_without_an_agent_answers_method_unsupported() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let at = switch_port(&t);
    let schedule =
        FaultSchedule::parse("faults.toml", "[[without_cc]]\nnode = \"S1\"\n", &t).unwrap();
    assert_eq!(schedule.without_cc, [at.node]);
    emu.schedule(&schedule);
    let setting = emit_switch(&switch_setting(SwitchControlMap(0x1f)));
    let set = cc(
        Method::Set,
        CcAttributeId::SwitchCongestionSetting,
        0,
        0,
        &setting,
    );
    let get = cc(Method::Get, CcAttributeId::CongestionInfo, 0, 0, &[]);
    for request in [set, get] {
        let response = ask(&mut emu, at, 0, &request).unwrap();
        assert_eq!(status(&response), Status::METHOD_UNSUPPORTED);
    }
    assert_eq!(emu.congestion_agent(at), None);
    // Another switch keeps its agent.
    let s2 = PortRef::new(node(&t, "S2"), 0);
    assert!(emu.congestion_agent(s2).is_some());
    let unknown = FaultSchedule::parse("faults.toml", "[[without_cc]]\nnode = \"S9\"\n", &t);
    assert!(unknown.is_err());
}
