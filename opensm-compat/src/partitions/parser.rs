//! OpenSM's partitions.conf parser, step for step (`osm_prtn_config.c:269-853`).
//!
//! OpenSM cuts a 4096-byte line buffer in place: it writes NULs over `#`, `;`, `,`, `:` and `=`,
//! and moves a pointer by the lengths it counted. Where those lengths run past a NUL, it reads
//! what is left in the buffer. The parser keeps such a buffer and the same pointer arithmetic,
//! so every quirk comes out as OpenSM's does; only the buffer's first contents (uninitialised
//! stack in OpenSM) are zeros here.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv6Addr;
use std::sync::Arc;

use ibqos_mad::{Gid, Guid};
use ibqos_qos::partitions::{
    DEFAULT_PKEY, GroupFlags, IPOIB_QKEY, IPV4_BROADCAST, McGroup, Member, Members, Membership,
    Partition, Partitions,
};
use ibqos_text::cnum::{is_c_space, scan};
use ibqos_text::{Code, Diagnostic, Location, display_text};

use super::{PartitionsError, Rejection};

/// `char line[4096]`, read with `fgets(line, sizeof(line) - 1, file)` (`osm_prtn_config.c:776,795`).
const LINE_BUFFER: usize = 4096;
const LINE_MAX: usize = LINE_BUFFER - 2;
/// `char name[32]` (`osm_partition.h:99`).
const NAME_MAX: usize = 31;

/// Where the line OpenSM is reading sits in the file.
struct Chunk {
    /// 1-based physical line.
    line: usize,
    /// Bytes of the physical line before this chunk (a line above 4094 bytes is read in pieces).
    col_offset: usize,
    len: usize,
    text: Arc<str>,
}

/// `struct part_conf` (`osm_prtn_config.c:88-96`): the definition being read.
struct Conf {
    /// The definition in [`Parser::partitions`], once its header is read.
    partition: Option<usize>,
    /// The P_Key OpenSM gave it (15 bits).
    pkey: u16,
    ipoib: bool,
    flags: GroupFlags,
    membership: Membership,
    indx0: bool,
}

impl Conf {
    /// `new_part_conf` (`osm_prtn_config.c:651-667`).
    fn new() -> Conf {
        Conf {
            partition: None,
            pkey: 0,
            ipoib: false,
            flags: GroupFlags::default(),
            membership: Membership::Limited,
            indx0: false,
        }
    }
}

/// `parse_name_token`'s result: the bytes it consumed, the name and the value after `=`.
struct NameToken {
    len: usize,
    name: usize,
    value: Option<usize>,
}

pub(super) struct Parser<'a> {
    file: Arc<str>,
    src: &'a [u8],
    at: usize,
    physical_line: usize,
    line_start: usize,
    buf: Vec<u8>,
    chunk: Chunk,
    /// OpenSM's `lineno`: one per `fgets`.
    lineno: usize,
    pub partitions: Vec<Partition>,
    /// Where each definition's header is.
    pub places: Vec<Location>,
    /// `prtn_pkey_tbl`: P_Key -> the name OpenSM stored, the Default partition first.
    table: BTreeMap<u16, Vec<u8>>,
    /// P_Keys of the file's definitions.
    file_pkeys: BTreeSet<u16>,
    /// P_Keys that got a member.
    populated: Vec<u16>,
    /// `global_pkey_counter` (`osm_prtn.c:65,294-306`).
    pkey_counter: u16,
    pub diagnostics: Vec<Diagnostic>,
}

fn key_starts_with(key: &str, word: &[u8]) -> bool {
    // strncmp(word, key, strlen(word)) == 0: the word is a prefix of the key, empty included.
    key.as_bytes().starts_with(word)
}

fn show(bytes: &[u8]) -> String {
    display_text(bytes)
}

impl<'a> Parser<'a> {
    pub fn new(file: &str, src: &'a [u8]) -> Parser<'a> {
        Parser {
            file: Arc::from(file),
            src,
            at: 0,
            physical_line: 1,
            line_start: 0,
            buf: vec![0; LINE_BUFFER],
            chunk: Chunk {
                line: 1,
                col_offset: 0,
                len: 0,
                text: Arc::from(""),
            },
            lineno: 0,
            partitions: Vec::new(),
            places: Vec::new(),
            table: BTreeMap::from([(DEFAULT_PKEY, b"Default".to_vec())]),
            file_pkeys: BTreeSet::new(),
            populated: vec![DEFAULT_PKEY],
            pkey_counter: 0,
            diagnostics: Vec::new(),
        }
    }

    fn c(&self, i: usize) -> u8 {
        self.buf.get(i).copied().unwrap_or(0)
    }

    fn put(&mut self, i: usize, byte: u8) {
        if let Some(b) = self.buf.get_mut(i) {
            *b = byte;
        }
    }

    fn strlen(&self, i: usize) -> usize {
        self.buf
            .get(i..)
            .map_or(0, |rest| rest.iter().take_while(|&&b| b != 0).count())
    }

    fn strchr(&self, i: usize, byte: u8) -> Option<usize> {
        (i..i + self.strlen(i)).find(|&j| self.buf[j] == byte)
    }

    fn cstr(&self, i: usize) -> &[u8] {
        self.buf.get(i..i + self.strlen(i)).unwrap_or_default()
    }

    fn skip_blanks(&self, mut i: usize) -> usize {
        while matches!(self.c(i), b' ' | b'\t' | b'\n') {
            i += 1;
        }
        i
    }

    /// The bytes `start..start + len` of the buffer in the file; past the line read, its end.
    fn loc(&self, start: usize, len: usize) -> Location {
        let start = start.min(self.chunk.len);
        Location {
            file: self.file.to_string(),
            line: self.chunk.line,
            col: self.chunk.col_offset + start + 1,
            len: len.min(self.chunk.len.saturating_sub(start)).max(1),
            line_text: Arc::clone(&self.chunk.text),
        }
    }

    /// The C string at `i` as a location.
    fn loc_str(&self, i: usize) -> Location {
        self.loc(i, self.strlen(i))
    }

    fn warn(&mut self, code: Code, message: String, at: Location) {
        self.diagnostics
            .push(Diagnostic::warning(code, message).at(Some(at)));
    }

    fn opensm_warn(&mut self, code: Code, what: &str, at: Location) {
        let message = format!("PARSE WARN: line {}: {what}", self.lineno);
        self.warn(code, message, at);
    }

    fn abbreviation(&mut self, word: usize, key: &str) {
        let written = self.cstr(word);
        if written != key.as_bytes() {
            let message = if written.is_empty() {
                format!("an empty word is read as `{key}`")
            } else {
                format!("`{}` is read as `{key}`", show(written))
            };
            self.warn(Code::PartitionsAbbreviation, message, self.loc_str(word));
        }
    }

    fn reject(&self, kind: Rejection, message: String, at: Location) -> PartitionsError {
        PartitionsError {
            kind,
            line: self.lineno,
            message,
            location: at,
        }
    }

    fn parse_error(&self, what: &str, at: Location) -> PartitionsError {
        let message = format!("PARSE ERROR: line {}: {what}", self.lineno);
        self.reject(Rejection::Syntax, message, at)
    }

    /// `fgets`: the next piece of the file into the buffer, or `None` at its end.
    fn next_chunk(&mut self) -> Option<()> {
        if self.at >= self.src.len() {
            return None;
        }
        let rest = &self.src[self.at..];
        let len = match rest.iter().take(LINE_MAX).position(|&b| b == b'\n') {
            Some(nl) => nl + 1,
            None => rest.len().min(LINE_MAX),
        };
        self.buf[..len].copy_from_slice(&rest[..len]);
        self.buf[len] = 0;
        if self.chunk.line != self.physical_line || self.lineno == 0 {
            let line_end = self.src[self.line_start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(self.src.len(), |i| self.line_start + i);
            self.chunk.text = Arc::from(display_text(&self.src[self.line_start..line_end]));
        }
        self.chunk.line = self.physical_line;
        self.chunk.col_offset = self.at - self.line_start;
        self.chunk.len = len;
        self.lineno += 1;
        self.at += len;
        let ends_line = self.buf[len - 1] == b'\n';
        if let Some(nul) = self.buf[..len].iter().position(|&b| b == 0) {
            let message = "a NUL byte: OpenSM reads no further on this line".to_string();
            self.warn(Code::PartitionsLineTrap, message, self.loc(nul, 1));
        }
        if ends_line {
            self.physical_line += 1;
            self.line_start = self.at;
        } else if self.at < self.src.len() {
            let message = format!(
                "a line longer than {LINE_MAX} bytes: OpenSM reads the rest as its line {}",
                self.lineno + 1
            );
            self.warn(Code::PartitionsLineTrap, message, self.loc(len - 1, 1));
        }
        Some(())
    }

    /// `osm_prtn_config_parse_file` (`osm_prtn_config.c:773-853`).
    pub fn file(&mut self) -> Result<(), PartitionsError> {
        let mut conf: Option<Conf> = None;
        let mut parsed_one = false;
        while self.next_chunk().is_some() {
            let mut p = 0;
            if let Some(hash) = self.strchr(p, b'#') {
                self.put(hash, 0);
            }
            loop {
                p = self.skip_blanks(p);
                if self.c(p) == 0 {
                    break;
                }
                let semicolon = self.strchr(p, b';');
                if let Some(q) = semicolon {
                    self.put(q, 0);
                }
                let current = conf.get_or_insert_with(Conf::new);
                let len = self.part_conf(current, p)?;
                parsed_one = true;
                p += len;
                if semicolon.is_none() {
                    break;
                }
                conf = None;
                if p > self.chunk.len && self.c(p) != 0 {
                    let message = "OpenSM reads on past the end of this line, into what an \
                                   earlier line left in its buffer"
                        .to_string();
                    self.warn(
                        Code::PartitionsLineTrap,
                        message,
                        self.loc(self.chunk.len, 1),
                    );
                }
            }
        }
        if !parsed_one {
            let at = Location::whole_file(self.file.to_string());
            let message =
                "Partition configuration in error; retrying with default config".to_string();
            return Err(self.reject(Rejection::Empty, message, at));
        }
        self.empty_partitions();
        Ok(())
    }

    /// Partitions without a member are deleted (`osm_prtn.c:427-437`).
    fn empty_partitions(&mut self) {
        for (i, partition) in self.partitions.iter().enumerate() {
            let pkey = partition.pkey.unwrap_or(0) & DEFAULT_PKEY;
            let populated = pkey != 0 && self.populated.contains(&pkey);
            if partition.members.is_empty() && !populated {
                self.diagnostics.push(
                    Diagnostic::warning(
                        Code::PartitionsIgnored,
                        "a partition without members: OpenSM deletes it, its groups with it",
                    )
                    .at(Some(self.places[i].clone())),
                );
            }
        }
    }

    /// `parse_name_token` (`osm_prtn_config.c:529-568`).
    fn name_token(&mut self, start: usize) -> NameToken {
        let p = self.skip_blanks(start);
        let eq = self.strchr(p, b'=');
        if let Some(q) = eq {
            self.put(q, 0);
        }
        let mut len = self.strlen(start) + 1;
        self.strip_tail(p);
        let Some(value_start) = eq.map(|q| q + 1) else {
            return NameToken {
                len,
                name: p,
                value: None,
            };
        };
        let v = self.skip_blanks(value_start);
        len += v + self.strlen(v) - value_start + 1;
        self.strip_tail(v);
        NameToken {
            len,
            name: p,
            value: Some(v),
        }
    }

    /// `STRIP_TAIL_SPACES`: NULs over the blanks at the end of the string at `p`.
    fn strip_tail(&mut self, p: usize) {
        let mut q = p + self.strlen(p);
        while q != p && matches!(self.c(q), 0 | b' ' | b'\t' | b'\n') {
            self.put(q, 0);
            q -= 1;
        }
    }

    /// `parse_part_conf` (`osm_prtn_config.c:675-768`): one definition, or the part of one on
    /// this line. The bytes consumed.
    fn part_conf(&mut self, conf: &mut Conf, start: usize) -> Result<usize, PartitionsError> {
        // OpenSM first steps over one tab, newline or NUL (`:682-683`). The caller skipped the
        // blanks, but not a NUL: the `;` it just cut when a line holds only a `;`, which ends
        // a definition of earlier lines. Stepping over it, OpenSM's count then runs past the
        // line's end into what an earlier line left in the buffer.
        let mut p = start;
        let mut len = 0;
        if matches!(self.c(p), b'\t' | b'\n' | 0) {
            p += 1;
            len += 1;
        }
        if conf.partition.is_none() {
            let Some(colon) = self.strchr(p, b':') else {
                let at = self.loc_str(p);
                return Err(self.parse_error("no partition definition found", at));
            };
            self.put(colon, 0);
            let header = self.loc(start, colon - start);
            let after_colon = colon + 1;
            let mut comma = self.strchr(p, b',');
            if let Some(q) = comma {
                self.put(q, 0);
            }
            let head = self.name_token(p);
            p += head.len;
            len += head.len;
            while comma.is_some() {
                comma = self.strchr(p, b',');
                if let Some(q) = comma {
                    self.put(q, 0);
                }
                let flag = self.name_token(p);
                p += flag.len;
                len += flag.len;
                self.partition_flag(conf, flag.name, flag.value);
            }
            // The lengths add up to the header unless it held a NUL (`:732`).
            if p != after_colon || self.create(conf, head.name, head.value, header).is_none() {
                let at = self.loc(start, colon - start);
                return Err(self.parse_error("bad partition definition", at));
            }
        }
        loop {
            let comma = self.strchr(p, b',');
            if let Some(q) = comma {
                self.put(q, 0);
            }
            let item = self.name_token(p);
            len += item.len;
            if self.cstr(item.name) == b"mgid" {
                // An mgid item consumes the rest of the line (`:750-754`).
                return Ok(len + self.mgroup(conf, p + item.len, item.value)?);
            }
            if self.port(conf, item.name, item.value).is_none() {
                let at = self.loc_str(item.name);
                return Err(self.parse_error("bad PortGUID", at));
            }
            p += item.len;
            if comma.is_none() {
                return Ok(len);
            }
        }
    }

    /// `verify_val` (`osm_prtn_config.c:269-280`).
    fn verify_val(&mut self, flag: usize, value: usize) -> u64 {
        let text = self.cstr(value).to_vec();
        let number = scan(&text, 0);
        if number.end != text.len() {
            let what = format!(
                "suspicious val=({}) detected. flag=({})",
                show(&text),
                show(self.cstr(flag))
            );
            self.opensm_warn(Code::PartitionsSuspiciousValue, &what, self.loc_str(value));
        }
        number.strtoul()
    }

    fn truncated(&mut self, value: usize, read: u64, kept: u64) {
        if read != kept {
            let message = format!("{read} does not fit OpenSM's field: it keeps {kept}");
            self.warn(Code::PartitionsTruncated, message, self.loc_str(value));
        }
    }

    /// A value OpenSM says it skips.
    fn bad_value(&mut self, flag: &str, value: Option<usize>, at: usize, outcome: &str) {
        let what = format!("flag '{flag}' requires valid value - {outcome}");
        let at = self.loc_str(value.unwrap_or(at));
        self.opensm_warn(Code::PartitionsBadValue, &what, at);
    }

    /// A flag given 0 where OpenSM says it skips it but stores the 0 (`osm_prtn_config.c:291`).
    fn zero_stored(&mut self, flag: &str, value: usize) {
        let what = format!("flag '{flag}' requires valid value - skipped");
        let at = self.loc_str(value);
        self.diagnostics.push(
            Diagnostic::warning(
                Code::PartitionsBadValue,
                format!("PARSE WARN: line {}: {what}", self.lineno),
            )
            .at(Some(at))
            .with_help(format!("OpenSM says it skips it, but sets {flag} to 0")),
        );
    }

    /// A 32-bit group flag read with `verify_val`: `mtu`, `rate`, `Q_Key`, `TClass`.
    fn unsigned_flag(
        &mut self,
        flag: usize,
        value: Option<usize>,
        key: &str,
        bits: u32,
    ) -> Option<u64> {
        let Some(v) = value else {
            let outcome = if matches!(key, "Q_Key" | "TClass") {
                "using '0'"
            } else {
                "skipped"
            };
            self.bad_value(key, None, flag, outcome);
            return None;
        };
        let read = self.verify_val(flag, v);
        let kept = read & ((1u64 << bits) - 1);
        self.truncated(v, read, kept);
        if kept == 0 {
            if matches!(key, "Q_Key" | "TClass") {
                self.bad_value(key, Some(v), flag, "using '0'");
            } else {
                self.zero_stored(key, v);
            }
        }
        Some(kept)
    }

    /// `parse_group_flag` (`osm_prtn_config.c:283-357`): whether `flag` is a group flag.
    fn group_flag(&mut self, flags: &mut GroupFlags, flag: usize, value: Option<usize>) -> bool {
        const KEYS: [&str; 7] = ["mtu", "rate", "scope", "Q_Key", "TClass", "sl", "FlowLabel"];
        let word = self.cstr(flag).to_vec();
        let Some(key) = KEYS.into_iter().find(|key| key_starts_with(key, &word)) else {
            return false;
        };
        self.abbreviation(flag, key);
        match key {
            "mtu" | "rate" | "Q_Key" | "TClass" => {
                let bits = if key == "TClass" { 8 } else { 32 };
                // Unchanged without a value; with one, even 0, stored.
                if let Some(kept) = self.unsigned_flag(flag, value, key, bits) {
                    let kept32 = kept as u32;
                    match key {
                        "mtu" => flags.mtu = kept32,
                        "rate" => flags.rate = kept32,
                        "Q_Key" => flags.q_key = kept32,
                        _ => flags.tclass = kept as u8,
                    }
                }
            }
            "scope" => {
                let scope = value.map(|v| {
                    let read = self.verify_val(flag, v);
                    (v, read as u32)
                });
                match scope {
                    Some((_, scope)) if (1..=0xf).contains(&scope) => {
                        flags.scope_mask |= 1 << scope;
                    }
                    _ => self.bad_value("scope", value, flag, "skipped"),
                }
            }
            _ => {
                // sl and FlowLabel: strtoul into 32 bits, then a range and a trailing check.
                let (max, name) = if key == "sl" {
                    (15, "sl")
                } else {
                    (0xf_ffff, "FlowLabel")
                };
                let parsed = value.and_then(|v| {
                    let text = self.cstr(v);
                    let number = scan(text, 0);
                    let kept = number.strtoul() as u32;
                    let tail_ok = text.get(number.end).is_none_or(|&b| is_c_space(b));
                    (!text.is_empty() && kept <= max && tail_ok).then_some(kept)
                });
                match parsed {
                    Some(kept) if key == "sl" => flags.sl = kept as u8,
                    Some(kept) => flags.flow_label = kept,
                    None => self.bad_value(name, value, flag, "skipped"),
                }
            }
        }
        true
    }

    /// `partition_add_flag` (`osm_prtn_config.c:359-396`).
    fn partition_flag(&mut self, conf: &mut Conf, flag: usize, value: Option<usize>) {
        if self.group_flag(&mut conf.flags, flag, value) {
            return;
        }
        let word = self.cstr(flag).to_vec();
        if key_starts_with("ipoib", &word) {
            self.abbreviation(flag, "ipoib");
            conf.ipoib = true;
        } else if key_starts_with("defmember", &word) {
            self.abbreviation(flag, "defmember");
            match value.and_then(|v| self.membership_word(v)) {
                Some(membership) => conf.membership = membership,
                None => {
                    let what = "flag 'defmember' requires valid value (limited or full or \
                                both) - skipped";
                    let at = self.loc_str(value.unwrap_or(flag));
                    self.opensm_warn(Code::PartitionsBadValue, what, at);
                }
            }
        } else if word == b"indx0" {
            conf.indx0 = true;
        } else {
            let what = format!("unrecognized partition flag '{}' - ignored", show(&word));
            self.opensm_warn(Code::PartitionsIgnored, &what, self.loc_str(flag));
        }
    }

    /// `full`, `both` or `limited`, as prefixes, in OpenSM's order (an empty word is `full`).
    fn membership_word(&mut self, word: usize) -> Option<Membership> {
        let text = self.cstr(word).to_vec();
        let (key, membership) = [
            ("full", Membership::Full),
            ("both", Membership::Both),
            ("limited", Membership::Limited),
        ]
        .into_iter()
        .find(|(key, _)| key_starts_with(key, &text))?;
        self.abbreviation(word, key);
        Some(membership)
    }

    /// `partition_create` (`osm_prtn_config.c:216-267`) with `osm_prtn_make_new`
    /// (`osm_prtn.c:324-356`); `None` where OpenSM fails.
    fn create(
        &mut self,
        conf: &mut Conf,
        name: usize,
        id: Option<usize>,
        header: Location,
    ) -> Option<()> {
        let mut name_bytes = self.cstr(name).to_vec();
        let mut id = id.map(|v| (v, self.cstr(v).to_vec()));
        if id.is_none() && name_bytes.first().is_some_and(u8::is_ascii_digit) {
            id = Some((name, std::mem::take(&mut name_bytes)));
        }
        let written = match id {
            Some((at, text)) => {
                let number = scan(&text, 0);
                if !number.digits || number.end != text.len() {
                    return None;
                }
                let read = number.strtoul();
                self.truncated(at, read, read & 0xffff);
                Some(read as u16)
            }
            None => None,
        };
        let pkey = self.make_new(&name_bytes, written.unwrap_or(0) & DEFAULT_PKEY, name)?;
        conf.pkey = pkey;
        let name_text = String::from_utf8_lossy(&name_bytes).into_owned();
        if name_bytes.len() > NAME_MAX {
            let message =
                format!("a name above {NAME_MAX} bytes: OpenSM keeps the first {NAME_MAX}");
            self.warn(Code::PartitionsTruncated, message, self.loc_str(name));
        }
        conf.partition = Some(self.partitions.len());
        self.partitions.push(Partition {
            name: name_text,
            pkey: written,
            ipoib: conf.ipoib,
            indx0: conf.indx0,
            default_membership: conf.membership,
            flags: conf.flags,
            members: Vec::new(),
            mcgroups: Vec::new(),
        });
        self.places.push(header);
        Some(())
    }

    /// `osm_prtn_make_new`: the P_Key the definition gets (15 bits), or `None` when OpenSM has
    /// none left to generate.
    fn make_new(&mut self, name: &[u8], pkey: u16, name_at: usize) -> Option<u16> {
        let mut pkey = pkey;
        if pkey == 0 {
            let by_name = self
                .table
                .iter()
                .find(|(_, stored)| stored.as_slice() == name);
            if let Some((&found, _)) = by_name {
                let message = format!(
                    "a partition named '{}' exists (0x{found:04x}): OpenSM adds to it",
                    show(name)
                );
                self.warn(Code::PartitionsMerged, message, self.loc_str(name_at));
                return Some(found);
            }
            pkey = self.generate_pkey()?;
        }
        match self.table.get(&pkey) {
            // The file's own Default line adds to the Default OpenSM made before reading it.
            Some(_) if pkey == DEFAULT_PKEY && !self.file_pkeys.contains(&pkey) => {}
            Some(previous) => {
                // OpenSM's own message (`osm_prtn.c:347-350`), at level VERBOSE.
                let message = format!(
                    "Duplicated partition definition: '{}' (0x{pkey:04x}) prev name '{}'.  Will use it",
                    show(name),
                    show(previous)
                );
                self.warn(Code::PartitionsMerged, message, self.loc_str(name_at));
            }
            None => {
                let stored = if name.is_empty() {
                    format!("{pkey:04x}").into_bytes()
                } else {
                    name[..name.len().min(NAME_MAX)].to_vec()
                };
                self.table.insert(pkey, stored);
            }
        }
        self.file_pkeys.insert(pkey);
        Some(pkey)
    }

    /// `generate_pkey` (`osm_prtn.c:294-306`).
    fn generate_pkey(&mut self) -> Option<u16> {
        while self.pkey_counter < DEFAULT_PKEY - 1 {
            self.pkey_counter += 1;
            if !self.table.contains_key(&self.pkey_counter) {
                return Some(self.pkey_counter);
            }
        }
        None
    }

    /// `partition_add_port` (`osm_prtn_config.c:463-518`); `None` is a bad PortGUID.
    fn port(&mut self, conf: &Conf, name: usize, flag: Option<usize>) -> Option<()> {
        let word = self.cstr(name).to_vec();
        if word.is_empty() {
            return Some(());
        }
        if key_starts_with("NONE", &word) {
            self.abbreviation(name, "NONE");
            return Some(());
        }
        let membership = match flag {
            None => conf.membership,
            Some(f) => self.membership_word(f).unwrap_or_else(|| {
                let what = format!(
                    "unrecognized port flag '{}'. Assume 'limited'",
                    show(self.cstr(f))
                );
                self.opensm_warn(Code::PartitionsIgnored, &what, self.loc_str(f));
                Membership::Limited
            }),
        };
        const SETS: [(&str, Members); 5] = [
            ("ALL", Members::All),
            ("ALL_CAS", Members::AllCas),
            ("ALL_SWITCHES", Members::AllSwitches),
            ("ALL_ROUTERS", Members::AllRouters),
            ("SELF", Members::SmPort),
        ];
        let ports = match SETS
            .into_iter()
            .find(|(key, _)| key_starts_with(key, &word))
        {
            Some((key, ports)) => {
                self.abbreviation(name, key);
                ports
            }
            None => {
                let number = scan(&word, 0);
                let guid = number.strtoul();
                if guid == 0 || number.end != word.len() {
                    return None;
                }
                if number.negative || number.overflow {
                    let message = format!("OpenSM reads this GUID as 0x{guid:016x}");
                    self.warn(Code::PartitionsTruncated, message, self.loc_str(name));
                }
                Members::Port(Guid(guid))
            }
        };
        let index = conf.partition?;
        self.partitions[index]
            .members
            .push(Member { ports, membership });
        self.populated.push(conf.pkey);
        Some(())
    }

    /// `mgroup_create` (`osm_prtn_config.c:598-649`): the bytes its flags took.
    fn mgroup(
        &mut self,
        conf: &Conf,
        flags_start: usize,
        mgid: Option<usize>,
    ) -> Result<usize, PartitionsError> {
        let Some(mgid) = mgid else {
            let at = self.loc(flags_start.saturating_sub(1), 4);
            let message = "`mgid` without `=`: OpenSM passes NULL to inet_pton and crashes \
                           (segmentation fault)"
                .to_string();
            return Err(self.reject(Rejection::Crash, message, at));
        };
        let text = self.cstr(mgid).to_vec();
        // glibc's inet_pton and Rust's parser take the same RFC 4291 text forms.
        let parsed = std::str::from_utf8(&text)
            .ok()
            .and_then(|s| s.parse::<Ipv6Addr>().ok())
            .filter(|a| a.octets()[0] == 0xff);
        let Some(address) = parsed else {
            let message = format!(
                "PARSE ERROR partition conf file line {}: mgid \"{}\": gid is not multicast",
                self.lineno,
                show(&text)
            );
            self.warn(Code::PartitionsGroupDropped, message, self.loc_str(mgid));
            return Ok(0);
        };
        let mgid_at = self.loc_str(mgid);
        self.flags_after_mgid(flags_start);
        let mut flags = GroupFlags {
            tclass: 0,
            ..conf.flags
        };
        let len = self.mgroup_flags(&mut flags, flags_start);
        let mut bytes = address.octets();
        if matches!((bytes[2], bytes[3]), (0x40, 0x1b) | (0x60, 0x1b)) {
            let full_pkey = conf.pkey | 0x8000;
            if let Some(problem) = self.ip_group_problem(conf, &bytes, &flags) {
                self.warn(Code::PartitionsGroupDropped, problem, mgid_at);
                return Ok(len);
            }
            bytes[4..6].copy_from_slice(&full_pkey.to_be_bytes());
            if flags.q_key == 0 {
                flags.q_key = IPOIB_QKEY;
            }
        }
        if let Some(index) = conf.partition {
            self.partitions[index].mcgroups.push(McGroup {
                mgid: Gid::from_bytes(bytes),
                flags,
            });
        }
        Ok(len)
    }

    /// Where an mgid item ends its definition, OpenSM takes what follows as its flags.
    fn flags_after_mgid(&mut self, flags_start: usize) {
        let ended_by = self.chunk_byte(flags_start.wrapping_sub(1));
        let message = match ended_by {
            Some(b',') => return,
            Some(b';') if self.c(self.skip_blanks(flags_start)) != 0 => {
                "OpenSM reads the rest of the line after this `;` as the mgid's flags, not as \
                 definitions"
            }
            None if self.c(flags_start) != 0 => {
                "OpenSM reads this mgid's flags from what an earlier line left in its buffer"
            }
            _ => return,
        };
        self.warn(
            Code::PartitionsLineTrap,
            message.to_string(),
            self.loc(flags_start.saturating_sub(1), 1),
        );
    }

    /// The byte the file had at buffer index `i` of this line.
    fn chunk_byte(&self, i: usize) -> Option<u8> {
        let from = self.at - self.chunk.len;
        (i < self.chunk.len).then(|| self.src[from + i])
    }

    /// `parse_mgroup_flags` (`osm_prtn_config.c:570-596`).
    fn mgroup_flags(&mut self, flags: &mut GroupFlags, start: usize) -> usize {
        let mut p = start;
        let mut len = 0;
        loop {
            let comma = self.strchr(p, b',');
            if let Some(q) = comma {
                self.put(q, 0);
            }
            let item = self.name_token(p);
            if !self.group_flag(flags, item.name, item.value) {
                let what = format!(
                    "unrecognized mgroup flag '{}' - ignored",
                    show(self.cstr(item.name))
                );
                self.opensm_warn(Code::PartitionsIgnored, &what, self.loc_str(item.name));
            }
            p += item.len;
            len += item.len;
            if comma.is_none() {
                return len;
            }
        }
    }

    /// `ip_mgroup_pkey_ok`, `ip_mgroup_rate_ok`, `ip_mgroup_mtu_ok` (`osm_prtn_config.c:127-182`):
    /// OpenSM's message when the group is refused.
    fn ip_group_problem(&self, conf: &Conf, mgid: &[u8; 16], flags: &GroupFlags) -> Option<String> {
        let gid = Ipv6Addr::from(*mgid);
        let name = show(self.table.get(&conf.pkey).map_or(&[][..], Vec::as_slice));
        let mpkey = u16::from_be_bytes([mgid[4], mgid[5]]);
        let broadcast = u128::from_be_bytes(*mgid) == IPV4_BROADCAST;
        let pkey = conf.pkey;
        if !(broadcast || mpkey == 0 || mpkey == pkey | 0x8000) {
            return Some(format!(
                "IP MC group ({gid}) specified with invalid pkey 0x{mpkey:04x} for partition pkey = 0x{pkey:04x} ({name})"
            ));
        }
        // OpenSM prints these unsigned values with %d.
        if flags.rate != conf.flags.rate {
            return Some(format!(
                "IP MC group ({gid}) specified with invalid rate ({}): partition pkey = 0x{pkey:04x} ({name}) [Partition broadcast group rate = {}]",
                flags.rate as i32, conf.flags.rate as i32
            ));
        }
        if flags.mtu != conf.flags.mtu {
            return Some(format!(
                "IP MC group ({gid}) specified with invalid mtu ({}): partition pkey = 0x{pkey:04x} ({name}) [Partition broadcast group mtu = {}]",
                flags.mtu as i32, conf.flags.mtu as i32
            ));
        }
        None
    }
}

/// What OpenSM runs with, read from `src`.
pub(super) fn parse(
    file: &str,
    src: &[u8],
) -> Result<(Partitions, Vec<Location>, Vec<Diagnostic>), PartitionsError> {
    let mut parser = Parser::new(file, src);
    parser.file()?;
    Ok((
        Partitions {
            partitions: parser.partitions,
        },
        parser.places,
        parser.diagnostics,
    ))
}
