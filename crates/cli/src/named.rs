//! The command line's parser for rein's closed sets of values ([`rein_core::names::Named`]):
//! `--help` and a refusal list the words, and the flag's value is the typed value.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use rein_core::names::Named;

/// A parser for a flag whose values are one closed set `T`.
pub fn named<T: Named>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::NAMES).try_map(|word| word.parse::<T>())
}
