//! The tokens of qos-policy.conf exactly as OpenSM's flex scanner cuts them
//! (`opensm/osm_qos_parser_l.l`): longest match, the earlier rule on a tie, context flags that
//! a newline clears.

/// A keyword that opens or closes a section or a block (`osm_qos_parser_l.l:128-182`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    QosUlpsStart,
    QosUlpsEnd,
    PortGroupsStart,
    PortGroupsEnd,
    PortGroupStart,
    PortGroupEnd,
    QosSetupStart,
    QosSetupEnd,
    VlarbTablesStart,
    VlarbTablesEnd,
    VlarbScopeStart,
    VlarbScopeEnd,
    Sl2vlTablesStart,
    Sl2vlTablesEnd,
    Sl2vlScopeStart,
    Sl2vlScopeEnd,
    QosLevelsStart,
    QosLevelsEnd,
    QosLevelStart,
    QosLevelEnd,
    QosMatchRulesStart,
    QosMatchRulesEnd,
    QosMatchRuleStart,
    QosMatchRuleEnd,
}

/// In flex's rule order, which breaks ties between matches of one length.
const BLOCKS: [(&str, Block); 24] = [
    ("qos-ulps", Block::QosUlpsStart),
    ("end-qos-ulps", Block::QosUlpsEnd),
    ("port-groups", Block::PortGroupsStart),
    ("end-port-groups", Block::PortGroupsEnd),
    ("port-group", Block::PortGroupStart),
    ("end-port-group", Block::PortGroupEnd),
    ("qos-setup", Block::QosSetupStart),
    ("end-qos-setup", Block::QosSetupEnd),
    ("vlarb-tables", Block::VlarbTablesStart),
    ("end-vlarb-tables", Block::VlarbTablesEnd),
    ("vlarb-scope", Block::VlarbScopeStart),
    ("end-vlarb-scope", Block::VlarbScopeEnd),
    ("sl2vl-tables", Block::Sl2vlTablesStart),
    ("end-sl2vl-tables", Block::Sl2vlTablesEnd),
    ("sl2vl-scope", Block::Sl2vlScopeStart),
    ("end-sl2vl-scope", Block::Sl2vlScopeEnd),
    ("qos-levels", Block::QosLevelsStart),
    ("end-qos-levels", Block::QosLevelsEnd),
    ("qos-level", Block::QosLevelStart),
    ("end-qos-level", Block::QosLevelEnd),
    ("qos-match-rules", Block::QosMatchRulesStart),
    ("end-qos-match-rules", Block::QosMatchRulesEnd),
    ("qos-match-rule", Block::QosMatchRuleStart),
    ("end-qos-match-rule", Block::QosMatchRuleEnd),
];

/// A field keyword; the scanner takes it with its colon (`KW[ \t]*:[ \t]*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    PortGuid,
    PortName,
    Partition,
    NodeType,
    Name,
    Use,
    Group,
    VlarbHigh,
    VlarbLow,
    VlHighLimit,
    To,
    From,
    AcrossTo,
    AcrossFrom,
    Across,
    Sl2vlTable,
    Sl,
    MtuLimit,
    RateLimit,
    PacketLife,
    PathBits,
    QosClass,
    Source,
    Destination,
    ServiceId,
    Pkey,
    QosLevelName,
}

/// In flex's rule order (`osm_qos_parser_l.l:243-269`).
const FIELDS: [(&str, Field); 27] = [
    ("port-guid", Field::PortGuid),
    ("port-name", Field::PortName),
    ("partition", Field::Partition),
    ("node-type", Field::NodeType),
    ("name", Field::Name),
    ("use", Field::Use),
    ("group", Field::Group),
    ("vlarb-high", Field::VlarbHigh),
    ("vlarb-low", Field::VlarbLow),
    ("vl-high-limit", Field::VlHighLimit),
    ("to", Field::To),
    ("from", Field::From),
    ("across-to", Field::AcrossTo),
    ("across-from", Field::AcrossFrom),
    ("across", Field::Across),
    ("sl2vl-table", Field::Sl2vlTable),
    ("sl", Field::Sl),
    ("mtu-limit", Field::MtuLimit),
    ("rate-limit", Field::RateLimit),
    ("packet-life", Field::PacketLife),
    ("path-bits", Field::PathBits),
    ("qos-class", Field::QosClass),
    ("source", Field::Source),
    ("destination", Field::Destination),
    ("service-id", Field::ServiceId),
    ("pkey", Field::Pkey),
    ("qos-level-name", Field::QosLevelName),
];

impl Field {
    /// What the field makes of the rest of its line (`START_*`, `osm_qos_parser_l.l:77-124`).
    fn context(self) -> Context {
        match self {
            Field::Use => Context::Description,
            Field::PortName
            | Field::Partition
            | Field::Name
            | Field::QosLevelName
            | Field::Group
            | Field::Across
            | Field::AcrossTo
            | Field::AcrossFrom
            | Field::Source
            | Field::Destination => Context::Strings,
            Field::NodeType => Context::NodeTypes,
            _ => Context::Numbers,
        }
    }
}

/// A node type word, case-insensitive; a token of its own only after `node-type:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeTypeWord {
    Router,
    Ca,
    Switch,
    SelfPort,
    All,
}

const NODE_TYPES: [(&str, NodeTypeWord); 5] = [
    ("router", NodeTypeWord::Router),
    ("ca", NodeTypeWord::Ca),
    ("switch", NodeTypeWord::Switch),
    ("self", NodeTypeWord::SelfPort),
    ("all", NodeTypeWord::All),
];

/// The head of a qos-ulps line: a case-insensitive ULP name and `:`, or `,` and a
/// case-sensitive sub-keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UlpHead {
    Default,
    AnyServiceId,
    AnyPkey,
    AnyTargetPortGuid,
    AnySourcePortGuid,
    AnySourceTargetPortGuid,
    SdpDefault,
    SdpPort,
    RdsDefault,
    RdsPort,
    IserDefault,
    IserPort,
    SrpGuid,
    IpoibDefault,
    IpoibPkey,
}

/// `(ULP name, None)` is `ULP[ \t]*:[ \t]*`; `(ULP, Some(kw))` is `ULP[ \t]*,[ \t]*kw`
/// (`osm_qos_parser_l.l:277-296`).
const ULP_HEADS: [(&str, Option<&str>, UlpHead); 15] = [
    ("default", None, UlpHead::Default),
    ("any", Some("service-id"), UlpHead::AnyServiceId),
    ("any", Some("pkey"), UlpHead::AnyPkey),
    ("any", Some("target-port-guid"), UlpHead::AnyTargetPortGuid),
    ("any", Some("source-port-guid"), UlpHead::AnySourcePortGuid),
    (
        "any",
        Some("source-target-port-guid"),
        UlpHead::AnySourceTargetPortGuid,
    ),
    ("sdp", None, UlpHead::SdpDefault),
    ("sdp", Some("port-num"), UlpHead::SdpPort),
    ("rds", None, UlpHead::RdsDefault),
    ("rds", Some("port-num"), UlpHead::RdsPort),
    ("iser", None, UlpHead::IserDefault),
    ("iser", Some("port-num"), UlpHead::IserPort),
    ("srp", Some("target-port-guid"), UlpHead::SrpGuid),
    ("ipoib", None, UlpHead::IpoibDefault),
    ("ipoib", Some("pkey"), UlpHead::IpoibPkey),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Number(Vec<u8>),
    Dash,
    DotDot,
    Comma,
    Asterisk,
    /// Text as the parser gets it: quotes removed, cut at a NUL byte as `strdup` cuts it.
    Text(Vec<u8>),
    Block(Block),
    Field(Field),
    NodeType(NodeTypeWord),
    Ulp(UlpHead),
    Eof,
}

/// A token with where it is in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lexeme {
    pub token: Token,
    /// Byte offsets of the token's text (for a located diagnostic).
    pub start: usize,
    pub end: usize,
    /// The token was unquoted text with a blank before it on its line (a string that loses
    /// its spaces).
    pub after_blank: bool,
    /// The token was a quoted string.
    pub quoted: bool,
}

/// OpenSM's position after a token: 1-based line, and 1 + the bytes consumed on that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub col: usize,
}

/// What the current line's field keywords have switched on (`in_*` flags, several at once).
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    description: bool,
    strings: bool,
    node_types: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Description,
    Strings,
    NodeTypes,
    Numbers,
}

pub struct Lexer<'a> {
    src: &'a [u8],
    at: usize,
    pos: Position,
    flags: Flags,
    blank_before: bool,
    /// The next `\n` and `"` at or after some offset (or the end): a file of `#`s or `"`s
    /// without their closing byte would otherwise be scanned again from every position.
    next_newline: Next,
    next_quote: Next,
}

/// A cached search for one byte.
#[derive(Debug, Clone, Copy, Default)]
struct Next {
    from: usize,
    found: Option<usize>,
    valid: bool,
}

impl Next {
    /// The first `byte` of `src` at or after `from`.
    fn find(&mut self, src: &[u8], from: usize, byte: u8) -> Option<usize> {
        let still_ahead =
            self.valid && from >= self.from && self.found.is_none_or(|found| found >= from);
        if !still_ahead {
            self.found = src[from..]
                .iter()
                .position(|&b| b == byte)
                .map(|i| from + i);
            self.from = from;
            self.valid = true;
        }
        self.found
    }
}

fn blanks(s: &[u8], from: usize) -> usize {
    s[from..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

fn starts_with_ci(s: &[u8], word: &str) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word.as_bytes())
}

/// The length of `word[ \t]*<sep>[ \t]*` (trailing blanks only after `:`) at the start of `s`.
fn keyword_then(s: &[u8], word_len: usize, sep: u8, blanks_after: bool) -> Option<usize> {
    let mut n = word_len + blanks(s, word_len);
    if s.get(n) != Some(&sep) {
        return None;
    }
    n += 1;
    if blanks_after {
        n += blanks(s, n);
    }
    Some(n)
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a [u8]) -> Lexer<'a> {
        Lexer {
            src,
            at: 0,
            pos: Position { line: 1, col: 1 },
            flags: Flags::default(),
            blank_before: false,
            next_newline: Next::default(),
            next_quote: Next::default(),
        }
    }

    /// Where OpenSM's `line_num:column_num` stand: after everything scanned so far.
    pub fn position(&self) -> Position {
        self.pos
    }

    fn advance(&mut self, len: usize) {
        for &b in &self.src[self.at..self.at + len] {
            if b == b'\n' {
                self.pos.line += 1;
                self.pos.col = 1;
            } else {
                self.pos.col += 1;
            }
        }
        self.at += len;
    }

    fn reset_flags(&mut self) {
        self.flags = Flags::default();
        self.blank_before = false;
    }

    /// The next token the parser sees; blanks, newlines and comments are consumed on the way.
    pub fn next(&mut self) -> Lexeme {
        loop {
            let rest = &self.src[self.at..];
            if rest.is_empty() {
                return self.lexeme(Token::Eof, self.at, false);
            }
            let (len, rule) = self.longest();
            let start = self.at;
            self.advance(len);
            let text = &self.src[start..start + len];
            let token = match rule {
                Rule::Comment | Rule::BlanksNewline | Rule::Newline => {
                    self.reset_flags();
                    continue;
                }
                Rule::Blanks if self.flags.description => Token::Text(text.to_vec()),
                Rule::Blanks => {
                    self.blank_before = true;
                    continue;
                }
                _ if self.flags.description && rule.is_keyword() => Token::Text(text.to_vec()),
                Rule::Block(b) => Token::Block(b),
                Rule::Field(f) => {
                    match f.context() {
                        Context::Description => self.flags.description = true,
                        Context::Strings => self.flags.strings = true,
                        Context::NodeTypes => self.flags.node_types = true,
                        Context::Numbers => {}
                    }
                    Token::Field(f)
                }
                Rule::Ulp(u) => Token::Ulp(u),
                Rule::NodeType(n) if self.flags.node_types => Token::NodeType(n),
                Rule::NodeType(_) | Rule::Other => Token::Text(until_nul(text)),
                Rule::Quoted => {
                    let lexeme =
                        self.lexeme(Token::Text(until_nul(&text[1..len - 1])), start, true);
                    self.blank_before = false;
                    return lexeme;
                }
                _ if self.flags.description || self.flags.strings => {
                    let in_strings = !matches!(rule, Rule::Comma) || self.flags.description;
                    if in_strings {
                        Token::Text(text.to_vec())
                    } else {
                        Token::Comma
                    }
                }
                Rule::Number => Token::Number(text.to_vec()),
                Rule::Dash => Token::Dash,
                Rule::DotDot => Token::DotDot,
                Rule::Comma => Token::Comma,
                Rule::Asterisk => Token::Asterisk,
            };
            let lexeme = self.lexeme(token, start, false);
            self.blank_before = false;
            return lexeme;
        }
    }

    fn lexeme(&self, token: Token, start: usize, quoted: bool) -> Lexeme {
        Lexeme {
            after_blank: self.blank_before && matches!(token, Token::Text(_)) && !quoted,
            token,
            start,
            end: self.at,
            quoted,
        }
    }

    /// Flex's choice at the start of `s`: the longest match, the first rule on a tie.
    fn longest(&mut self) -> (usize, Rule) {
        let (src, at) = (self.src, self.at);
        let s = &src[at..];
        let mut best: (usize, Ranked) = (1, Rule::Other.into());
        let mut offer = |len: usize, rule: Ranked| {
            if len > best.0 || (len == best.0 && rule.rank() < best.1.rank()) {
                best = (len, rule);
            }
        };
        match s[0] {
            b'#' => {
                if let Some(nl) = self.next_newline.find(src, at, b'\n') {
                    offer(nl - at + 1, Rule::Comment.into());
                }
            }
            b' ' | b'\t' => {
                let n = blanks(s, 0);
                if s.get(n) == Some(&b'\n') {
                    offer(n + 1, Rule::BlanksNewline.into());
                }
                offer(n, Rule::Blanks.into());
            }
            b'\n' => offer(1, Rule::Newline.into()),
            b'"' => {
                if let Some(close) = self.next_quote.find(src, at + 1, b'"') {
                    offer(close - at + 1, Rule::Quoted.into());
                }
            }
            b'-' => offer(1, Rule::Dash.into()),
            b':' => offer(1, Rule::DotDot.into()),
            b',' => offer(1, Rule::Comma.into()),
            b'*' => offer(1, Rule::Asterisk.into()),
            b'0'..=b'9' => {
                let dec = s.iter().take_while(|b| b.is_ascii_digit()).count();
                let hex = if s[0] == b'0' && matches!(s.get(1), Some(b'x' | b'X')) {
                    let digits = s[2..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
                    if digits > 0 { digits + 2 } else { 0 }
                } else {
                    0
                };
                offer(dec.max(hex), Rule::Number.into());
            }
            _ => {}
        }
        for (i, (word, block)) in BLOCKS.iter().enumerate() {
            if s.starts_with(word.as_bytes()) {
                offer(word.len(), Rule::Block(*block).with_rank(i));
            }
        }
        for (i, (word, field)) in FIELDS.iter().enumerate() {
            if s.starts_with(word.as_bytes())
                && let Some(n) = keyword_then(s, word.len(), b':', true)
            {
                offer(n, Rule::Field(*field).with_rank(i));
            }
        }
        for (i, (word, node)) in NODE_TYPES.iter().enumerate() {
            if starts_with_ci(s, word) {
                offer(word.len(), Rule::NodeType(*node).with_rank(i));
            }
        }
        for (i, (ulp, sub, head)) in ULP_HEADS.iter().enumerate() {
            if !starts_with_ci(s, ulp) {
                continue;
            }
            let len = match sub {
                None => keyword_then(s, ulp.len(), b':', true),
                Some(sub) => keyword_then(s, ulp.len(), b',', true)
                    .filter(|&n| s[n..].starts_with(sub.as_bytes()))
                    .map(|n| n + sub.len()),
            };
            if let Some(n) = len {
                offer(n, Rule::Ulp(*head).with_rank(i));
            }
        }
        (best.0, best.1.rule)
    }
}

fn until_nul(text: &[u8]) -> Vec<u8> {
    text.split(|&b| b == 0).next().unwrap_or_default().to_vec()
}

/// A flex rule that matched, in the file's rule order (the tie-break).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Comment,
    BlanksNewline,
    Blanks,
    Newline,
    Block(Block),
    Field(Field),
    NodeType(NodeTypeWord),
    Ulp(UlpHead),
    Number,
    Dash,
    DotDot,
    Comma,
    Asterisk,
    Quoted,
    Other,
}

/// A rule and its rank within its group of rules.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    rule: Rule,
    sub: usize,
}

impl Rule {
    fn with_rank(self, sub: usize) -> Ranked {
        Ranked { rule: self, sub }
    }

    fn is_keyword(self) -> bool {
        matches!(self, Rule::Block(_) | Rule::Field(_) | Rule::Ulp(_))
    }
}

impl From<Rule> for Ranked {
    fn from(rule: Rule) -> Ranked {
        Ranked { rule, sub: 0 }
    }
}

impl Ranked {
    /// Flex's rule order: blocks, fields, node types, ULP heads, then the rest.
    fn rank(&self) -> (usize, usize) {
        let group = match self.rule {
            Rule::Comment => 0,
            Rule::BlanksNewline => 1,
            Rule::Blanks => 2,
            Rule::Newline => 3,
            Rule::Block(_) => 4,
            Rule::Field(_) => 5,
            Rule::NodeType(_) => 6,
            Rule::Ulp(_) => 7,
            Rule::Number => 8,
            Rule::Dash => 9,
            Rule::DotDot => 10,
            Rule::Comma => 11,
            Rule::Asterisk => 12,
            Rule::Quoted => 13,
            Rule::Other => 14,
        };
        (group, self.sub)
    }
}
