//! The wire layer's one error type.

/// Why bytes could not be read as a MAD, an attribute or an attribute modifier.
///
/// Deliberately small: the wire layer says what is wrong with the bytes, and the layer above
/// (which knows which request it sent) decides what that means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the layout.
    #[error("truncated: {len} bytes where the layout needs {needed}")]
    Truncated {
        /// Bytes available.
        len: usize,
        /// Bytes the layout needs.
        needed: usize,
    },
    /// A field holds a value the layout forbids (for example a DR hop count above 63).
    #[error("invalid {field}: {value:#x}")]
    BadValue {
        /// The field, named as in the IBA layout tables.
        field: &'static str,
        /// The value found (or asked for).
        value: u64,
    },
}

/// `Result` with the wire layer's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
