//! What every SA record shares: [`Record`], and `sa_record!`, which builds a record's view and
//! `Repr` from its own fields and the SMP attributes it embeds.

use super::SaAttributeId;
use crate::Result;

/// An SA record type: its AttributeID, its size and its conversions from and to bytes.
pub trait Record: Sized {
    /// The AttributeID the SA sends it under.
    const ATTRIBUTE_ID: SaAttributeId;
    /// Its size in bytes as OpenSM's `sizeof` gives it, padding included: the stride of a
    /// GetTable answer (AttributeOffset = `SIZE / 8`).
    const SIZE: usize;

    /// Reads a record from the first [`SIZE`](Self::SIZE) bytes of `bytes`.
    fn parse_bytes(bytes: &[u8]) -> Result<Self>;

    /// Writes every byte of the record, padding and reserved bits zero, into the first
    /// [`SIZE`](Self::SIZE) bytes of `bytes`.
    ///
    /// # Panics
    ///
    /// If `bytes` is shorter than [`SIZE`](Self::SIZE).
    fn emit_bytes(&self, bytes: &mut [u8]);
}

/// Declares an SA record: a `layout!` view of its own scalar fields (the first table, as
/// `layout!` takes it) plus a typed accessor pair for each SMP attribute it embeds at a byte
/// offset (the second table), and a `Repr` with a field per row of both tables, `SIZE`,
/// `ATTRIBUTE_ID`, `parse`, `emit` and [`Record`].
///
/// The view's length is the record's padded size, so padding is reserved bytes that `emit`
/// zeroes; each embedded attribute is checked at compile time to lie inside it.
macro_rules! sa_record {
    (
        $(#[$vmeta:meta])*
        pub struct $view:ident[$len:expr];
        $(#[$rmeta:meta])*
        pub struct $repr:ident = SaAttributeId::$attr:ident;
        {
            $( $(#[$fmeta:meta])* $get:ident / $set:ident : $ty:ident = $off:expr, $width:expr; )*
        }
        {
            $(
                $(#[$emeta:meta])*
                $eget:ident / $emut:ident : $eview:ident($erepr:ident) = $eoff:expr;
            )*
        }
    ) => {
        layout! {
            $(#[$vmeta])*
            pub struct $view[$len];
            { $( $(#[$fmeta])* $get / $set : $ty = $off, $width; )* }
        }

        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$emeta])*
                pub fn $eget(&self) -> $eview<&[u8]> {
                    $eview::new_unchecked(
                        &self.buffer.as_ref()[$eoff..$eoff + $eview::<&[u8]>::LEN],
                    )
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[doc = concat!(
                    "[`", stringify!($eget), "`](Self::", stringify!($eget), "), writable."
                )]
                pub fn $emut(&mut self) -> $eview<&mut [u8]> {
                    $eview::new_unchecked(
                        &mut self.buffer.as_mut()[$eoff..$eoff + $eview::<&[u8]>::LEN],
                    )
                }
            )*
        }

        $(
            const _: () = assert!(
                $eoff + $eview::<&[u8]>::LEN <= $len,
                "embedded attribute runs past the record"
            );
        )*

        $(#[$rmeta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $repr {
            $( $(#[$fmeta])* pub $get: $ty, )*
            $( $(#[$emeta])* pub $eget: $erepr, )*
        }

        impl $repr {
            /// The record's size in bytes, padding included (OpenSM's `sizeof`).
            pub const SIZE: usize = $len;
            /// The AttributeID the SA sends it under.
            pub const ATTRIBUTE_ID: $crate::sa::SaAttributeId = $crate::sa::SaAttributeId::$attr;

            #[doc = concat!(
                "Reads every field of a [`", stringify!($view), "`], after checking its length."
            )]
            pub fn parse<T: AsRef<[u8]>>(view: &$view<T>) -> $crate::Result<Self> {
                view.check_len()?;
                Ok(Self {
                    $( $get: view.$get(), )*
                    $( $eget: $erepr::parse(&view.$eget())?, )*
                })
            }

            #[doc = concat!(
                "Writes every byte of a [`", stringify!($view), "`]: each field, and zero in ",
                "reserved bits and padding."
            )]
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut $view<T>) {
                view.clear();
                $( view.$set(self.$get); )*
                $( self.$eget.emit(&mut view.$emut()); )*
            }
        }

        impl $crate::sa::Record for $repr {
            const ATTRIBUTE_ID: $crate::sa::SaAttributeId = Self::ATTRIBUTE_ID;
            const SIZE: usize = $len;

            fn parse_bytes(bytes: &[u8]) -> $crate::Result<Self> {
                Self::parse(&$view::new_unchecked(bytes))
            }

            fn emit_bytes(&self, bytes: &mut [u8]) {
                self.emit(&mut $view::new_unchecked(bytes));
            }
        }
    };
}

/// Test helper: `bytes` (exactly one record) parse to `expected`; `expected` emits, over a
/// 0xa5-filled buffer, exactly `bytes`; one byte fewer is `Truncated`.
#[cfg(test)]
pub(crate) fn assert_golden<R: Record + core::fmt::Debug + PartialEq>(bytes: &[u8], expected: &R) {
    assert_eq!(bytes.len(), R::SIZE, "golden bytes are one record");
    assert_eq!(R::parse_bytes(bytes).as_ref(), Ok(expected));
    let mut out = vec![0xa5; R::SIZE];
    expected.emit_bytes(&mut out);
    assert_eq!(out, bytes);
    assert_eq!(
        R::parse_bytes(&bytes[..R::SIZE - 1]),
        Err(crate::Error::Truncated {
            len: R::SIZE - 1,
            needed: R::SIZE
        })
    );
}
