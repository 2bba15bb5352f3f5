//! The congestion control values whose text OpenSM reads its own way (`opts_parse_256bit`,
//! `opts_parse_cct_entry`, `opts_parse_cc_cct`), read as it stores them. The file readers have
//! already checked the text and reported what OpenSM refuses or bends; these take text that
//! passed, for the SM to program.

use ibqos_text::cnum;

/// How many entries OpenSM keeps of `cc_cct` (`OSM_CCT_ENTRY_MAX`).
const CCT_MAX: usize = 128;

/// `cc_sw_cong_setting_victim_mask` or `_credit_mask`: hex digits (after an optional `0x`) as a
/// 256-bit big-endian number, right-aligned; past 64 digits OpenSM keeps the first 64.
pub fn mask_256(text: &str) -> [u8; 32] {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let mut mask = [0u8; 32];
    let digits = &digits.as_bytes()[..digits.len().min(64)];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_hexdigit) {
        return mask;
    }
    // An odd count puts one digit alone in the first byte, as OpenSM's loop does.
    let first = 32 - digits.len().div_ceil(2);
    let (head, rest) = digits.split_at(digits.len() % 2);
    let pairs = rest.chunks(2);
    let bytes = (!head.is_empty()).then_some(head).into_iter().chain(pairs);
    for (slot, pair) in mask[first..].iter_mut().zip(bytes) {
        let text = std::str::from_utf8(pair).unwrap_or("0");
        *slot = u8::from_str_radix(text, 16).unwrap_or(0);
    }
    mask
}

/// A `shift:multiplier` entry: each side read by `strtoul` base 0 and kept in OpenSM's 8 and
/// 16 bits; `None` without a colon.
pub fn cct_entry(text: &str) -> Option<(u8, u16)> {
    let (shift, multiplier) = text.split_once(':')?;
    Some((
        cnum::strtoull(shift.as_bytes()) as u8,
        cnum::strtoull(multiplier.as_bytes()) as u16,
    ))
}

/// `cc_cct`: comma-separated entries (empty ones skipped), the first 128; `(null)` is none.
pub fn cct(text: &str) -> Vec<(u8, u16)> {
    if text == "(null)" {
        return Vec::new();
    }
    text.split(',')
        .filter(|entry| !entry.is_empty())
        .take(CCT_MAX)
        .map_while(cct_entry)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_is_right_aligned_and_big_endian() {
        let mut expected = [0u8; 32];
        expected[31] = 0x06;
        assert_eq!(mask_256("0x6"), expected);
        assert_eq!(mask_256("06"), expected);
        expected[30] = 0x01;
        expected[31] = 0x23;
        assert_eq!(mask_256("0X123"), expected);
        assert_eq!(mask_256(&"f".repeat(64)), [0xff; 32]);
        // Past 64 digits, the first 64.
        let long = format!("{}{}", "1".repeat(64), "f");
        assert_eq!(mask_256(&long), [0x11; 32]);
    }

    #[test]
    fn cct_entries_are_strtoul_in_opensm_widths() {
        assert_eq!(cct_entry("1:7"), Some((1, 7)));
        assert_eq!(cct_entry("0x2:0x3fff"), Some((2, 0x3fff)));
        assert_eq!(cct_entry("257:65537"), Some((1, 1)));
        assert_eq!(cct_entry("3"), None);
        assert_eq!(cct("0:0,,1:2,3:4"), [(0, 0), (1, 2), (3, 4)]);
        assert_eq!(cct("(null)"), []);
        let long: Vec<String> = (0..130).map(|i| format!("0:{i}")).collect();
        assert_eq!(cct(&long.join(",")).len(), 128);
    }
}
