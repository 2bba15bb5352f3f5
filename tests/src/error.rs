//! The one error type of the harness.

use std::fmt;

/// A harness failure, carrying everything needed to debug it: the command line, the captured
/// output, the paths of logs. Its `Debug` is its message, so `unwrap()` in a test prints it as
/// written instead of as an escaped string.
pub struct Error {
    message: String,
}

/// The harness's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }

    /// Prefixes the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Error {
        Error::new(format!("{what}: {}", self.message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
