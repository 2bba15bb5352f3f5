//! The three generators behind every wire type: `layout!` (a view, its accessors and optionally
//! its `Repr`, from one table of fields), `open_enum!` and `flags!`.

/// Declares a zero-copy view over a fixed layout from one table of fields.
///
/// Each row is `getter / setter : Type = bit_offset, width;`, with IBA bit offsets (MSB first
/// from the start of the layout), exactly as libibmad's `fields.c` lists them. Two more row
/// shapes exist:
///
/// - `getter / setter : Type[count] = bit_offset, width, stride;` for a table of `count` entries
///   `stride` bits apart; the accessors take an index.
/// - `getter / getter_mut : bytes = bit_offset, width;` for a byte string, read as a slice.
///
/// Every row is checked at compile time against the layout length and the type width, so a
/// mistyped offset fails the build instead of corrupting a neighbour.
///
/// The first form also takes a `Repr` name and then generates a plain value struct with one
/// public field per row, `parse` (view to value) and `emit` (value to view, reserved bits
/// zeroed), and under `cfg(test)` a proptest `Arbitrary` that draws every field independently
/// over all values of its width. It is only for layouts whose rows are scalars that do not
/// overlap.
macro_rules! layout {
    (
        $(#[$vmeta:meta])*
        pub struct $view:ident[$len:expr];
        $(#[$rmeta:meta])*
        pub struct $repr:ident;
        {
            $( $(#[$fmeta:meta])* $get:ident / $set:ident : $ty:ident = $off:expr, $width:expr; )*
        }
    ) => {
        layout! {
            $(#[$vmeta])*
            pub struct $view[$len];
            { $( $(#[$fmeta])* $get / $set : $ty = $off, $width; )* }
        }

        $(#[$rmeta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $repr {
            $( $(#[$fmeta])* pub $get: $ty, )*
        }

        impl $repr {
            #[doc = concat!(
                "Reads every field of a [`", stringify!($view), "`], after checking its length."
            )]
            pub fn parse<T: AsRef<[u8]>>(view: &$view<T>) -> $crate::Result<Self> {
                view.check_len()?;
                Ok(Self { $( $get: view.$get(), )* })
            }

            #[doc = concat!(
                "Writes every byte of a [`", stringify!($view), "`]: each field, and zero in ",
                "reserved bits."
            )]
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut $view<T>) {
                view.clear();
                $( view.$set(self.$get); )*
            }
        }

        #[cfg(test)]
        impl proptest::arbitrary::Arbitrary for $repr {
            type Parameters = ();
            type Strategy = proptest::strategy::BoxedStrategy<Self>;

            fn arbitrary_with((): ()) -> Self::Strategy {
                use proptest::strategy::Strategy as _;
                const FIELDS: usize = [$(stringify!($get)),*].len();
                proptest::collection::vec(proptest::arbitrary::any::<u128>(), FIELDS)
                    .prop_map(|raw| {
                        let mut raw = raw.into_iter();
                        Self {
                            $( $get: <$ty as $crate::bits::FieldValue>::from_bits(
                                raw.next().unwrap_or_default() & $crate::bits::mask($width),
                            ), )*
                        }
                    })
                    .boxed()
            }
        }
    };

    (
        $(#[$vmeta:meta])*
        pub struct $view:ident[$len:expr];
        {
            $(
                $(#[$fmeta:meta])*
                $get:ident / $set:ident : $ty:ident $([$count:expr])?
                    = $off:expr, $width:expr $(, $stride:expr)?;
            )*
        }
    ) => {
        $(#[$vmeta])*
        ///
        /// Getters need only `T: AsRef<[u8]>`, setters also `AsMut<[u8]>`. After
        /// [`new_checked`](Self::new_checked) (or a successful [`check_len`](Self::check_len)),
        /// no accessor panics, whatever the bytes hold.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $view<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $view<T> {
            /// Length of the layout in bytes; the buffer may be longer, the rest is not touched.
            pub const LEN: usize = $len;

            /// Wraps a buffer without checking its length: for emitting into a buffer the caller
            /// sized, or for handing to a `Repr::parse` (which checks). Accessors panic if the
            /// buffer is too short.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps a buffer after checking that it holds the whole layout.
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            /// Fails with [`Error::Truncated`](crate::Error::Truncated) if the buffer is shorter
            /// than the layout.
            pub fn check_len(&self) -> $crate::Result<()> {
                let len = self.buffer.as_ref().len();
                if len < $len {
                    Err($crate::Error::Truncated { len, needed: $len })
                } else {
                    Ok(())
                }
            }

            /// Returns the wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            $(
                layout_field!(@get $(#[$fmeta])* $get / $set : $ty $([$count])?
                    = $off, $width $(, $stride)?);
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            /// Zeroes every byte of the layout, reserved bits included, so that fields set
            /// afterwards leave no stale bits from a recycled buffer.
            pub fn clear(&mut self) {
                self.buffer.as_mut()[..$len].fill(0);
            }

            $(
                layout_field!(@set $(#[$fmeta])* $get / $set : $ty $([$count])?
                    = $off, $width $(, $stride)?);
            )*
        }

        $( layout_field!(@check $len; $ty $([$count])? = $off, $width $(, $stride)?); )*
    };
}

/// One row of a `layout!` table: its getter (`@get`), its setter (`@set`) or its compile-time
/// bounds check (`@check`), for the three row shapes. The `bytes` arms come first because
/// `bytes` would also match `$ty:ident`.
macro_rules! layout_field {
    (@get $(#[$m:meta])* $get:ident / $set:ident : bytes = $off:expr, $width:expr) => {
        $(#[$m])*
        #[inline]
        pub fn $get(&self) -> &[u8] {
            &self.buffer.as_ref()[$off / 8..($off + $width) / 8]
        }
    };
    (@get $(#[$m:meta])* $get:ident / $set:ident : $ty:ident [$count:expr]
        = $off:expr, $width:expr, $stride:expr) => {
        $(#[$m])*
        ///
        /// # Panics
        ///
        #[doc = concat!("If `index >= ", stringify!($count), "`.")]
        #[inline]
        pub fn $get(&self, index: usize) -> $ty {
            assert!(index < $count, "index {index} out of range");
            <$ty as $crate::bits::FieldValue>::from_bits($crate::bits::read(
                self.buffer.as_ref(),
                $off + index * $stride,
                $width,
            ))
        }
    };
    (@get $(#[$m:meta])* $get:ident / $set:ident : $ty:ident = $off:expr, $width:expr) => {
        $(#[$m])*
        #[inline]
        pub fn $get(&self) -> $ty {
            <$ty as $crate::bits::FieldValue>::from_bits($crate::bits::read(
                self.buffer.as_ref(),
                $off,
                $width,
            ))
        }
    };

    (@set $(#[$m:meta])* $get:ident / $set:ident : bytes = $off:expr, $width:expr) => {
        #[doc = concat!(
            "The bytes of [`", stringify!($get), "`](Self::", stringify!($get), "), writable."
        )]
        #[inline]
        pub fn $set(&mut self) -> &mut [u8] {
            &mut self.buffer.as_mut()[$off / 8..($off + $width) / 8]
        }
    };
    (@set $(#[$m:meta])* $get:ident / $set:ident : $ty:ident [$count:expr]
        = $off:expr, $width:expr, $stride:expr) => {
        #[doc = concat!(
            "Writes entry `index` of [`", stringify!($get), "`](Self::", stringify!($get), ")."
        )]
        ///
        /// # Panics
        ///
        #[doc = concat!("If `index >= ", stringify!($count), "`.")]
        #[inline]
        pub fn $set(&mut self, index: usize, value: $ty) {
            assert!(index < $count, "index {index} out of range");
            $crate::bits::write(
                self.buffer.as_mut(),
                $off + index * $stride,
                $width,
                $crate::bits::FieldValue::to_bits(value),
            );
        }
    };
    (@set $(#[$m:meta])* $get:ident / $set:ident : $ty:ident = $off:expr, $width:expr) => {
        #[doc = concat!(
            "Writes [`", stringify!($get), "`](Self::", stringify!($get), "); bits beyond the ",
            "field width are dropped."
        )]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            $crate::bits::write(
                self.buffer.as_mut(),
                $off,
                $width,
                $crate::bits::FieldValue::to_bits(value),
            );
        }
    };

    (@check $len:expr; bytes = $off:expr, $width:expr) => {
        const _: () = $crate::bits::check_bytes($len, $off, $width);
    };
    (@check $len:expr; $ty:ident [$count:expr] = $off:expr, $width:expr, $stride:expr) => {
        const _: () = $crate::bits::check_field(
            $len,
            $off,
            $width,
            <$ty as $crate::bits::FieldValue>::BITS,
            $count,
            $stride,
        );
    };
    (@check $len:expr; $ty:ident = $off:expr, $width:expr) => {
        const _: () = $crate::bits::check_field(
            $len,
            $off,
            $width,
            <$ty as $crate::bits::FieldValue>::BITS,
            1,
            $width,
        );
    };
}

/// Declares an open enum over an integer: named values, plus `Unknown(raw)` for every other
/// value. Conversions both ways are total, so a value the crate has no name for (a vendor
/// attribute, a newer method) survives parse and emit unchanged instead of failing the MAD.
///
/// Equality, hashing and order are those of the raw value, so `Unknown(0x01)` built by hand
/// equals the variant named 0x01, and a map keyed by the enum iterates in wire-value order.
/// `Display` writes the variant's name, or an unnamed value as `0x` and as many hex digits as the
/// integer has nibbles.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($repr:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value with no name here, kept as received.
            Unknown($repr),
        }

        impl From<$repr> for $name {
            fn from(value: $repr) -> Self {
                match value {
                    $( $value => Self::$variant, )+
                    other => Self::Unknown(other),
                }
            }
        }

        impl From<$name> for $repr {
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                <$repr>::from(*self) == <$repr>::from(*other)
            }
        }

        impl Eq for $name {}

        impl core::hash::Hash for $name {
            fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
                <$repr>::from(*self).hash(state);
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> core::cmp::Ordering {
                <$repr>::from(*self).cmp(&<$repr>::from(*other))
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $( $name::$variant => f.write_str(stringify!($variant)), )+
                    $name::Unknown(raw) => {
                        write!(f, "{raw:#0width$x}", width = 2 + 2 * size_of::<$repr>())
                    }
                }
            }
        }

        impl $crate::bits::FieldValue for $name {
            const BITS: usize = <$repr>::BITS as usize;
            fn from_bits(bits: u128) -> Self {
                Self::from(bits as $repr)
            }
            fn to_bits(self) -> u128 {
                <$repr>::from(self).into()
            }
        }
    };
}

/// Declares a set of capability bits as a newtype over the raw integer, with one associated
/// constant per named bit. Unnamed bits are kept (the field is public), and `Debug` lists the
/// names so a logged PortInfo reads like `smpquery` output.
macro_rules! flags {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) {
            $( $(#[$fmeta:meta])* const $flag:ident = $value:expr; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $( $(#[$fmeta])* pub const $flag: Self = Self($value); )+

            const NAMED: &[(&str, Self)] = &[ $( (stringify!($flag), Self::$flag), )+ ];

            /// Whether every bit set in `other` is also set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }

        impl core::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}({:#x}", stringify!($name), self.0)?;
                let mut sep = ": ";
                for (name, flag) in Self::NAMED {
                    if self.contains(*flag) {
                        write!(f, "{sep}{name}")?;
                        sep = " | ";
                    }
                }
                f.write_str(")")
            }
        }

        impl $crate::bits::FieldValue for $name {
            const BITS: usize = <$repr>::BITS as usize;
            fn from_bits(bits: u128) -> Self {
                Self(bits as $repr)
            }
            fn to_bits(self) -> u128 {
                self.0.into()
            }
        }
    };
}

/// Test helper for `proptest!` bodies: emits `$repr` (a `$Repr` value) into a 0xa5-filled buffer
/// exactly one `$View` long and asserts that parsing the bytes gives the value back.
#[cfg(test)]
macro_rules! prop_assert_round_trip {
    ($View:ident, $Repr:ident, $repr:expr) => {{
        let repr = $repr;
        let mut bytes = vec![0xa5; $View::<&[u8]>::LEN];
        repr.emit(&mut $View::new_unchecked(&mut bytes[..]));
        let view = $View::new_checked(&bytes[..]).unwrap();
        proptest::prop_assert_eq!($Repr::parse(&view), Ok(repr));
    }};
}
