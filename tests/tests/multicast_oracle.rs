//! Multicast against OpenSM as the oracle, on ibsim. A host client of our own
//! (tests/src/multicast.rs) sends the same sequence of joins, creates, leaves and re-joins to
//! OpenSM and to ibqos. Each SM runs on a fresh ibsim of the two-switch fabric with the same
//! partitions.conf. After each step, the SA's answer (status and record) must be the same. So must
//! every switch's multicast forwarding table, read back with `ibroute -M`. At the peak of the
//! sequence, `saquery -g` and `saquery -m` must print the same groups and members. `osmtest -f m`
//! (OpenSM's multicast flow) must end the same way with the same log. The same client and sequence
//! then run against ibqos on the emulated fabric (`ibqos fabric serve`). There they must give the
//! same steps and saquery answers as OpenSM's on ibsim.
//!
//! `IBQOS_SA_SUBJECT=opensm` runs OpenSM against itself: the harness's self-check;
//! `IBQOS_SA_ORACLE_OUT=DIR` writes both SMs' steps under `DIR/multicast/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ibqos_mad::Gid;
use ibqos_mad::sa::{JoinState, McMemberRecordRepr};
use ibqos_tests::TestDir;
use ibqos_tests::multicast::{IPOIB_BROADCAST, McAnswer, McClient, blank_record, settled_mfts};
use ibqos_tests::sa::{
    Backend, Flow, OUT_VAR, Query, SaTools, Session, SmKind, SmSetup, assert_same_answers_with,
    compare, unified_diff,
};
use ibqos_tests::scenario::{Fabric, testdata};

/// The Default partition with its IPoIB broadcast group, as most clusters run.
const PARTITIONS: &str = "Default=0x7fff,ipoib : ALL=full ;\n";

const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The masks clients send (IBA 15.2.5.17 ComponentMask bits).
mod mask {
    pub const MGID: u64 = 1 << 0;
    pub const PORT_GID: u64 = 1 << 1;
    pub const Q_KEY: u64 = 1 << 2;
    pub const TCLASS: u64 = 1 << 6;
    pub const SL: u64 = 1 << 12;
    pub const FLOW_LABEL: u64 = 1 << 13;
    pub const JOIN_STATE: u64 = 1 << 16;
    pub use ibqos_tests::multicast::IPOIB_JOIN;
    /// What a create must give (OpenSM's 0x130C7).
    pub const CREATE: u64 = IPOIB_JOIN | Q_KEY | TCLASS | SL | FLOW_LABEL;
    /// A leave: the group, the port and the states to drop.
    pub const LEAVE: u64 = MGID | PORT_GID | JOIN_STATE;
}

/// One step of the sequence: which host, what it sends.
#[derive(Debug, Clone, Copy)]
enum Step {
    JoinBroadcast(&'static str),
    LeaveBroadcast(&'static str),
    /// A new group with MGID 0: the SM allocates one.
    Create(&'static str),
    /// A join of the group the last create made.
    JoinCreated(&'static str),
    LeaveCreated(&'static str),
}

const SEQUENCE: [Step; 12] = [
    Step::JoinBroadcast("H3"),
    Step::JoinBroadcast("H4"),
    Step::JoinBroadcast("H2"),
    Step::Create("H3"),
    Step::JoinCreated("H5"),
    Step::LeaveBroadcast("H4"),
    Step::LeaveBroadcast("H3"),
    Step::JoinBroadcast("H4"),
    Step::LeaveCreated("H5"),
    Step::LeaveCreated("H3"),
    Step::LeaveBroadcast("H2"),
    Step::LeaveBroadcast("H4"),
];

/// After this step, the saquery comparisons run (the most groups and members).
const PEAK: usize = 4;

fn describe(answer: &McAnswer) -> String {
    match &answer.record {
        Some(r) => format!(
            "status {:#06x} mgid {:032x} mlid {:#06x} qkey {:#x} pkey {:#06x} mtu {:?}/{:?} rate {:?}/{:?} life {:?}/{} sl {} flow {:#x} hop {} scope {} join {:?} proxy {}",
            answer.status.0,
            r.mgid.0,
            r.mlid,
            r.q_key,
            r.p_key,
            r.mtu_selector,
            r.mtu,
            r.rate_selector,
            r.rate,
            r.packet_life_selector,
            r.packet_life,
            r.sl,
            r.flow_label,
            r.hop_limit,
            r.scope,
            r.join_state,
            r.proxy_join
        ),
        None => format!("status {:#06x}", answer.status.0),
    }
}

/// Runs the sequence against one SM; what it saw, one block per step, and the saquery and
/// osmtest transcripts.
fn run(
    backend: Backend,
    kind: SmKind,
    label: &str,
    tools: &SaTools,
    fabric: &Fabric,
    dir: &TestDir,
) -> (String, Vec<ibqos_tests::sa::Transcript>) {
    let setup = SmSetup {
        partitions: Some(PARTITIONS),
        ..SmSetup::default()
    };
    let session =
        Session::start_on(backend, kind, tools, fabric, &setup, &dir.subdir(label)).unwrap();
    let sm_lid = session.lids[&(fabric.sm_node.clone(), 1)];
    let mut clients: BTreeMap<&str, McClient> = BTreeMap::new();
    let mut created = None;
    let mut text = String::new();
    let mut transcripts = Vec::new();
    for (number, step) in SEQUENCE.iter().enumerate() {
        let host = match step {
            Step::JoinBroadcast(h)
            | Step::LeaveBroadcast(h)
            | Step::Create(h)
            | Step::JoinCreated(h)
            | Step::LeaveCreated(h) => *h,
        };
        let client = clients
            .entry(host)
            .or_insert_with(|| McClient::connect(session.sim(), host, sm_lid).unwrap());
        let mut record = McMemberRecordRepr {
            port_gid: client.port_gid(PREFIX),
            join_state: JoinState::FULL,
            ..blank_record()
        };
        let answer = match step {
            Step::JoinBroadcast(_) => {
                record.mgid = IPOIB_BROADCAST;
                record.p_key = 0xffff;
                client.join(mask::IPOIB_JOIN, record)
            }
            Step::LeaveBroadcast(_) => {
                record.mgid = IPOIB_BROADCAST;
                client.leave(mask::LEAVE, record)
            }
            Step::Create(_) => {
                record.p_key = 0xffff;
                record.q_key = 0x1234_5678;
                client.join(mask::CREATE, record)
            }
            Step::JoinCreated(_) => {
                record.mgid = created.unwrap_or(Gid(0));
                record.p_key = 0xffff;
                client.join(mask::IPOIB_JOIN, record)
            }
            Step::LeaveCreated(_) => {
                record.mgid = created.unwrap_or(Gid(0));
                client.leave(mask::LEAVE, record)
            }
        }
        .unwrap_or_else(|e| {
            panic!(
                "{kind}, step {number} {step:?}: {e}\n{}",
                session.sm_output()
            )
        });
        if let (Step::Create(_), Some(r)) = (step, &answer.record) {
            created = Some(r.mgid);
        }
        writeln!(text, "step {number}: {step:?}: {}", describe(&answer)).unwrap();
        for ((switch, mlid), ports) in settled_mfts(&session, fabric, tools).unwrap() {
            writeln!(text, "  {switch} {mlid:#06x} {ports:?}").unwrap();
        }
        if number == PEAK {
            for query in [Query::saquery("-g"), Query::saquery("-m")] {
                transcripts.push(session.run(&query).unwrap());
            }
        }
    }
    transcripts.push(session.run(&Query::Osmtest(Flow::Inventory)).unwrap());
    transcripts.push(session.run(&Query::Osmtest(Flow::Multicast)).unwrap());
    (text, transcripts)
}

#[test]
fn joins_leaves_and_their_forwarding_tables_are_opensms() {
    let tools = SaTools::require();
    let dir = TestDir::new("multicast-oracle");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let (reference, reference_queries) = run(
        Backend::Ibsim,
        SmKind::OpenSm,
        "reference",
        &tools,
        &fabric,
        &dir,
    );
    let subject = SmKind::subject();
    let (ours, our_queries) = run(Backend::Ibsim, subject, "subject", &tools, &fabric, &dir);
    if let Some(out) = std::env::var_os(OUT_VAR) {
        let out = std::path::Path::new(&out).join("multicast");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("reference-steps.txt"), &reference).unwrap();
        std::fs::write(out.join("subject-steps.txt"), &ours).unwrap();
        for (label, transcripts) in [("reference", &reference_queries), ("subject", &our_queries)] {
            let text: String = transcripts.iter().map(|t| t.raw.clone()).collect();
            std::fs::write(out.join(format!("{label}-queries.txt")), text).unwrap();
        }
    }
    assert!(
        reference.contains("0xc000 ["),
        "the sequence must leave forwarding entries at some step:\n{reference}"
    );
    let mut wrong = Vec::new();
    let diff = unified_diff(&reference, &ours, 3);
    if !diff.is_empty() {
        wrong.push(format!("the steps differ (- OpenSM, + {subject}):\n{diff}"));
    }
    wrong.extend(compare(
        SmKind::OpenSm,
        &reference_queries,
        subject,
        &our_queries,
    ));
    // The same client and sequence on the emulated fabric (`ibqos fabric serve`), with ibqos.
    let (emulated, emulated_queries) = run(
        Backend::Served,
        SmKind::Ibqos,
        "emulated",
        &tools,
        &fabric,
        &dir,
    );
    let diff = unified_diff(&reference, &emulated, 3);
    if !diff.is_empty() {
        wrong.push(format!(
            "the steps differ on the emulated fabric (- OpenSM on ibsim, + ibqos):\n{diff}"
        ));
    }
    // saquery -g and -m; osmtest reads an inventory of the fabric, whose GUIDs and descriptions
    // are the emulator's own.
    wrong.extend(compare(
        SmKind::OpenSm,
        &reference_queries[..2],
        SmKind::Ibqos,
        &emulated_queries[..2],
    ));
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The Default partition defined first, then partitions of lower P_Keys, each with IPoIB:
/// OpenSM gives the groups MLIDs in the order it creates them, which is the file's (0xC000
/// to the Default partition's broadcast group), not in P_Key order. The partition of a port
/// the fabric lacks is dropped for having no member, but only once the file is read: its
/// group holds an MLID until then, which the groups after it skip.
const DEFAULT_FIRST: &str = "\
Default=0x7fff, ipoib : ALL=full ;
absent=0x0005, ipoib : 0x0002c9000000dead=full ;
storage=0x0010, ipoib : ALL=full ;
compute=0x0002, ipoib, mtu=5 : ALL_CAS=limited ;
";

/// `osmtest -f m` on a fabric nobody joined yet, with and without the Default partition's
/// IPoIB group (osmtest runs another flow when it finds one), and with the Default partition
/// first among several: the same checks, statuses, ending and `saquery -g` as against
/// OpenSM.
#[test]
fn osmtest_multicast_flow_on_a_fresh_fabric_is_opensms() {
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let flow = |_: &Fabric, _: &ibqos_tests::sa::Lids| {
        vec![
            Query::Osmtest(Flow::Inventory),
            Query::Osmtest(Flow::Multicast),
            Query::saquery("-g"),
        ]
    };
    for (group, partitions) in [
        ("multicast-ipoib", PARTITIONS),
        ("multicast-no-ipoib", "Default=0x7fff : ALL=full ;\n"),
        ("multicast-default-first", DEFAULT_FIRST),
    ] {
        let setup = SmSetup {
            partitions: Some(partitions),
            ..SmSetup::default()
        };
        assert_same_answers_with(&setup, std::slice::from_ref(&fabric), group, flow);
    }
}
