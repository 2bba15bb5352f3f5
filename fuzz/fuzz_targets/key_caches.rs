//! Any bytes read as the SM's M_Key caches, guid2mkey and neighbors: the readers must answer
//! with entries and located problems, never panic; and what they read must survive a write and
//! a second read unchanged, with no problem.
#![no_main]

use ibqos_sm::mkey::{read_guid2mkey, read_neighbors, write_guid2mkey, write_neighbors};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let lines = text.lines().count();
    let (keys, problems) = read_guid2mkey(&text);
    assert!(problems.iter().all(|p| (1..=lines).contains(&p.line)));
    assert_eq!(read_guid2mkey(&write_guid2mkey(&keys)), (keys, Vec::new()));
    let (neighbors, problems) = read_neighbors(&text);
    assert!(problems.iter().all(|p| (1..=lines).contains(&p.line)));
    assert_eq!(read_neighbors(&write_neighbors(&neighbors)), (neighbors, Vec::new()));
});
