//! VLArb and SL2VL strings: the lenient parser OpenSM really uses (`parse_one_unsigned` and
//! friends, `osm_qos.c:569-597`, called by `qos_build_config` `:633-667`) with a diagnostic for
//! every lossy step, OpenSM's own validator (`subn_verify_vlarb` / `subn_verify_sl2vl`,
//! `osm_subnet.c:1934-2033`), which only prints warnings and disagrees with the parser, and the
//! canonical forms ibqos writes.

use ibqos_qos::{Sl2VlTable, VLARB_TABLE_ENTRIES, Vl, VlArbEntry, VlArbTable};

use ibqos_text::cnum::{self, is_c_space};
use ibqos_text::{Code, Diagnostic, display_text};

use crate::options::{Anchor, number_quirks, shown, span, whole};

/// A byte for a message: printable, whitespace named.
fn show_byte(b: u8) -> String {
    match b {
        b' ' => "a space".to_string(),
        b'\t' => "a tab".to_string(),
        _ => format!("`{}`", display_text(&[b])),
    }
}

/// One number of the stream and where it was.
#[derive(Debug, Clone, Copy)]
struct Number {
    /// The value as `parse_one_unsigned` stores it: `strtoul` cut to `unsigned`.
    value: u32,
    /// `false` once the string has ended: every remaining value is 0.
    present: bool,
    start: usize,
    len: usize,
}

/// The token stream `qos_build_config` walks: `strtoul(p, &end, 0)`, then exactly one byte is
/// skipped, whatever it is (the `delim` argument is never used).
struct Stream<'a> {
    s: &'a [u8],
    pos: usize,
    key: &'a str,
    anchor: Option<&'a Anchor>,
    diags: &'a mut Vec<Diagnostic>,
    /// An earlier step shifted every later value by one position; its consequences (more empty
    /// fields, odd separators, a missing weight) are not reported again.
    shifted: bool,
    /// Unusual separators already reported, so each is reported once per value.
    odd_separators: Vec<u8>,
}

impl<'a> Stream<'a> {
    fn new(
        key: &'a str,
        s: &'a [u8],
        anchor: Option<&'a Anchor>,
        diags: &'a mut Vec<Diagnostic>,
    ) -> Stream<'a> {
        Stream {
            s,
            pos: 0,
            key,
            anchor,
            diags,
            shifted: false,
            odd_separators: Vec::new(),
        }
    }

    /// `parse_one_unsigned` (`osm_qos.c:569-576`) for `what`, whose separator should be `sep`.
    fn next(&mut self, what: &str, sep: u8) -> Number {
        let (s, key, anchor) = (self.s, self.key, self.anchor);
        if self.pos >= s.len() {
            return Number {
                value: 0,
                present: false,
                start: s.len(),
                len: 0,
            };
        }
        let n = cnum::scan(s, self.pos);
        if !n.digits {
            let at = self.pos;
            if !self.shifted {
                self.shifted = true;
                self.diags.push(
                    Diagnostic::warning(
                        Code::EmptyField,
                        format!(
                            "`{key}`: no number where OpenSM expects a {what}: it reads 0 and skips {}",
                            show_byte(s[at])
                        ),
                    )
                    .with_help("every later value shifts by one position")
                    .at(span(anchor, at, 1)),
                );
            }
            self.pos += 1;
            return Number {
                value: 0,
                present: true,
                start: at,
                len: 1,
            };
        }
        let text = n.text(s);
        let wide = n.strtoul();
        let value = wide as u32;
        number_quirks(&format!("`{key}`"), s, &n, value, anchor, self.diags);
        if !n.negative && wide > u64::from(u32::MAX) {
            self.diags.push(
                Diagnostic::warning(
                    Code::NumberTruncated,
                    format!(
                        "`{key}`: {} does not fit in 32 bits: OpenSM keeps the low 32 bits, {value}",
                        shown(text)
                    ),
                )
                .at(span(anchor, n.start, text.len())),
            );
        }
        match s.get(n.end) {
            Some(&c) => {
                self.separator(&n, c, sep);
                self.pos = n.end + 1;
            }
            None => self.pos = n.end,
        }
        Number {
            value,
            present: true,
            start: n.start,
            len: text.len(),
        }
    }

    /// Reports the byte skipped after a number when it is not the separator OpenSM's format has.
    fn separator(&mut self, n: &cnum::CNum, c: u8, sep: u8) {
        if c == sep || self.shifted {
            return;
        }
        let (s, key) = (self.s, self.key);
        let text = shown(n.text(s));
        let next = s.get(n.end + 1).copied();
        let shifts = matches!(next, Some(b',' | b':'));
        let at = span(self.anchor, n.end, 1);
        if c.is_ascii_alphanumeric() || (is_c_space(c) && shifts) {
            let mut message = format!(
                "`{key}`: {} after `{text}` is skipped as its separator",
                show_byte(c)
            );
            if let Some(next) = next.filter(|_| shifts) {
                self.shifted = true;
                message.push_str(&format!(
                    ", so the {} after it reads as an empty field (0) and every later value shifts by one",
                    show_byte(next)
                ));
            }
            let help = if n.base == 8 && c.is_ascii_digit() {
                "a leading 0 makes the number octal, so 8 and 9 end it"
            } else if n.base == 16 && n.end == n.digit_start + 1 {
                "`0x` needs at least one hex digit"
            } else {
                "OpenSM reads a number up to the first byte that cannot continue it, then skips exactly one byte"
            };
            self.diags.push(
                Diagnostic::warning(Code::SeparatorEaten, message)
                    .with_help(help)
                    .at(at),
            );
        } else if !self.odd_separators.contains(&c) {
            self.odd_separators.push(c);
            self.diags.push(
                Diagnostic::warning(
                    Code::NonstandardSeparator,
                    format!(
                        "`{key}`: {} separates values where the format has `{}`; OpenSM skips any one byte after a number",
                        show_byte(c),
                        sep as char
                    ),
                )
                .at(at),
            );
        }
    }

    /// Reports whatever the parser never looked at.
    fn leftover(&mut self, what: &str) {
        if self.pos < self.s.len() {
            let rest = &self.s[self.pos..];
            self.diags.push(
                Diagnostic::warning(
                    Code::TooManyEntries,
                    format!("`{}`: {what}; OpenSM ignores `{}`", self.key, shown(rest)),
                )
                .at(span(self.anchor, self.pos, rest.len())),
            );
        }
    }
}

/// The warning for an empty value, which is set (not "unset") and means all zeros.
fn empty_table(key: &str, meaning: &str, anchor: Option<&Anchor>) -> Diagnostic {
    Diagnostic::warning(
        Code::EmptyTable,
        format!("`{key}` is set to an empty value: {meaning}"),
    )
    .with_help("to use the default, remove the line or write (null)")
    .at(whole(anchor))
}

/// A VLArb table exactly as `qos_build_config` builds it from `value`: 64 entries, VL taken
/// `% 15`, weight cut to 8 bits, missing values 0.
pub(crate) fn parse_vlarb(
    key: &str,
    value: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) -> VlArbTable {
    if value.is_empty() {
        diags.push(empty_table(
            key,
            "every entry is 0:0, so this table serves no VL",
            anchor,
        ));
        return VlArbTable::EMPTY;
    }
    let mut stream = Stream::new(key, value, anchor, diags);
    let mut entries = [VlArbEntry::default(); VLARB_TABLE_ENTRIES];
    for entry in &mut entries {
        let vl = stream.next("VL", b':');
        let weight = stream.next("weight", b',');
        let (vl_value, weight_value) = ((vl.value % 15) as u8, weight.value as u8);
        let vl_at = span(anchor, vl.start, vl.len);
        if vl.value >= 15 {
            let mut d = Diagnostic::warning(
                Code::VlMod15,
                format!(
                    "`{key}`: VL {} is taken mod 15: the entry is for VL {vl_value}",
                    vl.value
                ),
            )
            .at(vl_at.clone());
            if vl.value == 15 {
                d = d.with_help("VL15 is the management lane, which is never arbitrated");
            }
            stream.diags.push(d);
        }
        if weight.value > 255 {
            stream.diags.push(
                Diagnostic::warning(
                    Code::WeightWrapped,
                    format!(
                        "`{key}`: weight {} does not fit in 8 bits: OpenSM uses {weight_value}",
                        weight.value
                    ),
                )
                .at(span(anchor, weight.start, weight.len)),
            );
        }
        if vl.present && !weight.present && !stream.shifted {
            stream.diags.push(
                Diagnostic::warning(
                    Code::MissingWeight,
                    format!(
                        "`{key}`: VL {vl_value} has no weight: OpenSM uses 0, which skips the entry"
                    ),
                )
                .at(vl_at),
            );
        }
        *entry = VlArbEntry::new(vl_value, weight_value);
    }
    stream.leftover("OpenSM reads 64 VL:weight pairs");
    VlArbTable(entries)
}

/// An SL2VL table exactly as `qos_build_config` builds it from `value`: 16 VLs, each value's
/// low 4 bits, missing values VL0.
pub(crate) fn parse_sl2vl(
    key: &str,
    value: &[u8],
    anchor: Option<&Anchor>,
    diags: &mut Vec<Diagnostic>,
) -> Sl2VlTable {
    if value.is_empty() {
        diags.push(empty_table(
            key,
            "every SL goes to VL0 (not OpenSM's default mapping)",
            anchor,
        ));
        return Sl2VlTable::ALL_VL0;
    }
    let mut stream = Stream::new(key, value, anchor, diags);
    let mut vls = Sl2VlTable::ALL_VL0.0;
    let mut listed = 0;
    for (sl, slot) in vls.iter_mut().enumerate() {
        let n = stream.next("VL", b',');
        // `parse_sl2vl_entry` packs two values into a byte: each keeps its low 4 bits.
        *slot = Vl::from_nibble((n.value & 0xf) as u8);
        if !n.present {
            continue;
        }
        listed += 1;
        let at = span(anchor, n.start, n.len);
        if n.value > 15 {
            stream.diags.push(
                Diagnostic::warning(
                    Code::Sl2vlVlTruncated,
                    format!(
                        "`{key}`: VL {} keeps only its low 4 bits: SL {sl} goes to VL {}",
                        n.value,
                        slot.get()
                    ),
                )
                .at(at.clone()),
            );
        }
        if slot.is_management() {
            stream.diags.push(
                Diagnostic::note(
                    Code::Vl15Drop,
                    format!("`{key}`: SL {sl} is mapped to VL15, so its packets are dropped"),
                )
                .at(at),
            );
        }
    }
    if listed < vls.len() {
        stream.diags.push(
            Diagnostic::warning(
                Code::TooFewVls,
                match listed {
                    15 => format!("`{key}` lists 15 VLs: SL 15 goes to VL0"),
                    _ => format!("`{key}` lists {listed} VLs: SL {listed}-15 go to VL0"),
                },
            )
            .with_help("list 16 VLs, one per SL")
            .at(whole(anchor)),
        );
    }
    stream.leftover("OpenSM reads 16 VLs");
    Sl2VlTable(vls)
}

/// A VLArb table as ibqos writes it: the significant entries, `0:0` for an all-zero table.
pub(crate) fn format_vlarb(table: &VlArbTable) -> String {
    let entries = table.significant_entries();
    if entries.is_empty() {
        return "0:0".to_string();
    }
    let parts: Vec<String> = entries
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect();
    parts.join(",")
}

/// An SL2VL table as ibqos writes it: all 16 VLs.
pub(crate) fn format_sl2vl(table: &Sl2VlTable) -> String {
    let parts: Vec<String> = table.0.iter().map(|vl| vl.get().to_string()).collect();
    parts.join(",")
}

/// `log_report` prints through a 128-byte buffer (`osm_subnet.c:212-221`): longer messages lose
/// their end, newline included.
fn log_report(parts: &[&[u8]]) -> Vec<u8> {
    let mut msg = parts.concat();
    msg.truncate(127);
    msg
}

/// The tokens OpenSM's validator sees: `strtok_r(str, ",\n")`.
fn validator_tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|b| matches!(b, b',' | b'\n'))
        .filter(|t| !t.is_empty())
}

/// What `subn_verify_vlarb` prints for `<prefix>_vlarb_<suffix>` = `value`.
pub(crate) fn opensm_vlarb_warnings(prefix: &str, suffix: &str, value: &[u8]) -> Vec<Vec<u8>> {
    let head = format!(" Warning: Cached Option {prefix}_vlarb_{suffix}:");
    let head = head.as_bytes();
    let mut out = Vec::new();
    let mut count = 0;
    for tok in validator_tokens(value) {
        count += 1;
        let Some(colon) = tok.iter().position(|b| *b == b':') else {
            out.push(log_report(&[
                head,
                b"vl:weight=",
                tok,
                b" improperly formatted\n",
            ]));
            continue;
        };
        let fields = [
            ("vl=", &tok[..colon], 14),
            ("weight=", &tok[colon + 1..], 255),
        ];
        for (name, text, max) in fields {
            let (v, whole) = cnum::strtol_whole(text);
            if !whole {
                out.push(log_report(&[
                    head,
                    name.as_bytes(),
                    text,
                    b" improperly formatted\n",
                ]));
            } else if !(0..=max).contains(&v) {
                let range = format!("{name}{v} out of range\n");
                out.push(log_report(&[head, range.as_bytes()]));
            }
        }
    }
    if count > 64 {
        out.push(log_report(&[
            head,
            b" > 64 listed: excess vl:weight pairs will be dropped\n",
        ]));
    }
    out
}

/// What `subn_verify_sl2vl` prints for `<prefix>_sl2vl` = `value`.
pub(crate) fn opensm_sl2vl_warnings(prefix: &str, value: &[u8]) -> Vec<Vec<u8>> {
    let head = format!(" Warning: Cached Option {prefix}_sl2vl:");
    let head = head.as_bytes();
    let mut out = Vec::new();
    let mut count = 0;
    for tok in validator_tokens(value) {
        count += 1;
        let (v, whole) = cnum::strtol_whole(tok);
        if !whole {
            out.push(log_report(&[head, b"vl=", tok, b" improperly formatted\n"]));
        } else if !(0..=15).contains(&v) {
            let range = format!("vl={v} out of range\n");
            out.push(log_report(&[head, range.as_bytes()]));
        }
    }
    if count < 16 {
        out.push(log_report(&[head, b" < 16 VLs listed\n"]));
    } else if count > 16 {
        out.push(log_report(&[
            head,
            b" > 16 listed: excess VLs will be dropped\n",
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vlarb(value: &str) -> (Vec<(u8, u8)>, Vec<Code>) {
        let mut diags = Vec::new();
        let table = parse_vlarb("k", value.as_bytes(), None, &mut diags);
        let entries = table.0.iter().map(|e| (e.vl, e.weight)).collect::<Vec<_>>();
        let trimmed = entries[..table.significant_entries().len()].to_vec();
        (trimmed, diags.iter().map(|d| d.code).collect())
    }

    fn sl2vl(value: &str) -> ([u8; 16], Vec<Code>) {
        let mut diags = Vec::new();
        let table = parse_sl2vl("k", value.as_bytes(), None, &mut diags);
        (table.0.map(Vl::get), diags.iter().map(|d| d.code).collect())
    }

    #[test]
    fn octal_eats_its_separator() {
        // OpenSM's `parse_one_unsigned` (`osm_qos.c:569-597`) reads `strtoul(base 0)` and then
        // skips one character: in `08:4,1:5` the 0 is the value and the 8 is eaten.
        let (entries, codes) = vlarb("08:4,1:5");
        assert_eq!(entries, vec![(0, 0), (4, 1), (5, 0)]);
        assert_eq!(codes, vec![Code::SeparatorEaten]);
    }

    #[test]
    fn doubled_separator_is_an_empty_field() {
        let (entries, codes) = vlarb("0:4,,1:5");
        assert_eq!(entries, vec![(0, 4), (0, 1), (5, 0)]);
        assert_eq!(codes, vec![Code::EmptyField]);
    }

    #[test]
    fn missing_weight_and_leftovers() {
        assert_eq!(
            vlarb("0:4,1"),
            (vec![(0, 4), (1, 0)], vec![Code::MissingWeight])
        );
        let long: Vec<String> = (0..65).map(|i| format!("{}:{}", i % 15, i + 1)).collect();
        let (entries, codes) = vlarb(&long.join(","));
        assert_eq!(entries.len(), 64);
        assert_eq!(codes, vec![Code::TooManyEntries]);
    }

    #[test]
    fn sl2vl_values() {
        let (vls, codes) = sl2vl("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
        assert_eq!(vls[15], 15);
        assert_eq!(codes, vec![Code::Vl15Drop]);
        assert_eq!(sl2vl("").1, vec![Code::EmptyTable]);
        assert_eq!(sl2vl("0x3,010").0[..2], [3, 8]);
    }

    #[test]
    fn canonical_forms_round_trip() {
        let table = VlArbTable::from_entries(&[VlArbEntry::new(0, 0), VlArbEntry::new(14, 255)]);
        let text = format_vlarb(&table);
        assert_eq!(text, "0:0,14:255");
        assert_eq!(
            parse_vlarb("k", text.as_bytes(), None, &mut Vec::new()),
            table
        );
        assert_eq!(format_vlarb(&VlArbTable::EMPTY), "0:0");
        let sl = ibqos_qos::defaults::sl2vl();
        assert_eq!(
            parse_sl2vl("k", format_sl2vl(&sl).as_bytes(), None, &mut Vec::new()),
            sl
        );
    }

    #[test]
    fn validator_messages_match_opensm() {
        let msgs = opensm_vlarb_warnings("qos", "low", b"0:4 ,1:5");
        assert_eq!(
            msgs,
            vec![
                b" Warning: Cached Option qos_vlarb_low:weight=4  improperly formatted\n".to_vec()
            ]
        );
        let msgs = opensm_sl2vl_warnings("qos_ca", b"\"0,1");
        assert_eq!(msgs.len(), 2);
        assert_eq!(
            msgs[0],
            b" Warning: Cached Option qos_ca_sl2vl:vl=\"0 improperly formatted\n".to_vec()
        );
    }
}
