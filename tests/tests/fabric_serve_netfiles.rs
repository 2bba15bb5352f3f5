//! Net files from `ibqos fabric gen`, and net files with `# ibqos:` QoS settings, load in the
//! real ibsim and in `ibqos fabric serve` alike, and an SM brings the served fabric up.
//!
//! A missing tool (ibsim, libumad2sim.so, smpquery) fails the test.

use std::process::Command;

use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::readback::{Readback, write_net_file};
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, NodeKind, SimTools, TestDir, Topology};

/// Writes the fabric `ibqos fabric gen <args>` generates into `dir`.
fn generate(ibqos: &std::path::Path, dir: &TestDir, name: &str, args: &[&str]) -> Topology {
    let path = dir.path().join(format!("{name}.net"));
    let status = Command::new(ibqos)
        .args(["fabric", "gen"])
        .args(args)
        .arg("-o")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "ibqos fabric gen {args:?}: {status}");
    Topology::load(&path).unwrap()
}

#[test]
fn generated_fabrics_load_in_ibsim_and_come_up_served() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-gen");
    let shapes: [(&str, &[&str]); 3] = [
        (
            "fat-tree",
            &[
                "fat-tree", "--leaves", "3", "--spines", "2", "--hosts", "2", "--radix", "8",
            ],
        ),
        ("ring", &["ring", "--switches", "4", "--hosts", "1"]),
        ("torus", &["torus", "--x", "3", "--y", "2", "--hosts", "1"]),
    ];
    for (name, args) in shapes {
        let topology = generate(&ibqos, &dir, name, args);
        let netfile = dir.path().join(format!("{name}.net"));
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        // ibsim refuses a net file it cannot parse: ready means it loaded.
        Ibsim::start(&tools, &netfile, &sub).unwrap();
        let host = topology
            .nodes()
            .find(|n| n.kind == NodeKind::Ca)
            .unwrap()
            .id
            .clone();
        let served = Ibsim::serve(&tools, &ibqos, &netfile, &host, &sub).unwrap();
        let sm = SmInvocation::new(SmFabric::Native, &host, &sub.join("cache"));
        let (_, summary) = sm.run_up(&ibqos, &served).unwrap();
        assert_eq!(
            summary.nodes,
            topology.nodes().count() as u64,
            "{name}: {summary:?}"
        );
    }
}

/// ibsim skips the trailing `# ibqos:` comments: the links, and the `w=3` before a comment,
/// are as without them.
#[test]
fn ibqos_settings_leave_ibsims_reading_unchanged() {
    let tools = SimTools::require();
    let dir = TestDir::new("fabric-netfile-ext");
    let text = "\
Switch\t4 \"S\"\t# \"sw\" enhanced port 0 # ibqos: optsl2vl=1 vlcap=4
[1]\t\"H\"[1]\tw=3 # ibqos: vlarb=64/16 mtucap=5
[2]\t\"H\"[2]

Ca\t2 \"H\"
[1]\t\"S\"[1]\tw=3 # ibqos: vlcap=2 slmap=0
[2]\t\"S\"[2]
";
    let netfile = write_net_file(dir.path(), "ext", text).unwrap();
    let topology = Topology::load(&netfile).unwrap();
    let ibsim = Ibsim::start(&tools, &netfile, dir.path()).unwrap();
    let rb = Readback::read(&tools, &ibsim, &topology, "H").unwrap();
    let linked = |(node, port): &(String, u8)| {
        topology
            .node(node)
            .is_some_and(|n| n.links.contains_key(port))
    };
    let up: Vec<_> = rb.ports.iter().filter(|(k, _)| linked(k)).collect();
    assert_eq!(up.len(), 4, "{:?}", rb.ports.keys());
    for (key, info) in up {
        assert_eq!(info.phys_link_state, "LinkUp", "{key:?}");
    }
    let s1 = &rb.ports[&("S".to_owned(), 1)];
    assert_eq!(s1.fields["LinkWidthEnabled"], "1X or 4X");
}
