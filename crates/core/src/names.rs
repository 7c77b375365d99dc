//! Closed sets of values written as words (approval modes, tool disclosures, sandbox modes,
//! budget policies, ...). One declaration, [`named_enum!`], gives such an enum its names,
//! `Display`, `FromStr`, serde and (with the `schemars` feature) its JSON schema, so a setting
//! is typed from the moment it enters — a command-line flag, a request body, a configuration
//! file, a stored spec — and is written back under the same name everywhere. Its refusal,
//! [`UnknownName`], names the setting, what was given and every accepted word.

/// A word that names no value of a closed set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{given}`: use {expected}")]
pub struct UnknownName {
    /// The setting (`approval`, `sandbox`, ...).
    pub what: &'static str,
    /// As given (at most 80 characters of it).
    pub given: String,
    /// The accepted words, as a sentence (`a, b or c`).
    pub expected: String,
}

impl UnknownName {
    /// The refusal of `given` for the setting `what`, whose words are `names`.
    pub fn new(what: &'static str, given: &str, names: &[&str]) -> Self {
        let expected = match names {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        UnknownName {
            what,
            given: given.chars().take(80).collect(),
            expected,
        }
    }
}

/// A closed set declared with [`named_enum!`]: what generic code (a command-line parser
/// listing the words in its help) reads of it.
pub trait Named:
    Copy + core::fmt::Display + core::str::FromStr<Err = UnknownName> + Send + Sync + 'static
{
    /// The name of every value.
    const NAMES: &'static [&'static str];
}

/// Declare an enum whose values are written as words.
///
/// ```
/// rein_core::named_enum! {
///     /// How a user wants calls approved.
///     #[derive(Default)]
///     pub enum ApprovalMode as "approval" {
///         /// Run what policy allows.
///         AutoRun = "auto-run" | "auto_run",
///         #[default]
///         Manual = "manual",
///     }
/// }
/// ```
///
/// The first word of a value is its name (written by `Display` and serde); the words after
/// `|` are also read. The enum derives `Clone, Copy, Debug, PartialEq, Eq, Hash` and gets
/// `ALL`, `NAMES`, `as_str`, `Display`, `FromStr` (refusing with [`UnknownName`]), `Serialize`,
/// `Deserialize` and `JsonSchema` (an enum of every word read). The crate using it depends
/// on `serde` (and on `schemars` when rein-core is built with it).
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $what:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $word:literal $(| $alias:literal)*
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in the order help texts list them.
            pub const ALL: [$name; <[&str]>::len(&[$($word),+])] = [$($name::$variant),+];
            /// The name of every value, in the order of [`Self::ALL`].
            pub const NAMES: [&'static str; <[&str]>::len(&[$($word),+])] = [$($word),+];

            /// Its name, as flags, requests, configuration files and stored specs write it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl $crate::names::Named for $name {
            const NAMES: &'static [&'static str] = &<$name>::NAMES;
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::core::str::FromStr for $name {
            type Err = $crate::names::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($word $(| $alias)* => Ok($name::$variant),)+
                    other => Err($crate::names::UnknownName::new($what, other, &Self::NAMES)),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                word.parse().map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }

        $crate::__named_enum_schema!($name; $($word $(, $alias)*),+);
    };
}

/// The JSON schema half of [`named_enum!`]: an enum of every word read, when rein-core is built
/// with `schemars` (the server's API document); nothing otherwise (the wasm32 brain).
#[cfg(feature = "schemars")]
#[doc(hidden)]
#[macro_export]
macro_rules! __named_enum_schema {
    ($name:ident; $($word:literal),+) => {
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({"type": "string", "enum": [$($word),+]})
            }
        }
    };
}

/// See the other definition: without `schemars`, no schema.
#[cfg(not(feature = "schemars"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __named_enum_schema {
    ($name:ident; $($word:literal),+) => {};
}

#[cfg(test)]
mod tests {
    use super::UnknownName;

    crate::named_enum! {
        /// A test set.
        #[derive(Default)]
        pub enum Fruit as "fruit" {
            /// One.
            #[default]
            Apple = "apple",
            /// Two, with an alias.
            BloodOrange = "blood-orange" | "blood_orange",
            /// Three.
            Fig = "fig",
        }
    }

    #[test]
    fn every_word_reads_the_name_writes_and_a_stranger_is_named() {
        for f in Fruit::ALL {
            assert_eq!(f.as_str().parse::<Fruit>(), Ok(f));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{f}\""));
            assert_eq!(serde_json::from_str::<Fruit>(&json).unwrap(), f);
        }
        assert_eq!("blood_orange".parse(), Ok(Fruit::BloodOrange));
        assert_eq!(Fruit::default(), Fruit::Apple);
        let refused = "kiwi".parse::<Fruit>().unwrap_err();
        assert_eq!(
            refused.to_string(),
            "fruit `kiwi`: use apple, blood-orange or fig"
        );
        let from_json = serde_json::from_str::<Fruit>("\"kiwi\"").unwrap_err();
        assert!(
            from_json.to_string().starts_with("fruit `kiwi`"),
            "{from_json}"
        );
        assert!(serde_json::from_str::<Fruit>("3").is_err());
        assert_eq!(UnknownName::new("x", "y", &["only"]).expected, "only");
    }
}
