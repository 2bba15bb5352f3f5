use ibqos_qos::partitions::{Members, Membership};
use ibqos_text::Code;

use super::*;

#[test]
fn a_line_above_4094_bytes_is_two_lines_for_opensm() {
    let mut text = format!("P=0x2 : ALL{} ;\n", " ".repeat(5000)).into_bytes();
    text.extend_from_slice(b"Q=0x3 : 0x0 ;\n");
    let error = read("p.conf", &text).expect_err("the GUID 0 is refused");
    assert_eq!(error.message, "PARSE ERROR: line 3: bad PortGUID");
    assert_eq!((error.location.line, error.location.col), (2, 9));
}

#[test]
fn a_definition_spans_lines_until_its_semicolon() {
    let read = read("p.conf", b"P=0x2,defmember=full :\n 0x1,\n 0x2=limited ;\n").expect("valid");
    let members = &read.partitions.partitions[0].members;
    assert_eq!(
        members.iter().map(|m| m.membership).collect::<Vec<_>>(),
        [Membership::Full, Membership::Limited]
    );
    assert_eq!(members[0].ports, Members::Port(ibqos_mad::Guid(1)));
}

#[test]
fn an_mgid_at_the_end_of_a_definition_swallows_the_next_one() {
    let read = read("p.conf", b"P=0x2 : ALL, mgid=ff15::1; Q=0x3 : ALL ;\n").expect("valid");
    assert_eq!(
        read.partitions.partitions.len(),
        1,
        "Q is read as P's flags"
    );
    assert!(
        read.diagnostics
            .iter()
            .any(|d| d.code == Code::PartitionsLineTrap)
    );
}
