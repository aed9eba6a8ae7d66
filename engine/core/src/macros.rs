//! Small macros shared by several modules (declared first in `lib.rs`, so
//! they are in scope everywhere). Those the `bloomslice-papers` crate uses
//! too are exported, hidden from the documentation: they are not part of
//! the API a user of the index holds.

/// Builder-style setters, `pub fn name(mut self, arg: Ty) -> Self`, each
/// storing `arg` in `self.field`; the doc comment goes before each.
#[doc(hidden)]
#[macro_export]
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $field:ident;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$field = $arg;
            self
        }
    )*};
}

/// `Debug` as a summary, `Ty { field: value, .. }`: `debug_summary!(Ty,
/// |s| field: value, ...)` evaluates each `value` with `s` bound to `self`.
#[doc(hidden)]
#[macro_export]
macro_rules! debug_summary {
    ($ty:ident, |$s:ident| $($field:ident: $value:expr),+ $(,)?) => {
        impl core::fmt::Debug for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let $s = self;
                f.debug_struct(stringify!($ty))$(.field(stringify!($field), &$value))+.finish()
            }
        }
    };
}

/// The set-up of an index type's unit-test module: the parent module's
/// items (`use super::*`), `params()`, the parameters
/// `BloomParams::new($m, $k)`, and `filter(keys)`, a filter of those
/// parameters holding the little-endian bytes of each `u64` key (feature
/// `testing`, which the tests of both crates turn on).
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
#[macro_export]
macro_rules! index_test_module {
    ($m:expr, $k:expr) => {
        use super::*;

        fn params() -> $crate::params::BloomParams {
            $crate::params::BloomParams::new($m, $k).unwrap()
        }

        fn filter(keys: impl IntoIterator<Item = u64>) -> $crate::BloomFilter {
            $crate::testing::filter_of_u64_keys(params(), keys)
        }
    };
}

/// `new`, `len`, `is_empty`, `get` and `iter` of a reusable batch result
/// buffer whose answer `i` is `self.$items[self.ends[i - 1]..self.ends[i]]`
/// (from 0 for answer 0); `$answer` names one answer in the docs, and the
/// doc comment given goes on `get`.
macro_rules! batch_answers {
    ($ty:ident, $items:ident: [$item:ty], $answer:literal, $(#[$get_doc:meta])*) => {
        impl $ty {
            /// An empty result buffer.
            pub fn new() -> Self {
                Self::default()
            }

            #[doc = concat!("Number of ", $answer, "s in the last batch.")]
            pub fn len(&self) -> usize {
                self.ends.len()
            }

            #[doc = concat!("Whether the last batch had no ", $answer, ".")]
            pub fn is_empty(&self) -> bool {
                self.ends.is_empty()
            }

            $(#[$get_doc])*
            pub fn get(&self, i: usize) -> Option<&[$item]> {
                let end = *self.ends.get(i)?;
                let start = if i == 0 { 0 } else { self.ends[i - 1] };
                Some(&self.$items[start..end])
            }

            #[doc = concat!("Every ", $answer, "'s answer of the last batch, in order.")]
            pub fn iter(&self) -> impl ExactSizeIterator<Item = &[$item]> + '_ {
                (0..self.len()).map(|i| &self.$items[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]])
            }
        }
    };
}

/// An index's inherent threshold queries, their shared signature written
/// once: `query_threshold`, which allocates its answer and working memory,
/// and `query_threshold_into`, whose body is given with the names of its
/// arguments (`self` among them, as macro hygiene wants). The doc comment
/// before each name documents that method.
macro_rules! threshold_queries {
    (
        $(#[$doc:meta])*
        fn query_threshold;

        $(#[$into_doc:meta])*
        fn query_threshold_into(&$self:ident, $keys:ident, $threshold:ident, $scratch:ident, $out:ident) $body:block
    ) => {
        $(#[$doc])*
        pub fn query_threshold<K: $crate::hash::Key>(
            &self,
            keys: &[K],
            threshold: $crate::score::Threshold,
        ) -> Vec<(u64, u32)> {
            $crate::index::collected(|out| {
                self.query_threshold_into(keys, threshold, &mut $crate::score::Scores::new(), out)
            })
        }

        $(#[$into_doc])*
        pub fn query_threshold_into<K: $crate::hash::Key>(
            &$self,
            $keys: &[K],
            $threshold: $crate::score::Threshold,
            $scratch: &mut $crate::score::Scores,
            $out: &mut Vec<(u64, u32)>,
        ) $body
    };
}
