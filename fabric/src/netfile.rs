//! ibsim / ibnetdiscover net files: a reader that builds the fabric ibsim 0.10 builds from the same
//! text, and a writer whose output ibsim accepts and that reads back to the same [`Topology`].
//!
//! The reader mirrors `ibsim/sim_net.c` (`parse_netconf`, `parse_switch`, `parse_endnode`,
//! `parse_port`, `connect_ports`), including its quirks, because an SM tested against ibsim must
//! see exactly the GUIDs and port numbers ibsim answers with:
//! - directives are matched by prefix (`caguid...`, `do...`), unknown lines are ignored;
//! - a node record ends at the first line that is not a port line, and **that line is consumed**
//!   (so a directive written directly after a record's last listed port is lost unless every port
//!   of the node was listed); we report such a line as [`NetNote::EatenLine`];
//! - numbers are read the way `strtoul(.., 0)` reads them (`0x` hex, leading `0` octal) and stop
//!   at the first non-digit, so `switchguid=0x10(10)` works as in ibnetdiscover output;
//! - a link must be declared on both ends, except an alias link (`"name@alias"` referring to an
//!   `@[p] "alias"` line), which is declared on the referring end only.
//!
//! Deliberate differences, each an error where ibsim would silently do something else: lines
//! longer than 254 characters (ibsim splits them), ids longer than 64 characters (ibsim
//! truncates), and include depth beyond 9 open files (ibsim overruns an array). `include` paths
//! are resolved relative to the including file, where ibsim resolves them against its working
//! directory; the two agree when ibsim runs from the file's directory. `do` lines are not run;
//! they are reported as [`NetNote::IgnoredCommand`]. Validation ranges are those of ibsim 0.10:
//! `s=` 1..=7 and `e=`/`extspeed=` 0..=7 (0.12 widened both).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io;
use std::path::{Path, PathBuf};

use ibqos_text::cnum::{atoi, scan, strtoull};
use ibqos_text::{Code, Coded, Located, Location, Severity};

use crate::topology::{
    LINK_SPEED_SDR, LINK_WIDTH_4X, Node, NodeId, NodeKind, PortRef, Topology, TopologyError,
};

/// ibsim's `MAX_INCLUDE`: files open at once, the top file included.
const MAX_INCLUDE: usize = 9;
/// ibsim reads at most 255 bytes per line, the newline included.
const MAX_LINE: usize = 254;
/// `NODEIDLEN - 1`.
const MAX_ID: usize = 64;
/// `NODEPREFIX`.
const MAX_PREFIX: usize = 20;
/// NodeDescription is 64 bytes; ibsim copies at most 63.
const MAX_DESC: usize = 63;
/// Default GUID bases (`absguids` in sim_net.c), by [`NodeKind`].
const DEFAULT_CA_GUID: u64 = 0x100000;
const DEFAULT_SWITCH_GUID: u64 = 0x200000;
const DEFAULT_ROUTER_GUID: u64 = 0;

/// A fabric read from a net file, with what the reader noticed but ibsim accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetFile {
    pub topology: Topology,
    pub notes: Vec<Located<NetNote>>,
}

/// Something ibsim accepts silently or with a warning, worth telling the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetNote {
    /// A `do <command>` line; ibsim runs it on its console, the reader does not.
    IgnoredCommand(String),
    /// A non-blank line that ended a node record and was swallowed with it.
    EatenLine(String),
    /// `lid N WxSPEED` data whose width or speed ibsim does not know; the port keeps its masks.
    BadLinkData(String),
}

impl Coded for NetNote {
    fn code(&self) -> Code {
        match self {
            NetNote::IgnoredCommand(_) => Code::CommandNotRun,
            NetNote::EatenLine(_) => Code::LineEaten,
            NetNote::BadLinkData(_) => Code::UnknownLinkData,
        }
    }

    /// ibsim accepts all of these.
    fn severity(&self) -> Severity {
        Severity::Warning
    }
}

impl fmt::Display for NetNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetNote::IgnoredCommand(c) => write!(f, "console command not run: do {c}"),
            NetNote::EatenLine(l) => write!(
                f,
                "line ends the node record above and is ignored (ibsim consumes it): {l}"
            ),
            NetNote::BadLinkData(d) => write!(f, "unknown width or speed in {d:?}, ignored"),
        }
    }
}

/// A net file ibsim would refuse (or, for the deliberate differences, mangle).
pub type NetError = Located<NetErrorKind>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetErrorKind {
    #[error("cannot read {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("includes nested deeper than {MAX_INCLUDE} files")]
    IncludeDepth,
    #[error("bad include line: the file name must be in double quotes")]
    BadInclude,
    #[error("line longer than {MAX_LINE} characters")]
    LineTooLong,
    #[error("bad assignment in {0:?}: missing '='")]
    MissingAssignment(String),
    #[error("bad {what} {value}: must be {lo} to {hi}")]
    OutOfRange {
        what: &'static str,
        value: i64,
        lo: u8,
        hi: u8,
    },
    /// ibsim's `strtoull` makes a number wider than 64 bits all ones, a GUID no one meant.
    #[error("bad {what} {text}: wider than 64 bits")]
    TooWide { what: &'static str, text: String },
    #[error("bad module prefix: {0}")]
    BadPrefix(String),
    #[error("bad node header: {0}")]
    BadHeader(String),
    #[error("bad node id {0:?}: '#' and '@' are reserved, and an id has at most 64 characters")]
    BadNodeId(String),
    #[error("node id {0:?} already exists")]
    DuplicateNode(String),
    #[error("node {name:?}: GUID {guid:#x} already exists")]
    DuplicateGuid { name: String, guid: u64 },
    #[error("bad port line {0:?}")]
    BadPort(String),
    #[error("bad alias {0:?}: '#' and '@' are reserved")]
    BadAlias(String),
    #[error("alias {0:?} is already mapped")]
    AliasExists(String),
    #[error("cannot find remote node {remote:?} connected to {port}")]
    UnknownRemote { port: String, remote: String },
    #[error("bad remote port {remote_port} in node {remote:?} connected to {port}")]
    BadRemotePort {
        port: String,
        remote: String,
        remote_port: i64,
    },
    #[error("{port} is connected to {remote}, but {remote} is not connected back ({actual})")]
    Inconsistent {
        port: String,
        remote: String,
        actual: String,
    },
    #[error(
        "{port} refers to alias {alias:?}, but {remote} is not that alias or is already declared"
    )]
    AliasMismatch {
        port: String,
        remote: String,
        alias: String,
    },
    #[error("{a} and {b} have no enabled {what} in common")]
    NoCommonRate {
        a: String,
        b: String,
        what: &'static str,
    },
    #[error("bad `# ibqos:` setting {0:?}: {1}")]
    BadExtension(String, &'static str),
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

impl Coded for NetErrorKind {
    fn code(&self) -> Code {
        match self {
            NetErrorKind::Io { .. } => Code::UnreadableFile,
            NetErrorKind::IncludeDepth => Code::IncludeTooDeep,
            NetErrorKind::BadInclude => Code::BadInclude,
            NetErrorKind::LineTooLong => Code::LineTooLong,
            NetErrorKind::MissingAssignment(_) => Code::MissingAssignment,
            NetErrorKind::OutOfRange { .. } | NetErrorKind::TooWide { .. } => Code::OutOfRange,
            NetErrorKind::BadPrefix(_) => Code::BadPrefix,
            NetErrorKind::BadHeader(_) => Code::BadNodeHeader,
            NetErrorKind::BadNodeId(_) => Code::BadNodeId,
            NetErrorKind::DuplicateNode(_) => Code::DuplicateNode,
            NetErrorKind::DuplicateGuid { .. } => Code::DuplicateGuid,
            NetErrorKind::BadPort(_) => Code::BadPortLine,
            NetErrorKind::BadAlias(_) => Code::BadAlias,
            NetErrorKind::AliasExists(_) => Code::DuplicateAlias,
            NetErrorKind::UnknownRemote { .. } => Code::UnknownRemote,
            NetErrorKind::BadRemotePort { .. } => Code::BadRemotePort,
            NetErrorKind::Inconsistent { .. } => Code::OneSidedLink,
            NetErrorKind::AliasMismatch { .. } => Code::AliasMismatch,
            NetErrorKind::NoCommonRate { .. } => Code::NoCommonRate,
            NetErrorKind::BadExtension(..) => Code::BadIbqosSetting,
            NetErrorKind::Topology(_) => Code::InvalidTopology,
        }
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }
}

/// Reads a net file from disk; includes are read from disk too.
pub fn parse_net_file(path: &Path) -> Result<NetFile, NetError> {
    parse_net_with(path, &mut |p: &Path| std::fs::read_to_string(p))
}

/// Reads net-file text that has no `include` lines (an include is an error).
pub fn parse_net_str(text: &str) -> Result<NetFile, NetError> {
    let mut no_includes = |p: &Path| -> io::Result<String> {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no reader for include {}", p.display()),
        ))
    };
    Parser::new(&mut no_includes).run(Path::new("<string>"), text)
}

/// Reads the net file `path`, and every file it includes, through `read`.
pub fn parse_net_with(
    path: &Path,
    read: &mut dyn FnMut(&Path) -> io::Result<String>,
) -> Result<NetFile, NetError> {
    let text = read(path).map_err(|e| {
        Located::new(
            Location::whole_file(path.display().to_string()),
            NetErrorKind::Io {
                path: path.to_owned(),
                message: e.to_string(),
            },
        )
    })?;
    Parser::new(read).run(path, &text)
}

/// What a port line declared, kept until every node is known (ibsim's `connect_ports`).
#[derive(Debug, Clone, Default)]
struct PortDecl {
    remote: String,
    /// 0 = no connection declared.
    remote_port: i64,
    remote_alias: Option<String>,
    alias: Option<String>,
    file: PathBuf,
    line: usize,
    /// The port line, for the location of an error found once every node is known.
    text: String,
}

/// The per-node state ibsim keeps while parsing.
#[derive(Debug)]
struct Defaults {
    abs_guid: [u64; 3],
    guid: [u64; 3],
    prefix: String,
    vendor_id: u32,
    device_id: u16,
    sys_image_guid: u64,
    width: u8,
    speed: u8,
    speed_ext: u8,
}

fn kind_index(kind: NodeKind) -> usize {
    match kind {
        NodeKind::Ca => 0,
        NodeKind::Switch => 1,
        NodeKind::Router => 2,
    }
}

struct Parser<'r> {
    read: &'r mut dyn FnMut(&Path) -> io::Result<String>,
    depth: usize,
    d: Defaults,
    topo: Topology,
    decls: Vec<Vec<PortDecl>>,
    aliases: HashMap<String, (String, u8)>,
    notes: Vec<Located<NetNote>>,
}

/// The line being parsed, for errors and notes.
#[derive(Clone, Copy)]
struct At<'a> {
    file: &'a Path,
    line: usize,
    text: &'a str,
}

impl At<'_> {
    fn located<T>(self, what: T) -> Located<T> {
        Located::new(
            Location::whole_line(
                self.file.display().to_string(),
                self.line,
                self.text.as_bytes(),
            ),
            what,
        )
    }

    fn err(self, what: NetErrorKind) -> NetError {
        self.located(what)
    }
}

impl<'r> Parser<'r> {
    fn new(read: &'r mut dyn FnMut(&Path) -> io::Result<String>) -> Parser<'r> {
        let bases = [DEFAULT_CA_GUID, DEFAULT_SWITCH_GUID, DEFAULT_ROUTER_GUID];
        Parser {
            read,
            depth: 0,
            d: Defaults {
                abs_guid: bases,
                guid: bases,
                prefix: String::new(),
                vendor_id: 0,
                device_id: 0,
                sys_image_guid: 0,
                width: LINK_WIDTH_4X,
                speed: LINK_SPEED_SDR,
                speed_ext: 0,
            },
            topo: Topology::new(),
            decls: Vec::new(),
            aliases: HashMap::new(),
            notes: Vec::new(),
        }
    }

    fn run(mut self, path: &Path, text: &str) -> Result<NetFile, NetError> {
        self.parse_text(path, text)?;
        self.connect()?;
        Ok(NetFile {
            topology: self.topo,
            notes: self.notes,
        })
    }

    fn note(&mut self, at: At<'_>, what: NetNote) {
        self.notes.push(at.located(what));
    }

    fn parse_text(&mut self, file: &Path, text: &str) -> Result<(), NetError> {
        self.depth += 1;
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let at = At {
                file,
                line: i + 1,
                text: lines[i],
            };
            let line = checked_line(at, lines[i])?;
            i += 1;
            let kind = if line.starts_with("Switch") {
                Some((NodeKind::Switch, 6))
            } else if line.starts_with("Hca") || line.starts_with("Ca") {
                Some((NodeKind::Ca, 3))
            } else if line.starts_with("Rt") {
                Some((NodeKind::Router, 3))
            } else {
                None
            };
            if let Some((kind, skip)) = kind {
                i = self.parse_node(file, &lines, i, kind, skip)?;
            } else {
                self.parse_directive(at, line)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn parse_directive(&mut self, at: At<'_>, line: &str) -> Result<(), NetError> {
        let guid_base = |l: &str| {
            if l.starts_with("switchguid") {
                Some(NodeKind::Switch)
            } else if l.starts_with("hcaguids") || l.starts_with("caguid") {
                Some(NodeKind::Ca)
            } else if l.starts_with("rtguid") {
                Some(NodeKind::Router)
            } else {
                None
            }
        };
        if let Some(kind) = guid_base(line) {
            let (relative, value) = match (line.find('='), line.find('+')) {
                (Some(eq), _) => (false, &line[eq + 1..]),
                (None, Some(plus)) => (true, &line[plus + 1..]),
                (None, None) => return Err(at.err(NetErrorKind::MissingAssignment(line.into()))),
            };
            let value = guid_value(at, "GUID", value)?;
            let k = kind_index(kind);
            if relative {
                self.d.guid[k] = self.d.abs_guid[k].wrapping_add(value);
            } else {
                self.d.abs_guid[k] = value;
                self.d.guid[k] = value;
            }
        } else if line.starts_with("vendid") {
            self.d.vendor_id = (assignment(at, line)? as u32) & 0xff_ffff;
        } else if line.starts_with("devid") {
            self.d.device_id = assignment(at, line)? as u16;
        } else if line.starts_with("sysimgguid") {
            self.d.sys_image_guid = guid_value(at, "system image GUID", assigned(at, line)?)?;
        } else if line.starts_with("width") {
            self.d.width = ranged(at, "link width", assignment(at, line)?, 1, 31)?;
        } else if line.starts_with("speed") {
            self.d.speed = ranged(at, "link speed", assignment(at, line)?, 1, 7)?;
        } else if line.starts_with("extspeed") {
            self.d.speed_ext = ranged(at, "extended link speed", assignment(at, line)?, 0, 7)?;
        } else if line.starts_with("module") {
            let eq = line
                .find('=')
                .ok_or_else(|| at.err(NetErrorKind::MissingAssignment(line.into())))?;
            let (prefix, _) = quoted(&line[eq + 1..])
                .ok_or_else(|| at.err(NetErrorKind::BadPrefix(line.into())))?;
            if prefix.len() > MAX_PREFIX {
                return Err(at.err(NetErrorKind::BadPrefix(format!(
                    "{prefix:?} is longer than {MAX_PREFIX} characters"
                ))));
            }
            self.d.prefix = prefix.to_owned();
        } else if line.starts_with("include") {
            let (name, _) = quoted(line).ok_or_else(|| at.err(NetErrorKind::BadInclude))?;
            if self.depth == MAX_INCLUDE {
                return Err(at.err(NetErrorKind::IncludeDepth));
            }
            let path = at
                .file
                .parent()
                .map_or_else(|| PathBuf::from(name), |dir| dir.join(name));
            let text = (self.read)(&path).map_err(|e| {
                at.err(NetErrorKind::Io {
                    path: path.clone(),
                    message: e.to_string(),
                })
            })?;
            self.parse_text(&path, &text)?;
        } else if line.starts_with("pdebug") {
            assignment(at, line)?;
        } else if let Some(command) = line.strip_prefix("do") {
            self.note(at, NetNote::IgnoredCommand(command.trim().to_owned()));
        }
        Ok(())
    }

    /// Parses a node header (the line before `next`) and its port lines; returns the index of
    /// the first line after the record.
    fn parse_node(
        &mut self,
        file: &Path,
        lines: &[&str],
        mut next: usize,
        kind: NodeKind,
        skip: usize,
    ) -> Result<usize, NetError> {
        let header = lines[next - 1];
        let at = At {
            file,
            line: next,
            text: header,
        };
        let bad = |why: &str| at.err(NetErrorKind::BadHeader(format!("{why}: {header:?}")));
        // sim_net.c `parse_node_ports`: skip to the first digit after the keyword.
        let count_text = header.get(skip..).unwrap_or("");
        let count = strtoull(
            count_text
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .as_bytes(),
        );
        let num_ports = u8::try_from(count)
            .ok()
            .filter(|&n| n > 0 && n < 255)
            .ok_or_else(|| bad("the port count must be 1 to 254"))?;
        let (id, rest) = quoted(header).ok_or_else(|| bad("no quoted node id"))?;
        let (desc, rest) = node_desc(rest);
        let name = self.node_id(at, id)?;
        if self.topo.node_by_name(&name).is_some() {
            return Err(at.err(NetErrorKind::DuplicateNode(name)));
        }
        let k = kind_index(kind);
        let guid = self.d.guid[k];
        if self.topo.node_by_guid(guid).is_some() {
            return Err(at.err(NetErrorKind::DuplicateGuid { name, guid }));
        }
        let mut node = Node::new(kind, guid, name, num_ports);
        if let Some(desc) = desc.filter(|d| !d.is_empty()) {
            node.description = truncate(desc, MAX_DESC).to_owned();
        }
        if self.d.sys_image_guid != 0 {
            node.system_image_guid = self.d.sys_image_guid;
        }
        node.vendor_id = self.d.vendor_id;
        node.device_id = self.d.device_id;
        for port in node.ports.iter_mut().flatten() {
            port.link.width_enabled = self.d.width;
            port.link.speed_enabled = self.d.speed;
            port.link.speed_ext_enabled = self.d.speed_ext;
        }
        // A header's `# ibqos:` settings apply to every port of the node; port lines refine them.
        for setting in extension(header) {
            match setting {
                ("optsl2vl", value) if kind == NodeKind::Switch => {
                    node.optimized_sl_to_vl = flag(at, setting.0, value)?;
                }
                (key, value) => {
                    for port in node.ports.iter_mut().flatten() {
                        apply_port_extension(at, &mut port.link, key, value)?;
                    }
                }
            }
        }
        if kind == NodeKind::Switch {
            if let Some(rest) = rest {
                node.enhanced_port0 = rest.contains("enhanced port 0");
                if let Some(port0) = node.port_mut(0) {
                    set_lid_and_lmc(port0, rest);
                }
            }
            self.d.guid[k] = guid.wrapping_add(1);
        } else {
            self.d.guid[k] = guid.wrapping_add(u64::from(num_ports) + 1);
        }
        self.d.vendor_id = 0;
        self.d.sys_image_guid = 0;
        let id = self.topo.add_node(node).map_err(|e| at.err(e.into()))?;
        self.decls
            .push(vec![PortDecl::default(); usize::from(num_ports) + 1]);

        // sim_net.c `parse_ports`: up to `num_ports` port lines; comments are skipped; any other
        // line ends the record and is consumed with it.
        let mut left = num_ports;
        while left > 0 && next < lines.len() {
            let at = At {
                file,
                line: next + 1,
                text: lines[next],
            };
            let line = checked_line(at, lines[next])?;
            next += 1;
            if line.starts_with('#') {
                continue;
            }
            if !line.starts_with('[') && !line.starts_with('@') {
                if !line.trim().is_empty() {
                    self.note(at, NetNote::EatenLine(line.to_owned()));
                }
                break;
            }
            self.parse_port(at, id, kind, num_ports, line)?;
            left -= 1;
        }
        Ok(next)
    }

    /// sim_net.c `build_nodeid`: the module prefix joined with `#`.
    fn node_id(&self, at: At<'_>, id: &str) -> Result<String, NetError> {
        if id.contains(['#', '@']) {
            return Err(at.err(NetErrorKind::BadNodeId(id.into())));
        }
        let name = self.prefixed(id);
        if name.len() > MAX_ID {
            return Err(at.err(NetErrorKind::BadNodeId(name)));
        }
        Ok(name)
    }

    fn prefixed(&self, id: &str) -> String {
        if self.d.prefix.is_empty() {
            id.to_owned()
        } else {
            format!("{}#{id}", self.d.prefix)
        }
    }

    /// sim_net.c `parse_port`.
    fn parse_port(
        &mut self,
        at: At<'_>,
        id: NodeId,
        kind: NodeKind,
        num_ports: u8,
        line: &str,
    ) -> Result<(), NetError> {
        let bad = || at.err(NetErrorKind::BadPort(line.into()));
        let (is_alias, body) = match line.strip_prefix('@') {
            Some(body) => (true, body),
            None => (false, line),
        };
        let port_num = atoi(body.get(1..).unwrap_or("").as_bytes());
        let port = u8::try_from(port_num)
            .ok()
            .filter(|&p| p >= 1 && p <= num_ports)
            .ok_or_else(bad)?;
        let (remote_id, rest) = quoted(body).ok_or_else(bad)?;
        let mut decl = std::mem::take(&mut self.decls[id.index()][usize::from(port)]);
        decl.file = at.file.to_owned();
        decl.line = at.line;
        decl.text = at.text.to_owned();
        if is_alias {
            let alias = self.alias_name(at, remote_id)?;
            if self.aliases.contains_key(&alias) {
                return Err(at.err(NetErrorKind::AliasExists(alias)));
            }
            let owner = self
                .topo
                .node(id)
                .map(|n| n.name.clone())
                .unwrap_or_default();
            self.aliases.insert(alias.clone(), (owner, port));
            decl.alias = Some(alias);
        } else {
            let mut remote_port = None;
            if remote_id.contains('@') {
                decl.remote_alias = Some(remote_id.to_owned());
                // sim_net.c `expand_name`: "@a" is local to the module, "m@a" is qualified.
                let qualified = if remote_id.starts_with('@') {
                    format!("{}{remote_id}", self.d.prefix)
                } else {
                    remote_id.to_owned()
                };
                match self.aliases.get(&qualified) {
                    Some((node, p)) => {
                        decl.remote = node.clone();
                        remote_port = Some(i64::from(*p));
                    }
                    None => decl.remote = qualified,
                }
            } else if remote_id.contains('#') {
                decl.remote = remote_id.to_owned();
            } else {
                decl.remote = self.prefixed(remote_id);
            }
            let remote_port = match (remote_port, rest.strip_prefix('[')) {
                (Some(p), _) => p,
                (None, Some(num)) => i64::from(atoi(num.as_bytes())),
                (None, None) => 1,
            };
            if remote_port <= 0 {
                return Err(bad());
            }
            decl.remote_port = remote_port;
        }
        let offset = line.len() - rest.len();
        let node = self.topo.node_mut(id).ok_or_else(bad)?;
        let link = &mut node.port_mut(port).ok_or_else(bad)?.link;
        // sim_net.c `parse_port_opt`: every '=' after the first character of the rest, keyed by
        // the nearest letter before it.
        for (eq, _) in rest.char_indices().skip(1).filter(|&(_, c)| c == '=') {
            let Some(opt) = line[..offset + eq]
                .bytes()
                .rev()
                .find(u8::is_ascii_alphabetic)
            else {
                continue;
            };
            let value = strtoull(&rest.as_bytes()[eq + 1..]) as i64;
            match opt {
                b'w' => link.width_enabled = ranged(at, "port width", value, 1, 31)?,
                b's' => link.speed_enabled = ranged(at, "port speed", value, 1, 7)?,
                b'e' => link.speed_ext_enabled = ranged(at, "port extended speed", value, 0, 7)?,
                _ => {}
            }
        }
        for (key, value) in extension(line) {
            apply_port_extension(at, link, key, value)?;
        }
        // sim_net.c `parse_port_connection_data`: ibnetdiscover's `lid N WxSPEED` trailer.
        let trailer = (0..rest.len())
            .filter(|&k| rest.is_char_boundary(k))
            .map(|k| &rest[k..])
            .find(|t| t.starts_with("lid") && !t.contains('"'));
        if let (Some(trailer), NodeKind::Ca | NodeKind::Switch) = (trailer, kind) {
            if kind == NodeKind::Ca
                && let Some(port) = node.port_mut(port)
            {
                set_lid_and_lmc(port, rest);
            }
            if let Some((width, speed)) = scan_lid_width_speed(trailer) {
                let Some(port) = node.port_mut(port) else {
                    return Err(bad());
                };
                if !apply_width_speed(&mut port.link, width, speed) {
                    self.note(at, NetNote::BadLinkData(trailer.to_owned()));
                }
            }
        }
        self.decls[id.index()][usize::from(port)] = decl;
        Ok(())
    }

    /// sim_net.c `build_alias`: `prefix@alias`.
    fn alias_name(&self, at: At<'_>, alias: &str) -> Result<String, NetError> {
        if alias.contains(['#', '@']) {
            return Err(at.err(NetErrorKind::BadAlias(alias.into())));
        }
        Ok(format!("{}@{alias}", self.d.prefix))
    }

    /// sim_net.c `connect_ports`: every declared link, in node then port order.
    fn connect(&mut self) -> Result<(), NetError> {
        for n in 0..self.decls.len() {
            for p in 0..self.decls[n].len() {
                let here = PortRef::new(NodeId(n as u32), p as u8);
                let decl = &self.decls[n][p];
                if decl.remote_port == 0 || self.topo.peer(here).is_some() {
                    continue;
                }
                let at = At {
                    file: &decl.file,
                    line: decl.line,
                    text: &decl.text,
                };
                let port_name = self.topo.describe(here);
                let remote = self.topo.node_by_name(&decl.remote).ok_or_else(|| {
                    at.err(NetErrorKind::UnknownRemote {
                        port: port_name.clone(),
                        remote: decl.remote.clone(),
                    })
                })?;
                let remote_num = self.topo.node(remote).map_or(0, Node::num_ports);
                let there = u8::try_from(decl.remote_port)
                    .ok()
                    .filter(|&rp| rp <= remote_num)
                    .map(|rp| PortRef::new(remote, rp))
                    .ok_or_else(|| {
                        at.err(NetErrorKind::BadRemotePort {
                            port: port_name.clone(),
                            remote: decl.remote.clone(),
                            remote_port: decl.remote_port,
                        })
                    })?;
                let back = &self.decls[remote.index()][usize::from(there.port)];
                let remote_name = self.topo.describe(there);
                if let Some(alias) = &decl.remote_alias {
                    if back.alias.as_ref() != Some(alias) || back.remote_port != 0 {
                        return Err(at.err(NetErrorKind::AliasMismatch {
                            port: port_name,
                            remote: remote_name,
                            alias: alias.clone(),
                        }));
                    }
                } else if back.remote_port != i64::from(here.port)
                    || self.topo.node(here.node).map(|n| n.name.as_str()) != Some(&back.remote)
                {
                    let actual = if back.remote_port == 0 {
                        "it declares no link".to_owned()
                    } else {
                        format!("it names {:?}[{}]", back.remote, back.remote_port)
                    };
                    return Err(at.err(NetErrorKind::Inconsistent {
                        port: port_name,
                        remote: remote_name,
                        actual,
                    }));
                }
                self.check_rates(at, here, there)?;
                self.topo
                    .connect(here, there)
                    .map_err(|e| at.err(e.into()))?;
            }
        }
        Ok(())
    }

    /// sim_net.c `get_active_linkwidth` / `get_active_linkspeed` abort ibsim when the two ends
    /// share no enabled width or speed.
    fn check_rates(&self, at: At<'_>, a: PortRef, b: PortRef) -> Result<(), NetError> {
        let (Some(pa), Some(pb)) = (self.topo.port(a), self.topo.port(b)) else {
            return Ok(());
        };
        let (la, lb) = (pa.link, pb.link);
        for (what, common) in [
            ("width", la.width_enabled & lb.width_enabled),
            ("speed", la.speed_enabled & lb.speed_enabled),
        ] {
            if common == 0 {
                return Err(at.err(NetErrorKind::NoCommonRate {
                    a: self.topo.describe(a),
                    b: self.topo.describe(b),
                    what,
                }));
            }
        }
        Ok(())
    }
}

/// The marker of ibqos's own settings in a net file: a trailing comment, which ibsim skips.
const EXTENSION: &str = "# ibqos:";

/// The `key=value` words after `# ibqos:` on a line.
///
/// ibsim reads port options as "every '=' keyed by the nearest letter before it" (`w`, `s`,
/// `e`) and looks for a `lid` trailer, so no key ends in one of those letters or contains
/// `lid`: ibsim ignores these settings, and the line means to it what it meant without them.
fn extension(line: &str) -> impl Iterator<Item = (&str, &str)> {
    line.split_once(EXTENSION)
        .map_or("", |(_, words)| words)
        .split_whitespace()
        .map(|word| word.split_once('=').unwrap_or((word, "")))
}

/// One port setting of a `# ibqos:` comment: `vlcap=N` (VLCap: 1, 2, 4, 8 or 15 VLs),
/// `vlarb=LOW/HIGH` (VLArbitrationLowCap/HighCap, 0 to 64), `mtucap=N` (MTUCap encoding, 1 = 256
/// to 5 = 4096), `slmap=0|1` (CapabilityMask.IsSLMappingSupported).
fn apply_port_extension(
    at: At<'_>,
    link: &mut crate::topology::LinkCaps,
    key: &str,
    value: &str,
) -> Result<(), NetError> {
    let bad = |why| at.err(NetErrorKind::BadExtension(format!("{key}={value}"), why));
    let number = |text: &str, lo: u8, hi: u8, why| {
        text.parse::<u8>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| bad(why))
    };
    match key {
        "vlcap" => {
            let count = number(value, 1, 15, "VLCap is 1, 2, 4, 8 or 15 VLs")?;
            link.vl_cap = ibqos_qos::VlCount::from_count(count.into())
                .map_err(|_| bad("VLCap is 1, 2, 4, 8 or 15 VLs"))?;
        }
        "vlarb" => {
            let (low, high) = value
                .split_once('/')
                .ok_or_else(|| bad("write the caps as LOW/HIGH"))?;
            link.vlarb_low_cap = number(low, 0, 64, "a VLArb cap is 0 to 64 entries")?;
            link.vlarb_high_cap = number(high, 0, 64, "a VLArb cap is 0 to 64 entries")?;
        }
        "mtucap" => link.mtu_cap = number(value, 1, 5, "MTUCap is 1 (256) to 5 (4096)")?,
        "slmap" => link.sl_mapping_supported = flag(at, key, value)?,
        _ => {
            return Err(bad(
                "unknown setting (vlcap, vlarb, mtucap, slmap; optsl2vl on a switch)",
            ));
        }
    }
    Ok(())
}

fn flag(at: At<'_>, key: &str, value: &str) -> Result<bool, NetError> {
    match value {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(at.err(NetErrorKind::BadExtension(
            format!("{key}={value}"),
            "write 0 or 1",
        ))),
    }
}

fn checked_line<'a>(at: At<'_>, line: &'a str) -> Result<&'a str, NetError> {
    if line.len() > MAX_LINE {
        Err(at.err(NetErrorKind::LineTooLong))
    } else {
        Ok(line)
    }
}

/// The value after the first `=`, read like `strtoul(.., 0)`.
fn assignment(at: At<'_>, line: &str) -> Result<u64, NetError> {
    assigned(at, line).map(|value| strtoull(value.as_bytes()))
}

/// The text after a `key=value` line's `=`.
fn assigned<'l>(at: At<'_>, line: &'l str) -> Result<&'l str, NetError> {
    line.split_once('=')
        .map(|(_, value)| value)
        .ok_or_else(|| at.err(NetErrorKind::MissingAssignment(line.into())))
}

/// A GUID as `strtoull(.., 0)` reads it, but one wider than 64 bits is an error, not all ones.
fn guid_value(at: At<'_>, what: &'static str, text: &str) -> Result<u64, NetError> {
    let number = scan(text.as_bytes(), 0);
    if number.overflow {
        let digits = String::from_utf8_lossy(number.text(text.as_bytes())).into_owned();
        return Err(at.err(NetErrorKind::TooWide { what, text: digits }));
    }
    Ok(number.strtoul())
}

fn ranged(
    at: At<'_>,
    what: &'static str,
    value: impl TryInto<i64>,
    lo: u8,
    hi: u8,
) -> Result<u8, NetError> {
    let value: i64 = value.try_into().unwrap_or(i64::MAX);
    u8::try_from(value)
        .ok()
        .filter(|v| (lo..=hi).contains(v))
        .ok_or_else(|| {
            at.err(NetErrorKind::OutOfRange {
                what,
                value,
                lo,
                hi,
            })
        })
}

/// The text between the first two double quotes, and what follows the second.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let start = s.find('"')? + 1;
    let len = s[start..].find('"')?;
    Some((&s[start..start + len], &s[start + len + 1..]))
}

/// sim_net.c `parse_node_desc`: the description after `#`, quoted or up to one of the switch
/// header keywords, and the rest of the line where those keywords are looked for.
fn node_desc(rest: &str) -> (Option<&str>, Option<&str>) {
    let Some(hash) = rest.find('#') else {
        return (None, Some(rest));
    };
    let s = rest[hash + 1..].trim_start();
    if let Some(quoted) = s.strip_prefix('"') {
        return match quoted.find('"') {
            Some(end) => (Some(&quoted[..end]), Some(&quoted[end + 1..])),
            None => (Some(quoted), None),
        };
    }
    for keyword in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(e) = s.find(keyword) {
            return (Some(&s[..e]), Some(&s[e + 1..]));
        }
    }
    (Some(s), None)
}

/// sim_net.c `parse_port_lid_and_lmc`: the numbers after the first `lid ` and `lmc `.
fn set_lid_and_lmc(port: &mut crate::topology::Port, text: &str) {
    if let Some(i) = text.find("lid ") {
        port.lid = strtoull(&text.as_bytes()[i + 4..]) as u16;
    }
    if let Some(i) = text.find("lmc ") {
        port.lmc = (strtoull(&text.as_bytes()[i + 4..]) & 7) as u8;
    }
}

/// `sscanf(text, "lid %d %dx%9s")`: the width and speed words of ibnetdiscover's trailer.
fn scan_lid_width_speed(text: &str) -> Option<(i64, &str)> {
    let s = text.strip_prefix("lid")?.trim_start();
    let s = skip_int(s)?.trim_start();
    let digits = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(s.len(), |(i, _)| i);
    let width: i64 = s[..digits].parse().ok()?;
    let s = s[digits..].strip_prefix('x')?.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let speed = truncate(&s[..end], 9);
    (!speed.is_empty()).then_some((width, speed))
}

fn skip_int(s: &str) -> Option<&str> {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let rest = body.trim_start_matches(|c: char| c.is_ascii_digit());
    (rest.len() < body.len()).then_some(rest)
}

/// sim_net.c `parse_port_link_width_and_speed`; false when ibsim would warn and change nothing
/// for that part.
fn apply_width_speed(link: &mut crate::topology::LinkCaps, width: i64, speed: &str) -> bool {
    let width_mask = match width {
        12 => Some(11),
        8 => Some(4),
        4 => Some(3),
        1 => Some(1),
        2 => Some(16),
        _ => None,
    };
    if let Some(mask) = width_mask {
        link.width_enabled = mask;
    }
    // strncmp(speed, NAME, strlen(speed)) == 0: the word is a prefix of the name, in this order.
    let table: [(&str, u8, Option<u8>); 7] = [
        ("SDR", 1, None),
        ("DDR", 3, None),
        ("QDR", 7, None),
        ("FDR", 7, Some(1)),
        ("EDR", 7, Some(3)),
        ("HDR", 7, Some(7)),
        ("FDR10", 7, None),
    ];
    let found = table.iter().find(|(name, _, _)| name.starts_with(speed));
    if let Some(&(_, speed_mask, ext)) = found {
        link.speed_enabled = speed_mask;
        if let Some(ext) = ext {
            link.speed_ext_enabled = ext;
        }
    }
    width_mask.is_some() && found.is_some()
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Why a topology cannot be written as a net file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error(
        "node name {0:?} cannot be a net-file id: it must be 1 to 64 characters without '\"', '#', '@' or line breaks"
    )]
    BadName(String),
    #[error(
        "node {name:?}: description {description:?} cannot be written: at most 63 bytes, no '\"' or line breaks"
    )]
    BadDescription { name: String, description: String },
    #[error("{port}: {what} {value} cannot be written (ibsim accepts {lo} to {hi})")]
    BadLinkCaps {
        port: String,
        what: &'static str,
        value: u8,
        lo: u8,
        hi: u8,
    },
}

/// Writes `topology` as a net file that ibsim 0.10 loads and [`parse_net_str`] reads back to the
/// same topology.
///
/// What a net file can say is written: node kinds, names, descriptions, NodeGUIDs (one
/// `switchguid=`/`caguid=`/`rtguid=` line per node), system image GUIDs, vendor and device ids,
/// EnhancedPort0, switch port-0 and CA port LIDs and LMCs (ibnetdiscover style), links, and the
/// enabled width/speed masks of linked ports. The rest is ibsim's to choose and is not written:
/// port GUIDs (ibsim derives them from the NodeGUID), router LIDs, the masks of unlinked ports
/// and the other [`LinkCaps`](crate::LinkCaps) fields. An empty description reads back as the
/// node name, as in ibsim.
pub fn to_net_file(topology: &Topology) -> Result<String, WriteError> {
    let mut out = String::from("# written by ibqos-fabric\n");
    let mut device_id = 0;
    for (id, node) in topology.nodes() {
        check_name(&node.name)?;
        if node.description.len() > MAX_DESC || node.description.contains(['"', '\n', '\r']) {
            return Err(WriteError::BadDescription {
                name: node.name.clone(),
                description: node.description.clone(),
            });
        }
        let (keyword, guid_key) = match node.kind {
            NodeKind::Switch => ("Switch", "switchguid"),
            NodeKind::Ca => ("Ca", "caguid"),
            NodeKind::Router => ("Rt", "rtguid"),
        };
        out.push('\n');
        let _ = writeln!(out, "{guid_key}={:#x}", node.guid);
        if node.vendor_id != 0 {
            let _ = writeln!(out, "vendid={:#x}", node.vendor_id);
        }
        if node.device_id != device_id {
            device_id = node.device_id;
            let _ = writeln!(out, "devid={device_id:#x}");
        }
        if node.system_image_guid != node.guid {
            let _ = writeln!(out, "sysimgguid={:#x}", node.system_image_guid);
        }
        let _ = write!(
            out,
            "{keyword}\t{}\t\"{}\"\t# \"{}\"",
            node.num_ports(),
            node.name,
            node.description
        );
        if node.is_switch() {
            if node.enhanced_port0 {
                out.push_str(" enhanced port 0");
            }
            if let Some(port0) = node.port(0).filter(|p| p.lid != 0 || p.lmc != 0) {
                let _ = write!(out, " lid {} lmc {}", port0.lid, port0.lmc);
            }
            if node.optimized_sl_to_vl {
                let _ = write!(out, " {EXTENSION} optsl2vl=1");
            }
        }
        out.push('\n');
        for (p, port) in node.existing_ports() {
            let Some(peer) = port.peer else { continue };
            let peer_name = topology.node(peer.node).map_or("", |n| n.name.as_str());
            let _ = write!(out, "[{p}]\t\"{peer_name}\"[{}]", peer.port);
            let here = || topology.describe(PortRef::new(id, p));
            let link = port.link;
            let caps = [
                ('w', "width", link.width_enabled, LINK_WIDTH_4X, 1, 31),
                ('s', "speed", link.speed_enabled, LINK_SPEED_SDR, 1, 7),
                ('e', "extended speed", link.speed_ext_enabled, 0, 0, 7),
            ];
            for (key, what, value, default, lo, hi) in caps {
                if !(lo..=hi).contains(&value) {
                    return Err(WriteError::BadLinkCaps {
                        port: here(),
                        what,
                        value,
                        lo,
                        hi,
                    });
                }
                if value != default {
                    let _ = write!(out, "\t{key}={value}");
                }
            }
            if node.kind == NodeKind::Ca && port.lid != 0 {
                let _ = write!(out, "\t# lid {} lmc {}", port.lid, port.lmc);
            }
            write_port_extension(&mut out, &link, node.is_switch());
            out.push('\n');
        }
    }
    Ok(out)
}

/// The `# ibqos:` settings of a linked port that differ from what the parser gives it by default.
fn write_port_extension(out: &mut String, link: &crate::LinkCaps, switch: bool) {
    let default = if switch {
        crate::LinkCaps::switch_port()
    } else {
        crate::LinkCaps::end_port()
    };
    let mut words = Vec::new();
    if link.vl_cap != default.vl_cap {
        words.push(format!("vlcap={}", link.vl_cap.count()));
    }
    if (link.vlarb_low_cap, link.vlarb_high_cap) != (default.vlarb_low_cap, default.vlarb_high_cap)
    {
        words.push(format!(
            "vlarb={}/{}",
            link.vlarb_low_cap, link.vlarb_high_cap
        ));
    }
    if link.mtu_cap != default.mtu_cap {
        words.push(format!("mtucap={}", link.mtu_cap));
    }
    if link.sl_mapping_supported != default.sl_mapping_supported {
        words.push(format!("slmap={}", u8::from(link.sl_mapping_supported)));
    }
    if !words.is_empty() {
        let _ = write!(out, "\t{EXTENSION} {}", words.join(" "));
    }
}

fn check_name(name: &str) -> Result<(), WriteError> {
    if name.is_empty() || name.len() > MAX_ID || name.contains(['"', '#', '@', '\n', '\r']) {
        Err(WriteError::BadName(name.to_owned()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `strtoull` would read a GUID wider than 64 bits as 0xffffffffffffffff; it is refused at
    /// its line, with what it says, and a 64-bit GUID still reads.
    #[test]
    fn a_guid_wider_than_64_bits_is_an_error() {
        for line in [
            "switchguid=0x10000000000000000",
            "sysimgguid=18446744073709551616",
        ] {
            let text = format!("{line}\nSwitch 2 \"S\"\n");
            let error = parse_net_str(&text).expect_err(line);
            assert_eq!(error.location.line, 1, "{line}");
            assert!(error.to_string().contains("wider than 64 bits"), "{error}");
        }
        let net = parse_net_str("switchguid=0xffffffffffffffff\nSwitch 2 \"S\"\n").expect("fits");
        let (_, switch) = net.topology.nodes().next().expect("one node");
        assert_eq!(switch.guid, u64::MAX);
    }

    #[test]
    fn node_desc_forms() {
        assert_eq!(node_desc(" # \"a b\" lid 3"), (Some("a b"), Some(" lid 3")));
        assert_eq!(
            node_desc(" # plain words base port 0 lid 4"),
            (Some("plain words"), Some("base port 0 lid 4"))
        );
        assert_eq!(node_desc(" lid 2"), (None, Some(" lid 2")));
        assert_eq!(
            node_desc(" # unterminated \"x"),
            (Some("unterminated \"x"), None)
        );
    }

    #[test]
    fn lid_width_speed_trailer() {
        assert_eq!(scan_lid_width_speed("lid 2 4xQDR"), Some((4, "QDR")));
        assert_eq!(scan_lid_width_speed("lid 2 lmc 0"), None);
        let mut link = crate::topology::LinkCaps::end_port();
        assert!(apply_width_speed(&mut link, 12, "EDR"));
        assert_eq!(
            (
                link.width_enabled,
                link.speed_enabled,
                link.speed_ext_enabled
            ),
            (11, 7, 3)
        );
        assert!(apply_width_speed(&mut link, 4, "FDR10"));
        assert_eq!(link.speed_enabled, 7);
        assert!(!apply_width_speed(&mut link, 3, "XDR"));
    }

    /// QoS capabilities in `# ibqos:` comments: per node on the header, per port on a port line
    /// (which wins), written back by the writer.
    #[test]
    fn ibqos_settings_read_and_write_back() {
        let text = "\
Switch\t4 \"S\"\t# \"sw\" enhanced port 0 # ibqos: optsl2vl=1 vlcap=4
[1]\t\"H\"[1]\tw=3 # ibqos: vlarb=64/16 mtucap=5
[2]\t\"H\"[2]

Ca\t2 \"H\"
[1]\t\"S\"[1]\tw=3 # ibqos: vlcap=2 slmap=0
[2]\t\"S\"[2]
";
        let topo = parse_net_str(text).unwrap().topology;
        let switch = topo
            .node_by_name("S")
            .map(|id| topo.node(id).unwrap())
            .unwrap();
        assert!(switch.optimized_sl_to_vl && switch.enhanced_port0);
        let p1 = switch.port(1).unwrap().link;
        assert_eq!(
            (
                p1.vl_cap.count(),
                p1.vlarb_low_cap,
                p1.vlarb_high_cap,
                p1.mtu_cap,
                p1.width_enabled
            ),
            (4, 64, 16, 5, 3)
        );
        assert_eq!(
            switch.port(0).unwrap().link.vl_cap.count(),
            4,
            "header: every port"
        );
        let ca = topo
            .node_by_name("H")
            .map(|id| topo.node(id).unwrap())
            .unwrap();
        let h1 = ca.port(1).unwrap().link;
        assert_eq!((h1.vl_cap.count(), h1.sl_mapping_supported), (2, false));
        assert_eq!(ca.port(2).unwrap().link, crate::LinkCaps::end_port());

        let written = to_net_file(&topo).unwrap();
        assert!(written.contains("# ibqos: optsl2vl=1"), "{written}");
        assert!(
            written.contains("# ibqos: vlcap=4 vlarb=64/16 mtucap=5"),
            "{written}"
        );
        let again = parse_net_str(&written).unwrap().topology;
        let links = |t: &Topology| -> Vec<_> {
            t.nodes()
                .flat_map(|(_, n)| n.existing_ports().filter(|(_, p)| p.peer.is_some()))
                .map(|(_, p)| p.link)
                .collect()
        };
        assert_eq!(links(&again), links(&topo));
    }

    #[test]
    fn bad_ibqos_settings_are_errors() {
        for setting in [
            "vlarb=65/8",
            "vlarb=8",
            "vlcap=3",
            "mtucap=6",
            "slmap=yes",
            "speed=2",
        ] {
            let text = format!("Ca\t1 \"H\"\n[1]\t\"S\"[1] # ibqos: {setting}\n");
            let err = parse_net_str(&text).unwrap_err();
            assert!(
                matches!(err.what, NetErrorKind::BadExtension(..)),
                "{setting}: {err}"
            );
        }
    }
}
