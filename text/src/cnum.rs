//! glibc's `strtoul`, `strtoull`, `strtol` and `atoi` on LP64, byte for byte. OpenSM reads every
//! number in opensm.conf with one of them (base 0), and ibsim reads net files with `strtoull`
//! and `atoi`; their quirks (octal, negatives, where parsing stops, wrapping) decide what a
//! value means, so both readers share this one copy.

/// C's `isspace` in the "C" locale.
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What `strto*(s + from, &end, base)` saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CNum {
    /// Where the number starts (its sign or first digit), after leading whitespace.
    pub start: usize,
    /// `endptr`: the first byte not consumed. Without digits this is `from` itself (glibc
    /// `noconv`), not the position after the whitespace.
    pub end: usize,
    /// At least one digit was converted.
    pub digits: bool,
    pub negative: bool,
    /// The magnitude did not fit in 64 bits (`ERANGE`).
    pub overflow: bool,
    /// The magnitude (meaningless when `overflow`).
    pub magnitude: u64,
    /// 8, 10 or 16.
    pub base: u32,
    /// The digits, without sign or `0x` prefix.
    pub digit_start: usize,
}

/// Scans a number in base 0 starting at `s[from]`, as glibc does: `0x` is hex, a leading `0`
/// octal, anything else decimal.
pub fn scan(s: &[u8], from: usize) -> CNum {
    scan_in(s, from, true)
}

/// Scans a number in base 10 starting at `s[from]` (a leading `0` is decimal, `0x` is 0).
pub fn scan_decimal(s: &[u8], from: usize) -> CNum {
    scan_in(s, from, false)
}

fn scan_in(s: &[u8], from: usize, base_0: bool) -> CNum {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = from;
    while is_c_space(at(i)) {
        i += 1;
    }
    let start = i;
    let negative = at(i) == b'-';
    if matches!(at(i), b'+' | b'-') {
        i += 1;
    }
    let mut base = 10;
    if base_0 && at(i) == b'0' {
        if matches!(at(i + 1), b'x' | b'X') {
            if at(i + 2).is_ascii_hexdigit() {
                base = 16;
                i += 2;
            } else {
                // "0x" without a hex digit: glibc converts the "0" and leaves endptr on the "x".
                return CNum {
                    start,
                    end: i + 1,
                    digits: true,
                    negative,
                    overflow: false,
                    magnitude: 0,
                    base: 16,
                    digit_start: i,
                };
            }
        } else {
            base = 8;
        }
    }
    let digit_start = i;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = (at(i) as char).to_digit(base) {
        match magnitude
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => overflow = true,
        }
        i += 1;
    }
    let digits = i > digit_start;
    CNum {
        start,
        end: if digits { i } else { from },
        digits,
        negative,
        overflow,
        magnitude,
        base,
        digit_start,
    }
}

impl CNum {
    /// `strtoul`'s (and on LP64 `strtoull`'s) result: negatives wrap, overflow gives `ULONG_MAX`
    /// whatever the sign.
    pub fn strtoul(&self) -> u64 {
        if !self.digits {
            0
        } else if self.overflow {
            u64::MAX
        } else if self.negative {
            self.magnitude.wrapping_neg()
        } else {
            self.magnitude
        }
    }

    /// `strtol`'s result: saturates at `LONG_MIN` / `LONG_MAX`.
    pub fn strtol(&self) -> i64 {
        let limit = if self.negative {
            1u64 << 63
        } else {
            i64::MAX as u64
        };
        if !self.digits {
            0
        } else if self.overflow || self.magnitude > limit {
            if self.negative { i64::MIN } else { i64::MAX }
        } else if self.negative {
            (self.magnitude as i64).wrapping_neg()
        } else {
            self.magnitude as i64
        }
    }

    /// The number as written (sign and prefix included).
    pub fn text<'a>(&self, s: &'a [u8]) -> &'a [u8] {
        &s[self.start.min(self.end)..self.end]
    }

    /// For a leading-zero octal number, the value a reader would expect in decimal, when it
    /// differs from the octal one (`010` is 8, not 10).
    pub fn octal_surprise(&self, s: &[u8]) -> Option<u64> {
        if self.base != 8 || self.overflow {
            return None;
        }
        let decimal = s[self.digit_start..self.end]
            .iter()
            .try_fold(0u64, |acc, d| {
                acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })?;
        (decimal != self.magnitude).then_some(decimal)
    }
}

/// `strtoull(s, NULL, 0)` (the same as `strtoul` on LP64).
pub fn strtoull(s: &[u8]) -> u64 {
    scan(s, 0).strtoul()
}

/// `strtol(s, &end, 0)`, and whether `*end` is the end of the string (the whole string is the
/// number).
pub fn strtol_whole(s: &[u8]) -> (i64, bool) {
    let n = scan(s, 0);
    (n.strtol(), n.end == s.len())
}

/// `atoi(s)`, which glibc defines as `(int) strtol(s, NULL, 10)`: saturated to a `long`, then
/// cut to its low 32 bits.
pub fn atoi(s: &[u8]) -> i32 {
    scan_decimal(s, 0).strtol() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ul(s: &str) -> (u64, usize) {
        let n = scan(s.as_bytes(), 0);
        (n.strtoul(), n.end)
    }

    #[test]
    fn strtoul_matches_glibc() {
        assert_eq!(ul("42"), (42, 2));
        assert_eq!(ul("  +7x"), (7, 4));
        assert_eq!(ul("0x1F,"), (31, 4));
        assert_eq!(ul("010"), (8, 3));
        assert_eq!(ul("08"), (0, 1));
        assert_eq!(ul("-1"), (u64::MAX, 2));
        assert_eq!(ul("0xg"), (0, 1));
        assert_eq!(ul("-0x"), (0, 2));
        assert_eq!(ul(" ,"), (0, 0));
        assert_eq!(ul("- 5"), (0, 0));
        assert_eq!(ul(""), (0, 0));
        assert_eq!(ul("99999999999999999999"), (u64::MAX, 20));
        assert_eq!(ul("-18446744073709551615"), (1, 21));
        assert_eq!(
            ul("-99999999999999999999"),
            (u64::MAX, 21),
            "ERANGE ignores the sign"
        );
        assert_eq!(ul("0b1"), (0, 1));
        assert_eq!(ul("\u{b}\u{c}7"), (7, 3), "VT and FF are C spaces");
        assert_eq!(ul("\u{a0}7"), (0, 0), "a no-break space is not");
    }

    #[test]
    fn strtoull_reads_net_file_numbers() {
        let ull = |s: &str| strtoull(s.as_bytes());
        assert_eq!(ull("0x0002c90000001000"), 0x2c90000001000);
        assert_eq!(ull(" 0x10(10)"), 0x10);
        assert_eq!(ull("12abc"), 12);
        assert_eq!(ull("zz"), 0);
        assert_eq!(ull("0x"), 0);
        assert_eq!(ull("99999999999999999999999"), u64::MAX);
        assert_eq!(ull("-1"), u64::MAX);
    }

    #[test]
    fn strtol_saturates() {
        let l = |s: &str| scan(s.as_bytes(), 0).strtol();
        assert_eq!(l("4294967295"), 4294967295);
        assert_eq!(l("99999999999999999999"), i64::MAX);
        assert_eq!(l("-9223372036854775808"), i64::MIN);
        assert_eq!(l("-9223372036854775809"), i64::MIN);
        assert_eq!(l("5x"), 5);
        assert_eq!(l("abc"), 0);
    }

    #[test]
    fn strtol_whole_needs_every_byte() {
        let w = |s: &str| strtol_whole(s.as_bytes());
        assert_eq!(w("14"), (14, true));
        assert_eq!(w("0x0e"), (14, true));
        assert_eq!(w("-3"), (-3, true));
        assert_eq!(w("3 "), (3, false));
        assert_eq!(
            w(""),
            (0, true),
            "no digits: endptr is the start, which is the end"
        );
        assert_eq!(w("x"), (0, false));
    }

    #[test]
    fn atoi_is_decimal_and_wraps_to_int() {
        let a = |s: &str| atoi(s.as_bytes());
        assert_eq!(a("12]"), 12);
        assert_eq!(a("x"), 0);
        assert_eq!(a(" -7"), -7);
        assert_eq!(a("010"), 10, "no octal");
        assert_eq!(a("0x10"), 0, "no hex");
        assert_eq!(a("2147483648"), i32::MIN, "cut to 32 bits");
        assert_eq!(a("4294967297"), 1);
        assert_eq!(a("99999999999999999999"), -1, "LONG_MAX cut to int");
    }

    #[test]
    fn octal_surprise() {
        let o = |s: &str| scan(s.as_bytes(), 0).octal_surprise(s.as_bytes());
        assert_eq!(o("010"), Some(10));
        assert_eq!(o("007"), None);
        assert_eq!(o("0"), None);
        assert_eq!(o("10"), None);
    }
}
