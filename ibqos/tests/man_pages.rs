//! The manual pages `ibqos generate-assets` writes, rendered by man(1) as a reader sees them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// Every page `generate-assets` writes, by file name, as `man -l` renders it 80 columns wide;
/// rendered once for all the tests.
fn rendered_pages() -> &'static BTreeMap<String, String> {
    static PAGES: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    PAGES.get_or_init(render_all)
}

fn render_all() -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .arg("generate-assets")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_dir(dir.path().join("man"))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, render(&path))
        })
        .collect()
}

/// `man -l PAGE`, failing on anything groff warns about.
fn render(page: &Path) -> String {
    let output = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .output()
        .expect("man(1) runs (Debian package man-db)");
    let warned = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && warned.is_empty(),
        "man -l {}: {warned}",
        page.display()
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The text of the section `title` of a rendered page: the indented lines under its heading,
/// up to the next heading (a line that starts in the first column).
fn section(page: &str, title: &str) -> Option<String> {
    let mut lines = page.lines().skip_while(|line| *line != title);
    lines.next()?;
    let body: Vec<&str> = lines
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .collect();
    Some(body.join("\n"))
}

#[test]
fn every_page_opens_with_a_name_line_that_says_what_it_is() {
    for (file, page) in rendered_pages() {
        let name = file.rsplit_once('.').unwrap().0;
        let line = section(page, "NAME").unwrap_or_else(|| panic!("{file}: no NAME\n{page}"));
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(line.starts_with(&format!("{name} - ")), "{file}: {line}");
        assert!(
            !line.contains(&format!("{name}:")),
            "{file}: the NAME line repeats the name: {line}"
        );
    }
}

#[test]
fn every_command_page_has_its_exit_status_and_examples_not_extra() {
    let pages = rendered_pages();
    for (file, page) in pages.iter().filter(|(file, _)| file.ends_with(".8")) {
        assert!(section(page, "EXIT STATUS").is_some(), "{file}\n{page}");
        assert!(section(page, "EXTRA").is_none(), "{file}\n{page}");
    }
    for file in [
        "ibqos.8",
        "ibqos-sm.8",
        "ibqos-check.8",
        "ibqos-sim.8",
        "ibqos-fabric-gen-fat-tree.8",
    ] {
        let examples = section(&pages[file], "EXAMPLES").unwrap_or_else(|| panic!("{file}"));
        assert!(examples.contains("ibqos "), "{file}: {examples}");
    }
}

#[test]
fn the_sm_page_says_what_each_signal_does_and_what_it_reads() {
    let pages = rendered_pages();
    let sm = &pages["ibqos-sm.8"];
    let signals = section(sm, "SIGNALS").expect(sm);
    for signal in ["SIGHUP", "SIGTERM", "SIGUSR1", "SIGCONT"] {
        assert!(signals.contains(signal), "{signal}: {signals}");
    }
    let files = section(sm, "FILES").expect(sm);
    assert!(
        files.contains("guid2lid") && files.contains("opensm.conf"),
        "{files}"
    );
    let environment = section(sm, "ENVIRONMENT").expect(sm);
    assert!(environment.contains("OSM_CACHE_DIR"), "{environment}");
}

#[test]
fn the_traffic_file_has_its_own_page() {
    let pages = rendered_pages();
    let traffic = &pages["ibqos-traffic.5"];
    for title in [
        "NAME",
        "DESCRIPTION",
        "[link]",
        "[arbiter]",
        "[[flow]]",
        "[[pattern]]",
        "EXAMPLES",
    ] {
        assert!(section(traffic, title).is_some(), "{title}\n{traffic}");
    }
    let sim = section(&pages["ibqos-sim.8"], "SEE ALSO").unwrap();
    assert!(sim.contains("ibqos-traffic(5)"), "{sim}");
}
