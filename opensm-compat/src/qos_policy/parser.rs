//! OpenSM's grammar (`opensm/osm_qos_parser_y.y:285-2376`) by recursive descent. The parser
//! reads a token ahead exactly where bison's LALR tables need one (after a list item, a string
//! piece or a range's first number, never after a single number or a block's end), so an
//! error raised by a grammar action carries the position OpenSM reports.

use std::collections::BTreeMap;

use ibqos_qos::policy::setup::ScopeId;
use ibqos_qos::policy::{
    MAX_PORTS_ON_SWITCH, MatchRule, NodeTypes, PortGroup, PortName, QosLevel, QosPolicy, RangeSet,
    Sl2vlScope, Ulp, UlpKind, VlarbScope,
};
use ibqos_text::{Code, Diagnostic, Location, cnum};

use super::PolicyError;
use super::lexer::{Block, Field, Lexeme, Lexer, NodeTypeWord, Token, UlpHead};

/// A `port-guid` range with more GUIDs than this takes OpenSM seconds to minutes per sweep
/// (it looks up each one; 2^26 take about half a second).
const GUIDS_OPENSM_WALKS_QUICKLY: u128 = 1 << 26;
/// `IB_MIN_MTU`..`IB_MAX_MTU`, `IB_MIN_RATE`..`IB_MAX_RATE` of OpenSM 3.3.23 (`ib_types.h`).
const MTU_LIMITS: (u64, u64) = (1, 5);
const RATE_LIMITS: (u64, u64) = (2, 22);

type Parsed<T> = Result<T, PolicyError>;

pub struct Parser<'a> {
    file: &'a str,
    src: &'a [u8],
    lexer: Lexer<'a>,
    peeked: Option<Lexeme>,
    /// The span of the last token scanned, where an error points.
    last: (usize, usize),
    pub policy: QosPolicy,
    pub diagnostics: Vec<Diagnostic>,
    /// Where each qos-setup scope starts: its `vlarb-scope` or `sl2vl-scope` keyword.
    pub setup_places: BTreeMap<ScopeId, Location>,
}

/// A string as the grammar's `single_string` builds it, with where it was.
struct Text {
    value: String,
    start: usize,
    end: usize,
}

impl<'a> Parser<'a> {
    pub fn new(file: &'a str, src: &'a [u8]) -> Parser<'a> {
        Parser {
            file,
            src,
            lexer: Lexer::new(src),
            peeked: None,
            last: (0, 0),
            policy: QosPolicy::default(),
            diagnostics: Vec::new(),
            setup_places: BTreeMap::new(),
        }
    }

    fn scan(&mut self) -> Lexeme {
        let lexeme = self.lexer.next();
        self.last = (lexeme.start, lexeme.end);
        lexeme
    }

    fn peek(&mut self) -> &Token {
        if self.peeked.is_none() {
            self.peeked = Some(self.scan());
        }
        &self.peeked.as_ref().expect("just scanned").token
    }

    fn take(&mut self) -> Lexeme {
        match self.peeked.take() {
            Some(lexeme) => lexeme,
            None => self.scan(),
        }
    }

    fn location(&self, start: usize, end: usize) -> Location {
        Location::in_source(self.file, self.src, start, end)
    }

    /// `yyerror(message)` now: OpenSM's position is wherever its scanner stands.
    fn fail<T>(&self, message: impl Into<String>) -> Parsed<T> {
        let position = self.lexer.position();
        Err(PolicyError {
            line: position.line,
            col: position.col,
            message: message.into(),
            location: self.location(self.last.0, self.last.1),
        })
    }

    fn syntax_error<T>(&self) -> Parsed<T> {
        self.fail("syntax error")
    }

    fn warn(&mut self, code: Code, start: usize, end: usize, message: String, help: &str) {
        let location = self.location(start, end);
        let mut d = Diagnostic::warning(code, message).at(Some(location));
        if !help.is_empty() {
            d = d.with_help(help);
        }
        self.diagnostics.push(d);
    }

    pub fn file(&mut self) -> Parsed<()> {
        loop {
            let lexeme = self.take();
            match lexeme.token {
                Token::Eof => return Ok(()),
                Token::Block(Block::QosUlpsStart) => self.qos_ulps()?,
                Token::Block(Block::PortGroupsStart) => self.port_groups()?,
                Token::Block(Block::QosSetupStart) => {
                    self.warn(
                        Code::PolicySetupIgnored,
                        lexeme.start,
                        lexeme.end,
                        "OpenSM parses and checks qos-setup, then programs nothing from it"
                            .to_string(),
                        "use opensm.conf's qos_* options, or ibqos.toml",
                    );
                    self.qos_setup()?
                }
                Token::Block(Block::QosLevelsStart) => self.qos_levels()?,
                Token::Block(Block::QosMatchRulesStart) => self.match_rules()?,
                _ => return self.syntax_error(),
            }
        }
    }

    fn number(&mut self) -> Parsed<u64> {
        let lexeme = self.take();
        let Token::Number(text) = &lexeme.token else {
            return self.syntax_error();
        };
        let n = cnum::scan(text, 0);
        if let Some(decimal) = n.octal_surprise(text) {
            self.warn(
                Code::PolicyOctalNumber,
                lexeme.start,
                lexeme.end,
                format!(
                    "{} is octal to OpenSM: {} (not {decimal})",
                    String::from_utf8_lossy(text),
                    n.strtoul()
                ),
                "drop the leading 0",
            );
        }
        Ok(n.strtoul())
    }

    /// `list_of_ranges`: `N` or `N-M`, comma-separated.
    fn ranges(&mut self) -> Parsed<Vec<(u64, u64)>> {
        let mut ranges = Vec::new();
        loop {
            let first = self.number()?;
            if *self.peek() == Token::Dash {
                self.take();
                ranges.push((first, self.number()?));
            } else {
                ranges.push((first, first));
            }
            if *self.peek() != Token::Comma {
                return Ok(ranges);
            }
            self.take();
        }
    }

    /// `num_list`.
    fn numbers(&mut self) -> Parsed<Vec<u64>> {
        let mut numbers = vec![self.number()?];
        while *self.peek() == Token::Comma {
            self.take();
            numbers.push(self.number()?);
        }
        Ok(numbers)
    }

    /// `num_list_with_dotdot`: `N:M` pairs.
    fn pairs(&mut self) -> Parsed<Vec<(u64, u64)>> {
        let mut pairs = Vec::new();
        loop {
            let first = self.number()?;
            if self.take().token != Token::DotDot {
                return self.syntax_error();
            }
            pairs.push((first, self.number()?));
            if *self.peek() != Token::Comma {
                return Ok(pairs);
            }
            self.take();
        }
    }

    /// `single_string`: text pieces joined, outer whitespace stripped.
    fn string(&mut self) -> Parsed<Text> {
        let first = self.take();
        let Token::Text(mut bytes) = first.token else {
            return self.syntax_error();
        };
        let mut end = first.end;
        let mut spaces_lost = false;
        while let Token::Text(_) = self.peek() {
            let piece = self.take();
            spaces_lost |= piece.after_blank;
            if let Token::Text(more) = piece.token {
                bytes.extend(more);
            }
            end = piece.end;
        }
        let trimmed = trim_c_space(&bytes);
        let value = String::from_utf8_lossy(trimmed).into_owned();
        if spaces_lost {
            self.warn(
                Code::PolicySpacesDropped,
                first.start,
                end,
                format!("OpenSM drops the blanks of unquoted text: this reads as `{value}`"),
                "put the text in double quotes",
            );
        }
        Ok(Text {
            value,
            start: first.start,
            end,
        })
    }

    /// `string_list`.
    fn strings(&mut self) -> Parsed<Vec<Text>> {
        let mut strings = vec![self.string()?];
        while *self.peek() == Token::Comma {
            self.take();
            strings.push(self.string()?);
        }
        Ok(strings)
    }

    fn names(&mut self) -> Parsed<Vec<String>> {
        Ok(self.strings()?.into_iter().map(|t| t.value).collect())
    }

    fn qos_ulps(&mut self) -> Parsed<()> {
        let mut count = 0;
        loop {
            let lexeme = self.take();
            match lexeme.token {
                Token::Ulp(head) => self.ulp(head, &lexeme)?,
                Token::Block(Block::QosUlpsEnd) if count > 0 => return Ok(()),
                _ => return self.syntax_error(),
            }
            count += 1;
        }
    }

    fn ulp(&mut self, head: UlpHead, lexeme: &Lexeme) -> Parsed<()> {
        let kind = match head {
            UlpHead::Default => UlpKind::Default,
            UlpHead::SdpDefault => UlpKind::Sdp,
            UlpHead::RdsDefault => UlpKind::Rds,
            UlpHead::IserDefault => UlpKind::Iser,
            UlpHead::IpoibDefault => UlpKind::Ipoib,
            _ => {
                let ranges = self.ranges()?;
                if self.take().token != Token::DotDot {
                    return self.syntax_error();
                }
                self.ulp_with_ranges(head, ranges)?
            }
        };
        if matches!(kind, UlpKind::Ipoib | UlpKind::IpoibPkeys(_)) {
            self.warn(
                Code::PolicyIpoibPartition,
                lexeme.start,
                lexeme.end,
                "OpenSM drops the whole policy unless each partition of this line has at \
                 least two full members"
                    .to_string(),
                "",
            );
        }
        let sl = self.number()?;
        if sl > 15 {
            return self.fail("illegal SL value");
        }
        self.policy.ulps.push(Ulp { kind, sl: sl as u8 });
        Ok(())
    }

    fn ulp_with_ranges(&mut self, head: UlpHead, ranges: Vec<(u64, u64)>) -> Parsed<UlpKind> {
        let ports = |p: &Self| -> Parsed<RangeSet> {
            let set = RangeSet::new(ranges.iter().copied());
            if set.ranges().iter().any(|&(_, end)| end > 0xFFFF) {
                // OpenSM says SDP for RDS and iSER too (`osm_qos_parser_y.y:862,902`).
                return p.fail("SDP port number out of range");
            }
            Ok(set)
        };
        let plain = || RangeSet::new(ranges.iter().copied());
        let pkeys = || RangeSet::pkeys(ranges.iter().copied());
        Ok(match head {
            UlpHead::AnyServiceId => UlpKind::AnyServiceIds(plain()),
            UlpHead::AnyPkey => UlpKind::AnyPkeys(pkeys()),
            UlpHead::AnyTargetPortGuid => UlpKind::AnyTargets(plain()),
            UlpHead::AnySourcePortGuid => UlpKind::AnySources(plain()),
            UlpHead::AnySourceTargetPortGuid => UlpKind::AnySourcesTargets(plain()),
            UlpHead::SdpPort => UlpKind::SdpPorts(ports(self)?),
            UlpHead::RdsPort => UlpKind::RdsPorts(ports(self)?),
            UlpHead::IserPort => UlpKind::IserPorts(ports(self)?),
            UlpHead::SrpGuid => UlpKind::SrpTargets(plain()),
            UlpHead::IpoibPkey => UlpKind::IpoibPkeys(pkeys()),
            UlpHead::Default
            | UlpHead::SdpDefault
            | UlpHead::RdsDefault
            | UlpHead::IserDefault
            | UlpHead::IpoibDefault => unreachable!("heads without ranges are handled above"),
        })
    }

    fn port_groups(&mut self) -> Parsed<()> {
        let mut count = 0;
        loop {
            match self.take().token {
                Token::Block(Block::PortGroupStart) => self.port_group()?,
                Token::Block(Block::PortGroupsEnd) if count > 0 => return Ok(()),
                _ => return self.syntax_error(),
            }
            count += 1;
        }
    }

    fn port_group(&mut self) -> Parsed<()> {
        let mut group = PortGroup::default();
        let mut name = None;
        loop {
            let lexeme = self.take();
            match lexeme.token {
                Token::Field(Field::Name) => {
                    let text = self.string()?;
                    if name.is_some() {
                        return self.fail("port-group has multiple 'name' tags");
                    }
                    name = Some(text.value);
                }
                Token::Field(Field::Use) => {
                    let text = self.string()?;
                    if group.usage.is_some() {
                        return self.fail("port-group has multiple 'use' tags");
                    }
                    group.usage = Some(text.value);
                }
                Token::Field(Field::PortGuid) => {
                    let ranges = RangeSet::new(self.ranges()?);
                    let (start, end) = self.last;
                    if ranges.count() > GUIDS_OPENSM_WALKS_QUICKLY {
                        self.warn(
                            Code::PolicyHugeGuidRange,
                            lexeme.start,
                            start.max(end),
                            format!(
                                "OpenSM looks up each of these {} GUIDs at every sweep, holding \
                                 its lock: the SM stalls (a full 64-bit range never ends)",
                                ranges.count()
                            ),
                            "list the GUIDs of the fabric instead",
                        );
                    }
                    group.port_guids = group.port_guids.union(&ranges);
                }
                Token::Field(Field::PortName) => {
                    for text in self.strings()? {
                        group.port_names.push(self.port_name(&text)?);
                    }
                }
                Token::Field(Field::Pkey) => {
                    group.pkeys = group.pkeys.union(&RangeSet::pkeys(self.ranges()?));
                }
                Token::Field(Field::Partition) => {
                    let names = self.names()?;
                    group.partitions.extend(names);
                }
                Token::Field(Field::NodeType) => {
                    group.node_types = group.node_types.union(self.node_types()?);
                }
                Token::Block(Block::PortGroupEnd) => {
                    let Some(name) = name else {
                        return self
                            .fail("port-group validation failed - no port group name specified");
                    };
                    group.name = name;
                    self.policy.port_groups.push(group);
                    return Ok(());
                }
                _ => return self.syntax_error(),
            }
        }
    }

    /// `node/Pn`, checked as `osm_qos_parser_y.y:1180-1202` checks it.
    fn port_name(&self, text: &Text) -> Parsed<PortName> {
        let value = text.value.as_bytes();
        let slash = value.iter().rposition(|&b| b == b'/');
        let Some(slash) =
            slash.filter(|&s| value.len() - s >= 3 && matches!(value[s + 1], b'p' | b'P'))
        else {
            return self.fail(format!("'{}' - illegal port name", text.value));
        };
        // `unsigned port_num = strtoul(...)`: the low 32 bits.
        let port = cnum::scan(&value[slash + 2..], 0).strtoul() as u32;
        if port == 0 {
            return self.fail(format!(
                "'{}' - illegal port number in port name",
                text.value
            ));
        }
        Ok(PortName {
            node: String::from_utf8_lossy(&value[..slash]).into_owned(),
            port,
        })
    }

    fn node_types(&mut self) -> Parsed<NodeTypes> {
        let mut types = NodeTypes::default();
        loop {
            let word = match self.take().token {
                Token::NodeType(word) => word,
                _ => return self.syntax_error(),
            };
            types = types.union(match word {
                NodeTypeWord::Ca => NodeTypes {
                    ca: true,
                    ..NodeTypes::default()
                },
                NodeTypeWord::Switch => NodeTypes {
                    switch: true,
                    ..NodeTypes::default()
                },
                NodeTypeWord::Router => NodeTypes {
                    router: true,
                    ..NodeTypes::default()
                },
                NodeTypeWord::All => NodeTypes::ALL,
                NodeTypeWord::SelfPort => NodeTypes {
                    self_port: true,
                    ..NodeTypes::default()
                },
            });
            if *self.peek() != Token::Comma {
                return Ok(types);
            }
            self.take();
        }
    }

    fn qos_setup(&mut self) -> Parsed<()> {
        loop {
            match self.take().token {
                Token::Block(Block::VlarbTablesStart) => self.scopes(
                    Block::VlarbScopeStart,
                    Block::VlarbTablesEnd,
                    |p| ScopeId::Vlarb(p.policy.setup.vlarb_scopes.len() + 1),
                    Self::vlarb_scope,
                )?,
                Token::Block(Block::Sl2vlTablesStart) => self.scopes(
                    Block::Sl2vlScopeStart,
                    Block::Sl2vlTablesEnd,
                    |p| ScopeId::Sl2vl(p.policy.setup.sl2vl_scopes.len() + 1),
                    Self::sl2vl_scope,
                )?,
                Token::Block(Block::QosSetupEnd) => return Ok(()),
                _ => return self.syntax_error(),
            }
        }
    }

    /// The scopes of `vlarb-tables` or `sl2vl-tables` up to `end`, each read by `scope` and its
    /// keyword's place kept under the id `next_id` gives it.
    fn scopes(
        &mut self,
        start: Block,
        end: Block,
        next_id: fn(&Self) -> ScopeId,
        scope: fn(&mut Self) -> Parsed<()>,
    ) -> Parsed<()> {
        loop {
            let lexeme = self.take();
            match lexeme.token {
                Token::Block(block) if block == start => {
                    let at = self.location(lexeme.start, lexeme.end);
                    self.setup_places.insert(next_id(self), at);
                    scope(self)?
                }
                Token::Block(block) if block == end => return Ok(()),
                _ => return self.syntax_error(),
            }
        }
    }

    fn vlarb_scope(&mut self) -> Parsed<()> {
        let mut scope = VlarbScope::default();
        loop {
            match self.take().token {
                Token::Field(Field::Group) => {
                    let names = self.names()?;
                    scope.groups.extend(names);
                }
                Token::Field(Field::Across) => {
                    let names = self.names()?;
                    scope.across.extend(names);
                }
                Token::Field(Field::VlarbHigh) => {
                    let pairs = self.pairs()?;
                    scope.vlarb_high.extend(pairs);
                }
                Token::Field(Field::VlarbLow) => {
                    let pairs = self.pairs()?;
                    scope.vlarb_low.extend(pairs);
                }
                Token::Field(Field::VlHighLimit) => {
                    scope.vl_high_limit = Some(self.number()? as u32);
                }
                Token::Block(Block::VlarbScopeEnd) => {
                    if scope.groups.is_empty() && scope.across.is_empty() {
                        return self.fail(
                            "vlarb-scope validation failed - no port groups specified by \
                             'group' or by 'across'",
                        );
                    }
                    self.policy.setup.vlarb_scopes.push(scope);
                    return Ok(());
                }
                _ => return self.syntax_error(),
            }
        }
    }

    fn sl2vl_scope(&mut self) -> Parsed<()> {
        let mut scope = Sl2vlScope::default();
        let mut table_set = false;
        loop {
            match self.take().token {
                Token::Field(Field::Group) => {
                    let names = self.names()?;
                    scope.groups.extend(names);
                }
                Token::Field(Field::Across) => {
                    let names = self.names()?;
                    scope.across_from.extend(names.iter().cloned());
                    scope.across_to.extend(names);
                }
                Token::Field(Field::AcrossFrom) => {
                    let names = self.names()?;
                    scope.across_from.extend(names);
                }
                Token::Field(Field::AcrossTo) => {
                    let names = self.names()?;
                    scope.across_to.extend(names);
                }
                Token::Field(Field::From) => scope.from |= self.ports("from")?,
                Token::Field(Field::To) => scope.to |= self.ports("to")?,
                Token::Field(Field::Sl2vlTable) => {
                    let values = self.numbers()?;
                    if table_set {
                        return self.fail("sl2vl-scope has more than one sl2vl-table");
                    }
                    if values.len() != scope.sl2vl_table.len() {
                        return self.fail("wrong number of values in 'sl2vl-table' (should be 16)");
                    }
                    if values.iter().any(|&v| v >= 16) {
                        return self.fail("wrong VL value in 'sl2vl-table' (should be 0 to 15)");
                    }
                    for (slot, v) in scope.sl2vl_table.iter_mut().zip(values) {
                        *slot = v as u8;
                    }
                    table_set = true;
                }
                Token::Block(Block::Sl2vlScopeEnd) => {
                    if !table_set {
                        return self
                            .fail("sl2vl-scope validation failed - no sl2vl table specified");
                    }
                    if scope.groups.is_empty()
                        && scope.across_to.is_empty()
                        && scope.across_from.is_empty()
                    {
                        return self.fail(
                            "sl2vl-scope validation failed - no port groups specified by \
                             'group', 'across-to' or 'across-from'",
                        );
                    }
                    self.policy.setup.sl2vl_scopes.push(scope);
                    return Ok(());
                }
                _ => return self.syntax_error(),
            }
        }
    }

    /// `from:`/`to:`: `*` or port ranges below 128, as a bit set.
    fn ports(&mut self, list: &str) -> Parsed<u128> {
        if *self.peek() == Token::Asterisk {
            self.take();
            return Ok(u128::MAX);
        }
        let mut bits = 0u128;
        for (a, b) in self.ranges()? {
            let (low, high) = (a.min(b), a.max(b));
            if high >= MAX_PORTS_ON_SWITCH {
                return self.fail(format!("port number out of range '{list}' list"));
            }
            for port in low..=high {
                bits |= 1 << port;
            }
        }
        Ok(bits)
    }

    fn qos_levels(&mut self) -> Parsed<()> {
        loop {
            match self.take().token {
                Token::Block(Block::QosLevelStart) => self.qos_level()?,
                Token::Block(Block::QosLevelsEnd) => return Ok(()),
                _ => return self.syntax_error(),
            }
        }
    }

    /// A single number field of a qos-level that may appear once.
    fn once(&mut self, seen: bool, field: &str) -> Parsed<(u64, usize, usize)> {
        let value = self.number()?;
        if seen {
            return self.fail(format!("'qos-level' has multiple '{field}' tags"));
        }
        Ok((value, self.last.0, self.last.1))
    }

    fn qos_level(&mut self) -> Parsed<()> {
        let mut level = QosLevel::default();
        let (mut name, mut sl) = (None, None);
        loop {
            let lexeme = self.take();
            match lexeme.token {
                Token::Field(Field::Name) => {
                    let text = self.string()?;
                    if name.is_some() {
                        return self.fail("qos-level has multiple 'name' tags");
                    }
                    name = Some(text);
                }
                Token::Field(Field::Use) => {
                    let text = self.string()?;
                    if level.usage.is_some() {
                        return self.fail("qos-level has multiple 'use' tags");
                    }
                    level.usage = Some(text.value);
                }
                Token::Field(Field::Sl) => {
                    let (value, s, e) = self.once(sl.is_some(), "sl")?;
                    if value > 15 {
                        let read = value as u8;
                        let more = if u64::from(read) != value {
                            format!(" (OpenSM keeps the low 8 bits: {read})")
                        } else {
                            String::new()
                        };
                        self.warn(
                            Code::PolicySlAbove15,
                            s,
                            e,
                            format!(
                                "SL {value} is above 15{more}: OpenSM accepts it, then answers \
                                 no PathRecord for any path that matches this level"
                            ),
                            "",
                        );
                    }
                    sl = Some(value as u8);
                }
                Token::Field(Field::MtuLimit) => {
                    let (value, ..) = self.once(level.mtu_limit.is_some(), "mtu-limit")?;
                    self.limit(value, MTU_LIMITS, "mtu")?;
                    level.mtu_limit = Some(value as u8);
                }
                Token::Field(Field::RateLimit) => {
                    let (value, ..) = self.once(level.rate_limit.is_some(), "rate-limit")?;
                    self.limit(value, RATE_LIMITS, "rate")?;
                    level.rate_limit = Some(value as u8);
                }
                Token::Field(Field::PacketLife) => {
                    let (value, s, e) = self.once(level.packet_life.is_some(), "packet-life")?;
                    if value > u64::from(u8::MAX) {
                        self.warn(
                            Code::PolicyValueTruncated,
                            s,
                            e,
                            format!("OpenSM keeps the low 8 bits of {value}: {}", value as u8),
                            "",
                        );
                    }
                    level.packet_life = Some(value as u8);
                }
                Token::Field(Field::PathBits) => {
                    level.path_bits = level.path_bits.union(&RangeSet::new(self.ranges()?));
                    self.warn(
                        Code::PolicyPathBitsUnused,
                        lexeme.start,
                        lexeme.end,
                        "OpenSM parses path-bits and uses it for nothing".to_string(),
                        "",
                    );
                }
                Token::Field(Field::Pkey) => {
                    level.pkeys = level.pkeys.union(&RangeSet::pkeys(self.ranges()?));
                }
                Token::Block(Block::QosLevelEnd) => {
                    let Some(sl) = sl else {
                        return self.fail("qos-level validation failed - no 'sl' specified");
                    };
                    let Some(name) = name else {
                        return self.fail("qos-level validation failed - no 'name' specified");
                    };
                    self.note_duplicate_default(&name);
                    level.sl = sl;
                    level.name = name.value;
                    self.policy.qos_levels.push(level);
                    return Ok(());
                }
                _ => return self.syntax_error(),
            }
        }
    }

    fn note_duplicate_default(&mut self, name: &Text) {
        let default = ibqos_qos::policy::DEFAULT_LEVEL_NAME;
        let is_default = name.value.eq_ignore_ascii_case(default);
        if is_default
            && self
                .policy
                .qos_levels
                .iter()
                .any(|l| l.name.eq_ignore_ascii_case(default))
        {
            self.warn(
                Code::PolicyDuplicateDefault,
                name.start,
                name.end,
                "a qos-level named default is already defined: OpenSM uses the first".to_string(),
                "",
            );
        }
    }

    /// `mtu limit is out of range, value: %d` prints the low 32 bits as a signed int.
    fn limit(&self, value: u64, (low, high): (u64, u64), what: &str) -> Parsed<()> {
        if value < low || value > high {
            return self.fail(format!(
                "{what} limit is out of range, value: {}",
                value as u32 as i32
            ));
        }
        Ok(())
    }

    fn match_rules(&mut self) -> Parsed<()> {
        loop {
            match self.take().token {
                Token::Block(Block::QosMatchRuleStart) => self.match_rule()?,
                Token::Block(Block::QosMatchRulesEnd) => return Ok(()),
                _ => return self.syntax_error(),
            }
        }
    }

    fn match_rule(&mut self) -> Parsed<()> {
        let mut rule = MatchRule::default();
        let mut level = None;
        loop {
            match self.take().token {
                Token::Field(Field::Use) => {
                    let text = self.string()?;
                    if rule.usage.is_some() {
                        return self.fail("'qos-match-rule' has multiple 'use' tags");
                    }
                    rule.usage = Some(text.value);
                }
                Token::Field(Field::QosClass) => {
                    rule.qos_classes = rule.qos_classes.union(&RangeSet::new(self.ranges()?));
                }
                Token::Field(Field::QosLevelName) => {
                    let text = self.string()?;
                    if level.is_some() {
                        return self.fail("qos-match-rule has multiple 'qos-level-name' tags");
                    }
                    level = Some(text.value);
                }
                Token::Field(Field::Source) => {
                    let names = self.names()?;
                    rule.sources.extend(names);
                }
                Token::Field(Field::Destination) => {
                    let names = self.names()?;
                    rule.destinations.extend(names);
                }
                Token::Field(Field::ServiceId) => {
                    rule.service_ids = rule.service_ids.union(&RangeSet::new(self.ranges()?));
                }
                Token::Field(Field::Pkey) => {
                    rule.pkeys = rule.pkeys.union(&RangeSet::pkeys(self.ranges()?));
                }
                Token::Block(Block::QosMatchRuleEnd) => {
                    let Some(level) = level else {
                        return self
                            .fail("match-rule validation failed - no 'qos-level-name' specified");
                    };
                    rule.level = level;
                    self.policy.match_rules.push(rule);
                    return Ok(());
                }
                _ => return self.syntax_error(),
            }
        }
    }
}

/// `__parser_strip_white`: C `isspace` off both ends.
fn trim_c_space(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| !cnum::is_c_space(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !cnum::is_c_space(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}
