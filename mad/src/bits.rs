//! Bit-field access in IBA bit order.
//!
//! The IBA (and libibmad's `fields.c`) names every field by a bit offset counted from the most
//! significant bit of byte 0, and a width. Fields are big-endian, 1 to 128 bits wide (a GID is
//! 128), and need not start or end on a byte boundary (PortInfo's HOQLife is bits 339..344).
//! [`read()`] and [`write()`] take exactly that pair, so a layout table copied from the IBA is
//! used as written, with no hand conversion to byte indexes and shifts.

/// A Rust type that a bit field decodes into.
///
/// Implemented for the unsigned integers, `bool`, and the crate's open enums and flag sets, so a
/// layout table can name the type a field reads as and the accessor macro does the conversion.
pub(crate) trait FieldValue: Copy {
    /// How many bits the type can hold; a wider field in a table is a compile-time error.
    const BITS: usize;
    /// Builds the value from a field's bits (already masked to the field width).
    fn from_bits(bits: u128) -> Self;
    /// The value's bits; `write` keeps only the field's width of them.
    fn to_bits(self) -> u128;
}

macro_rules! uint_field_value {
    ($($t:ty),+) => {$(
        impl FieldValue for $t {
            const BITS: usize = <$t>::BITS as usize;
            fn from_bits(bits: u128) -> Self {
                bits as $t
            }
            fn to_bits(self) -> u128 {
                self.into()
            }
        }
    )+};
}
uint_field_value!(u8, u16, u32, u64, u128);

impl FieldValue for bool {
    const BITS: usize = 1;
    fn from_bits(bits: u128) -> Self {
        bits != 0
    }
    fn to_bits(self) -> u128 {
        self.into()
    }
}

/// The low `width` bits set (`width` is 1..=128).
pub(crate) const fn mask(width: usize) -> u128 {
    u128::MAX >> (128 - width)
}

/// The bytes a field touches and how far its last bit sits above bit 0 of the last byte.
#[inline(always)]
const fn span(offset: usize, width: usize) -> (usize, usize, u32) {
    let first = offset / 8;
    let end = (offset + width).div_ceil(8);
    let shift = (end * 8 - offset - width) as u32;
    (first, end, shift)
}

/// Reads the `width`-bit big-endian field that starts `offset` bits into `bytes`.
///
/// # Panics
///
/// If the field extends past the end of `bytes`. Views check their length once, in
/// `new_checked`, and their field tables are checked against that length at compile time.
#[inline]
pub(crate) fn read(bytes: &[u8], offset: usize, width: usize) -> u128 {
    let (first, end, shift) = span(offset, width);
    if end == first + 1 {
        // Within one byte (flags, nibbles, whole bytes): no wide word to assemble.
        return u128::from(bytes[first] >> shift) & mask(width);
    }
    // At most 16 bytes (checked by `check_field`): a 64-bit field that is not byte aligned
    // spans 9, a GID exactly 16.
    let word = bytes[first..end]
        .iter()
        .fold(0u128, |acc, &b| acc << 8 | u128::from(b));
    (word >> shift) & mask(width)
}

/// Writes the low `width` bits of `value` into the field that starts `offset` bits into `bytes`,
/// leaving every other bit untouched. Higher bits of `value` are dropped, as libibmad's
/// `mad_set_field` drops them.
///
/// # Panics
///
/// As [`read`].
#[inline]
pub(crate) fn write(bytes: &mut [u8], offset: usize, width: usize, value: u128) {
    let (first, end, shift) = span(offset, width);
    if end == first + 1 {
        // Within one byte (flags, nibbles, whole bytes): no wide word to assemble. The casts
        // keep the low 8 bits, and the field's mask the rest of what is dropped.
        let field = (mask(width) << shift) as u8;
        bytes[first] = (bytes[first] & !field) | ((value << shift) as u8 & field);
        return;
    }
    let bytes = &mut bytes[first..end];
    let old = bytes.iter().fold(0u128, |acc, &b| acc << 8 | u128::from(b));
    let field = mask(width) << shift;
    let new = (old & !field) | (value << shift & field);
    for (i, b) in bytes.iter_mut().rev().enumerate() {
        *b = (new >> (8 * i)) as u8;
    }
}

/// Compile-time check of one table row: `count` entries, `stride` bits apart, each `width` bits
/// of a type holding `type_bits`, must fit the type and a layout of `len` bytes without
/// overlapping each other, and each must lie within 16 bytes (the `u128` that `read` and `write`
/// go through). A scalar field is one entry with `stride == width`.
pub(crate) const fn check_field(
    len: usize,
    offset: usize,
    width: usize,
    type_bits: usize,
    count: usize,
    stride: usize,
) {
    assert!(
        width >= 1 && width <= 128,
        "field width must be 1..=128 bits"
    );
    assert!(width <= type_bits, "field is wider than its type");
    // Entries after the first may start at any bit of a byte unless the stride keeps them
    // aligned as the first.
    let lead = if count == 1 || stride.is_multiple_of(8) {
        offset % 8
    } else {
        7
    };
    assert!(
        (lead + width).div_ceil(8) <= 16,
        "field spans more than 16 bytes"
    );
    assert!(count >= 1 && width <= stride, "array entries overlap");
    assert!(
        offset + (count - 1) * stride + width <= len * 8,
        "field runs past the layout"
    );
}

/// Compile-time check of a byte-string row: byte aligned and inside a layout of `len` bytes.
pub(crate) const fn check_bytes(len: usize, offset: usize, width: usize) {
    assert!(
        offset.is_multiple_of(8) && width.is_multiple_of(8) && width > 0,
        "byte field is not byte aligned"
    );
    assert!(offset + width <= len * 8, "field runs past the layout");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_unaligned_fields() {
        let b = [0b1010_1100, 0b0101_0011, 0xff];
        assert_eq!(read(&b, 0, 1), 1);
        assert_eq!(read(&b, 1, 3), 0b010);
        assert_eq!(read(&b, 4, 8), 0b1100_0101);
        assert_eq!(read(&b, 12, 4), 0b0011);
        assert_eq!(read(&b, 0, 24), 0xac53ff);
    }

    #[test]
    fn writes_only_the_field() {
        let mut b = [0xa5; 3];
        write(&mut b, 4, 8, 0x3c);
        assert_eq!(b, [0xa3, 0xc5, 0xa5]);
        write(&mut b, 23, 1, 0);
        assert_eq!(b, [0xa3, 0xc5, 0xa4]);
        // Bits above the width are dropped, not spilled into neighbours.
        write(&mut b, 0, 4, 0xff);
        assert_eq!(b, [0xf3, 0xc5, 0xa4]);
    }

    #[test]
    fn unaligned_64_bit_field_spans_nine_bytes() {
        let mut b = [0u8; 10];
        write(&mut b, 4, 64, 0x0123_4567_89ab_cdef);
        assert_eq!(
            b,
            [0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x00]
        );
        assert_eq!(read(&b, 4, 64), 0x0123_4567_89ab_cdef);
    }

    #[test]
    fn byte_aligned_128_bit_field() {
        let mut b = [0xa5u8; 18];
        let gid = 0xfe80_0000_0000_0000_0002_c903_0000_0001;
        write(&mut b, 8, 128, gid);
        assert_eq!(b[0], 0xa5);
        assert_eq!(b[1..17], gid.to_be_bytes());
        assert_eq!(b[17], 0xa5);
        assert_eq!(read(&b, 8, 128), gid);
    }

    /// The byte-at-a-time reading of a field, without the one-byte shortcut: what `read` must
    /// give for every field.
    fn read_by_bytes(bytes: &[u8], offset: usize, width: usize) -> u128 {
        let (first, end, shift) = span(offset, width);
        let word = bytes[first..end]
            .iter()
            .fold(0u128, |acc, &b| acc << 8 | u128::from(b));
        (word >> shift) & mask(width)
    }

    proptest! {
        /// Fields within one byte take a shortcut; they must read and write as every other
        /// field does, bit for bit, leaving the rest of the byte alone.
        #[test]
        fn one_byte_fields_as_the_general_rule(
            bytes in proptest::collection::vec(any::<u8>(), 3),
            offset in 0usize..16,
            width in 1usize..=8,
            value: u128,
        ) {
            prop_assert_eq!(read(&bytes, offset, width), read_by_bytes(&bytes, offset, width));
            let mut written = bytes.clone();
            write(&mut written, offset, width, value);
            for bit in 0..24 {
                let expected = if bit >= offset && bit < offset + width {
                    (value >> (offset + width - 1 - bit)) & 1
                } else {
                    read_by_bytes(&bytes, bit, 1)
                };
                prop_assert_eq!(read_by_bytes(&written, bit, 1), expected, "bit {}", bit);
            }
        }

        #[test]
        fn write_then_read(
            mut bytes in proptest::collection::vec(any::<u8>(), 9..24),
            offset in 0usize..64,
            width in 1usize..=64,
            value: u128,
        ) {
            prop_assume!(offset + width <= bytes.len() * 8);
            let before = bytes.clone();
            write(&mut bytes, offset, width, value);
            prop_assert_eq!(read(&bytes, offset, width), value & mask(width));
            for bit in (0..bytes.len() * 8).filter(|&b| b < offset || b >= offset + width) {
                prop_assert_eq!(read(&bytes, bit, 1), read(&before, bit, 1));
            }
        }
    }
}
