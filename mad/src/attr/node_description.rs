//! NodeDescription (attribute 0x0010, IBA 14.2.5.2): 64 bytes of text naming the node.

use std::borrow::Cow;

use crate::{Error, Result};

layout! {
    /// A view of a NodeDescription attribute (64 bytes).
    pub struct NodeDescription[64];
    {
        /// The text, NUL-padded (and not NUL-terminated when all 64 bytes are used).
        text / text_mut: bytes = 0, 512;
    }
}

/// A NodeDescription attribute.
///
/// The raw bytes are kept because the IBA does not promise UTF-8 or even NUL padding: an SM that
/// echoes or compares descriptions must see exactly what the node sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeDescriptionRepr {
    /// The 64 bytes as sent.
    pub bytes: [u8; 64],
}

impl NodeDescriptionRepr {
    /// A description holding `text`, NUL-padded; fails if `text` is longer than 64 bytes.
    pub fn new(text: &str) -> Result<Self> {
        let len = text.len();
        if len > 64 {
            return Err(Error::BadValue {
                field: "node_description",
                value: len as u64,
            });
        }
        let mut bytes = [0; 64];
        bytes[..len].copy_from_slice(text.as_bytes());
        Ok(Self { bytes })
    }

    /// The text up to the first NUL, with invalid UTF-8 replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.bytes.len());
        String::from_utf8_lossy(&self.bytes[..end])
    }

    /// Reads the description, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &NodeDescription<T>) -> Result<Self> {
        view.check_len()?;
        let mut bytes = [0; 64];
        bytes.copy_from_slice(view.text());
        Ok(Self { bytes })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut NodeDescription<T>) {
        view.text_mut().copy_from_slice(&self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// "sw-one HCA-1" then NUL padding.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        b's', b'w', b'-', b'o', b'n', b'e', b' ', b'H', b'C', b'A', b'-', b'1', 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn deconstruct() {
        let v = NodeDescription::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.text(), &BYTES[..]);
        let repr = NodeDescriptionRepr::parse(&v).unwrap();
        assert_eq!(repr.bytes, BYTES);
        assert_eq!(repr.to_string_lossy(), "sw-one HCA-1");
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        let repr = NodeDescriptionRepr::new("sw-one HCA-1").unwrap();
        repr.emit(&mut NodeDescription::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            NodeDescription::new_checked(&BYTES[..63]),
            Err(Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    #[test]
    fn full_length_and_invalid_utf8() {
        let full = NodeDescriptionRepr::new(&"x".repeat(64)).unwrap();
        assert_eq!(full.to_string_lossy().len(), 64);
        assert_eq!(
            NodeDescriptionRepr::new(&"x".repeat(65)),
            Err(Error::BadValue {
                field: "node_description",
                value: 65
            })
        );
        let mut bytes = [0; 64];
        bytes[..3].copy_from_slice(&[b'a', 0xff, b'b']);
        assert_eq!(
            NodeDescriptionRepr { bytes }.to_string_lossy(),
            "a\u{fffd}b"
        );
    }

    proptest! {
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 64)) {
            let mut repr = NodeDescriptionRepr { bytes: [0; 64] };
            repr.bytes.copy_from_slice(&bytes);
            prop_assert_round_trip!(NodeDescription, NodeDescriptionRepr, repr);
        }

        #[test]
        fn text_round_trip(text in "[ -~]{0,64}") {
            let repr = NodeDescriptionRepr::new(&text).unwrap();
            prop_assert_eq!(repr.to_string_lossy(), text);
        }
    }
}
