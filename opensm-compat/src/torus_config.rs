//! torus-2QoS.conf, the file `torus_config` names: the torus-2QoS engine's radix per dimension
//! and the seed switches it builds the torus from, read as OpenSM's `parse_config`
//! (`osm_torus.c`) reads it.
//!
//! OpenSM reads the file line by line (`getline`) and splits each line into tokens at spaces,
//! tabs, CRs and newlines (`strtok`). The first token is the keyword; a line whose keyword
//! starts with `#` is a comment. A keyword reads the tokens it needs and the rest of the line
//! is ignored, except `port_order`, which reads every token left, a comment's words included.
//! Numbers go through `strtoul`/`strtoull`/`strtol` unchecked: `abc` is 0. A line OpenSM
//! rejects does not stop the reading, but at its end the engine fails (`ERR 4E13`), and the
//! next engine of `routing_engine` routes.

use ibqos_text::cnum::{self, CNum};
use ibqos_text::{Code, Diagnostic, Location, MAX_PER_CODE};

/// OpenSM's compiled-in `torus_config` (`OSM_DEFAULT_TORUS_CONF_FILE`).
pub const DEFAULT_TORUS_CONFIG: &str = "/etc/opensm/torus-2QoS.conf";

/// OpenSM's default `portgroup_max_ports` (`PORTGRP_MAX_PORTS`).
const DEFAULT_PORTGROUP_MAX_PORTS: u32 = 16;
/// OpenSM's default `max_changes` (`DEFAULT_MAX_CHANGES`).
const DEFAULT_MAX_CHANGES: u32 = 32;
/// The entries of OpenSM's `port_order` array: every port number a switch can have.
pub const PORT_ORDER_LEN: usize = 255;
/// The most switches ibqos accepts in a torus: more than the unicast LIDs could address.
/// OpenSM would try to allocate them; ibqos refuses the line.
const MAX_SWITCHES: u64 = 0xC000;

/// The three dimensions, x, y and z, by index.
pub const DIMENSIONS: [char; 3] = ['x', 'y', 'z'];

/// One seed: the links that fix the coordinate directions around a common switch, and where
/// the datelines lie relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorusSeed {
    /// Per dimension, the `Xm_link` (index 0) and `Xp_link` (index 1): the NodeGUIDs of the
    /// switch a link leaves and the switch it reaches in that direction.
    pub links: [[Option<(u64, u64)>; 2]; 3],
    /// Per dimension, `X_dateline`: how far the origin moves from the seed's common switch.
    pub dateline: [i32; 3],
}

/// The torus a torus-2QoS.conf describes, with OpenSM's default for what it does not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorusConfig {
    /// The radix of x, y and z (`torus` or `mesh`); 0 when the file gives none.
    pub radix: [u32; 3],
    /// Whether each dimension is a mesh (open) rather than a ring. A radix of 2 is always one.
    pub mesh: [bool; 3],
    /// The seeds, in file order (`next_seed` starts the next).
    pub seeds: Vec<TorusSeed>,
    /// `portgroup_max_ports`: the most parallel links, or host ports, one switch may group.
    pub portgroup_max_ports: u32,
    /// `port_order`: the order CA ports of a destination switch are routed in, every port
    /// number 0..255 once (the listed ones first).
    pub port_order: Vec<u32>,
    /// `max_changes`: how many torus changes OpenSM logs.
    pub max_changes: u32,
    /// OpenSM's error line when it could not read the file, or rejected a line of it: the
    /// engine then fails.
    pub failure: Option<String>,
}

impl Default for TorusConfig {
    fn default() -> TorusConfig {
        TorusConfig {
            radix: [0; 3],
            mesh: [false; 3],
            seeds: Vec::new(),
            portgroup_max_ports: DEFAULT_PORTGROUP_MAX_PORTS,
            port_order: (0..PORT_ORDER_LEN as u32).collect(),
            max_changes: DEFAULT_MAX_CHANGES,
            failure: None,
        }
    }
}

/// A torus-2QoS.conf as OpenSM reads it, and what to know about how it reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorusConfigFile {
    pub config: TorusConfig,
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads the torus-2QoS.conf at `path` as OpenSM does when torus-2QoS routes.
pub fn load(path: &str) -> TorusConfigFile {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes),
        Err(error) => {
            let reason = crate::load::strerror(&error);
            TorusConfigFile {
                config: TorusConfig {
                    failure: Some(format!("ERR 4E11: Opening {path}: {reason}")),
                    ..TorusConfig::default()
                },
                diagnostics: vec![
                    Diagnostic::error(
                        Code::TorusConfigUnreadable,
                        format!("cannot read torus_config {path}: {reason}"),
                    )
                    .at(Some(Location::whole_file(path)))
                    .with_help(ENGINE_FAILS),
                ],
            }
        }
    }
}

const ENGINE_FAILS: &str = "torus-2QoS fails, and the next engine of routing_engine routes";

/// Reads `bytes`, the content of the torus-2QoS.conf `name` (used in locations).
pub fn parse(name: &str, bytes: &[u8]) -> TorusConfigFile {
    let mut reader = Reader {
        name,
        bytes,
        file: TorusConfigFile {
            config: TorusConfig::default(),
            diagnostics: Vec::new(),
        },
        sized: false,
        misread: 0,
    };
    let mut start = 0;
    let mut number = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |at| start + at);
        number += 1;
        reader.line(start, end, number);
        start = end + 1;
    }
    reader.file
}

/// One token of a line: `bytes[start..end]` of the file.
#[derive(Debug, Clone, Copy)]
struct Token {
    start: usize,
    end: usize,
}

struct Reader<'a> {
    name: &'a str,
    bytes: &'a [u8],
    file: TorusConfigFile,
    /// A `torus` or `mesh` line was read: OpenSM refuses another.
    sized: bool,
    /// Numbers warned of so far, capped.
    misread: usize,
}

impl<'a> Reader<'a> {
    fn line(&mut self, start: usize, end: usize, number: usize) {
        // The C string ends at its first NUL.
        let end = self.bytes[start..end]
            .iter()
            .position(|&b| b == 0)
            .map_or(end, |at| start + at);
        let mut tokens = self.bytes[start..end]
            .split(|b| matches!(b, b' ' | b'\t' | b'\r'))
            .scan(start, |at, piece| {
                let token = Token {
                    start: *at,
                    end: *at + piece.len(),
                };
                *at = token.end + 1;
                Some(token)
            })
            .filter(|t| t.end > t.start);
        let Some(keyword) = tokens.next() else {
            return;
        };
        let word = self.text(keyword).to_vec();
        if word.first() == Some(&b'#') {
            return;
        }
        let accepted = match word.as_slice() {
            b"torus" => self.size(&mut tokens, false),
            b"mesh" => self.size(&mut tokens, true),
            b"port_order" => self.port_order(&mut tokens, end),
            b"next_seed" => {
                self.file.config.seeds.push(TorusSeed::default());
                true
            }
            b"portgroup_max_ports" => self
                .unsigned(&mut tokens)
                .map(|n| self.file.config.portgroup_max_ports = n)
                .is_some(),
            b"max_changes" => self
                .unsigned(&mut tokens)
                .map(|n| self.file.config.max_changes = n)
                .is_some(),
            _ => match Self::seed_keyword(&word) {
                Some((dim, SeedKeyword::Link(plus))) => self.link(&mut tokens, dim, plus),
                Some((dim, SeedKeyword::Dateline)) => self.dateline(&mut tokens, dim, number),
                None => {
                    let at = self.at(keyword);
                    self.fail(
                        format!("ERR 4E12: no keyword found: line {number}"),
                        format!(
                            "`{}` is no torus-2QoS.conf keyword",
                            String::from_utf8_lossy(&word)
                        ),
                        at,
                    );
                    return;
                }
            },
        };
        if accepted {
            if let Some(extra) = tokens.next() {
                self.ignored(extra, end);
            }
        } else {
            let at = self.at(keyword);
            let word = String::from_utf8_lossy(&word).into_owned();
            self.fail(
                format!("ERR 4E13: parsing '{word}': line {number}"),
                format!("OpenSM cannot read this `{word}` line"),
                at,
            );
        }
    }

    fn seed_keyword(word: &[u8]) -> Option<(usize, SeedKeyword)> {
        let dim = DIMENSIONS
            .iter()
            .position(|&d| word.first() == Some(&(d as u8)))?;
        match &word[1..] {
            b"p_link" => Some((dim, SeedKeyword::Link(true))),
            b"m_link" => Some((dim, SeedKeyword::Link(false))),
            b"_dateline" => Some((dim, SeedKeyword::Dateline)),
            _ => None,
        }
    }

    fn text(&self, token: Token) -> &'a [u8] {
        &self.bytes[token.start..token.end]
    }

    fn at(&self, token: Token) -> Option<Location> {
        Some(Location::in_source(
            self.name,
            self.bytes,
            token.start,
            token.end,
        ))
    }

    /// OpenSM rejects the line: the engine will fail with the first such `opensm` line.
    fn fail(&mut self, opensm: String, message: String, at: Option<Location>) {
        let config = &mut self.file.config;
        config.failure.get_or_insert(opensm.clone());
        self.file.diagnostics.push(
            Diagnostic::error(Code::TorusConfigFails, format!("{message} ({opensm})"))
                .at(at)
                .with_help(ENGINE_FAILS),
        );
    }

    /// Tokens after what the keyword reads, which OpenSM ignores.
    fn ignored(&mut self, from: Token, line_end: usize) {
        if self.text(from).first() == Some(&b'#') {
            return;
        }
        let at = Location::in_source(self.name, self.bytes, from.start, line_end);
        self.file.diagnostics.push(
            Diagnostic::warning(
                Code::TorusConfigIgnored,
                "OpenSM ignores the rest of this line",
            )
            .at(Some(at))
            .with_help("start a comment with `#`"),
        );
    }

    /// A number read with `strtoul`/`strtol` base 0, warned of when it is not all a number.
    fn number(&mut self, token: Token) -> CNum {
        let text = self.text(token);
        let scanned = cnum::scan(text, 0);
        if scanned.end != text.len() && self.misread < MAX_PER_CODE {
            self.misread += 1;
            let value = if scanned.negative {
                scanned.strtol().to_string()
            } else {
                scanned.strtoul().to_string()
            };
            let at = self.at(token);
            self.file.diagnostics.push(
                Diagnostic::warning(
                    Code::TorusConfigIgnored,
                    format!(
                        "`{}` is not a number: OpenSM reads {value}",
                        String::from_utf8_lossy(text)
                    ),
                )
                .at(at),
            );
        }
        scanned
    }

    fn unsigned(&mut self, tokens: &mut impl Iterator<Item = Token>) -> Option<u32> {
        let token = tokens.next()?;
        // `unsigned` keeps the low 32 bits of strtoul's `unsigned long`.
        Some(self.number(token).strtoul() as u32)
    }

    /// `torus` or `mesh` with its three radixes (`parse_torus`, `parse_size`).
    fn size(&mut self, tokens: &mut impl Iterator<Item = Token>, mesh: bool) -> bool {
        if self.sized {
            return false;
        }
        let mut radix = [0; 3];
        let mut meshes = [mesh; 3];
        for dim in 0..3 {
            let Some(token) = tokens.next() else {
                return false;
            };
            let scanned = cnum::scan(self.text(token), 0);
            radix[dim] = scanned.strtoul() as u32;
            if radix[dim] != 0 {
                match self.text(token).get(scanned.end) {
                    Some(b't' | b'T') => meshes[dim] = false,
                    Some(b'm' | b'M') => meshes[dim] = true,
                    _ => {}
                }
            }
            // A ring of two switches is also a mesh with parallel links; OpenSM always takes
            // it as the mesh.
            meshes[dim] |= radix[dim] == 2;
        }
        let switches = radix.iter().map(|&r| u64::from(r)).product::<u64>();
        if switches > MAX_SWITCHES {
            return false;
        }
        let config = &mut self.file.config;
        config.radix = radix;
        config.mesh = meshes;
        self.sized = true;
        true
    }

    /// `port_order`: every token left on the line is a port (`parse_port_order`).
    fn port_order(&mut self, tokens: &mut impl Iterator<Item = Token>, line_end: usize) -> bool {
        let mut listed: Vec<u32> = Vec::new();
        let mut in_comment = false;
        for token in tokens.by_ref() {
            if listed.len() == PORT_ORDER_LEN {
                break;
            }
            if self.text(token).first() == Some(&b'#') && !in_comment {
                in_comment = true;
                let at = Location::in_source(self.name, self.bytes, token.start, line_end);
                self.file.diagnostics.push(
                    Diagnostic::warning(
                        Code::TorusConfigIgnored,
                        "OpenSM reads the words of this comment as ports",
                    )
                    .at(Some(at))
                    .with_help("put the comment on a line of its own"),
                );
            }
            let port = if in_comment {
                cnum::scan(self.text(token), 0).strtoul()
            } else {
                self.number(token).strtoul()
            };
            // `unsigned` keeps the low 32 bits.
            let port = port as u32;
            if !listed.contains(&port) {
                listed.push(port);
            }
        }
        let rest: Vec<u32> = (0..PORT_ORDER_LEN as u32)
            .filter(|p| !listed.contains(p))
            .collect();
        listed.extend(rest);
        // OpenSM's array holds 255 ports; a listed port beyond 254 would overflow it, which
        // ibqos cuts instead. The engine refuses such a port (ERR 4E21) in any case.
        listed.truncate(PORT_ORDER_LEN);
        self.file.config.port_order = listed;
        true
    }

    /// The seed the next link or dateline keyword fills.
    fn seed(&mut self) -> &mut TorusSeed {
        let seeds = &mut self.file.config.seeds;
        if seeds.is_empty() {
            seeds.push(TorusSeed::default());
        }
        let last = seeds.len() - 1;
        &mut seeds[last]
    }

    fn link(&mut self, tokens: &mut impl Iterator<Item = Token>, dim: usize, plus: bool) -> bool {
        self.seed();
        let (Some(from), Some(to)) = (tokens.next(), tokens.next()) else {
            return false;
        };
        let from = self.number(from).strtoul();
        let to = self.number(to).strtoul();
        self.seed().links[dim][usize::from(plus)] = Some((from, to));
        true
    }

    fn dateline(
        &mut self,
        tokens: &mut impl Iterator<Item = Token>,
        dim: usize,
        number: usize,
    ) -> bool {
        self.seed();
        let Some(token) = tokens.next() else {
            return false;
        };
        // `int` keeps the low 32 bits of strtol's `long`.
        let value = self.number(token).strtol() as i32;
        self.seed().dateline[dim] = value;
        let max = i64::from(self.file.config.radix[dim]);
        let value = i64::from(value);
        if value <= -max || value >= max {
            let at = self.at(token);
            let d = DIMENSIONS[dim];
            self.fail(
                format!(
                    "ERR 4E10: dateline value for coordinate direction {} must be {} < dl < {}",
                    dim + 1,
                    -max,
                    max
                ),
                format!("the {d} dateline must lie within the {d} radix (line {number})"),
                at,
            );
        }
        true
    }
}

enum SeedKeyword {
    /// `Xp_link` (true) or `Xm_link`.
    Link(bool),
    Dateline,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::located_codes;

    fn read(text: &str) -> TorusConfigFile {
        parse("torus-2QoS.conf", text.as_bytes())
    }

    /// The example of torus-2QoS.conf(5), read as OpenSM reads it.
    #[test]
    fn the_manual_example_reads_as_opensm_reads_it() {
        let file = read(
            "# Look for a 2D (since x radix is one) 4x5 torus.\n\
             torus 1 4 5\n\n\
             yp_link 0x200000 0x200005  # sw @ y=0,z=0 -> sw @ y=1,z=0\n\
             ym_link 0x200000 0x20000f\n\
             zp_link 0x200000 0x200001\n\
             next_seed\n\
             yp_link 0x20000b 0x200010\n\
             y_dateline -2  # Move the dateline\n\
             z_dateline -1\n",
        );
        assert!(file.diagnostics.is_empty(), "{:?}", file.diagnostics);
        let config = &file.config;
        assert_eq!(config.failure, None);
        assert_eq!(config.radix, [1, 4, 5]);
        assert_eq!(config.mesh, [false; 3]);
        assert_eq!(config.seeds.len(), 2);
        assert_eq!(
            config.seeds[0].links[1],
            [Some((0x200000, 0x20000f)), Some((0x200000, 0x200005))]
        );
        assert_eq!(config.seeds[0].links[2][1], Some((0x200000, 0x200001)));
        assert_eq!(config.seeds[1].dateline, [0, -2, -1]);
        assert_eq!(config.port_order[..3], [0, 1, 2]);
    }

    #[test]
    fn radix_suffixes_and_two_make_meshes() {
        let config = read("mesh 3T 4 2t\n").config;
        assert_eq!(
            (config.radix, config.mesh),
            ([3, 4, 2], [false, true, true])
        );
        let config = read("torus 3 4M 5\n").config;
        assert_eq!(config.mesh, [false, true, false]);
    }

    /// A rejected line does not stop the reading, but the engine fails with OpenSM's words.
    #[test]
    fn rejected_lines_fail_the_engine() {
        let file = read("torus 4 4 1\nxp_link 0x1\nfoo bar\ntorus 2 2 2\nx_dateline 4\n");
        assert_eq!(
            file.config.failure.as_deref(),
            Some("ERR 4E13: parsing 'xp_link': line 2")
        );
        assert_eq!(
            located_codes(&file.diagnostics),
            [
                ("torus-config-fails", 2, 1),
                ("torus-config-fails", 3, 1),
                ("torus-config-fails", 4, 1),
                ("torus-config-fails", 5, 12),
            ]
        );
        assert!(file.diagnostics[3].message.contains("must be -4 < dl < 4"));
        assert_eq!(file.config.radix, [4, 4, 1]);
    }

    /// `port_order` reads a trailing comment as port 0; duplicates are dropped.
    #[test]
    fn port_order_reads_every_token() {
        let file = read("port_order 3 1 3 # first\n");
        assert_eq!(file.config.port_order[..4], [3, 1, 0, 2]);
        assert_eq!(file.config.port_order.len(), PORT_ORDER_LEN);
        assert_eq!(
            located_codes(&file.diagnostics),
            [("torus-config-ignored", 1, 18)]
        );
    }

    #[test]
    fn unchecked_numbers_and_extra_tokens_are_warned_of() {
        let file = read("portgroup_max_ports 8x\nmax_changes 4 5\n");
        assert_eq!(file.config.portgroup_max_ports, 8);
        assert_eq!(file.config.max_changes, 4);
        assert_eq!(
            located_codes(&file.diagnostics),
            [
                ("torus-config-ignored", 1, 21),
                ("torus-config-ignored", 2, 15)
            ]
        );
    }

    #[test]
    fn an_unreadable_file_fails_the_engine() {
        let file = load("/nonexistent/torus-2QoS.conf");
        assert_eq!(
            file.config.failure.as_deref(),
            Some("ERR 4E11: Opening /nonexistent/torus-2QoS.conf: No such file or directory")
        );
        assert_eq!(file.diagnostics[0].code, Code::TorusConfigUnreadable);
    }

    #[test]
    fn any_bytes_read_without_panic() {
        for bytes in [
            &b""[..],
            b"\xff\xfe",
            b"torus",
            b"torus 99999 99999 99999",
            b"x_dateline -2147483649",
            b"port_order 300 -1 0x",
            b"next_seed\nnext_seed\nzm_link\n",
            b"\0torus\n",
        ] {
            parse("t", bytes);
        }
    }
}
