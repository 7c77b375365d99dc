//! Argument matchers. Regexes are compiled once, when a rule is built or deserialized, so a bad
//! pattern is reported at configuration time with its text, and matching never recompiles.

use super::shell::{self, ShellPredicate};
use serde::{Deserialize, Serialize};

/// A compiled regex that serializes as its pattern.
#[derive(Clone, Debug)]
pub struct RegexPattern(regex::Regex);

impl RegexPattern {
    /// Compile `pattern`.
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        regex::Regex::new(pattern).map(Self)
    }

    /// The source pattern.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Unanchored search.
    pub fn is_match(&self, value: &str) -> bool {
        self.0.is_match(value)
    }
}

impl PartialEq for RegexPattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

/// How one argument is tested.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawMatcher", into = "RawMatcher")]
pub enum ArgumentMatcher {
    /// String equality.
    Exact(String),
    /// Starts with.
    Prefix(String),
    /// `*` matches any run of characters; the whole value must match. `cmd:*` matches `cmd`
    /// alone or followed by a space or colon.
    Wildcard(String),
    /// Unanchored regex search.
    Regex(RegexPattern),
    /// A shell-aware predicate over a command line.
    Shell(ShellPredicate),
    /// A regex over a command line: it matches the raw text or any simple command of it as it
    /// would run (quotes removed, known variables substituted).
    ShellRegex(RegexPattern),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawMatcher {
    Wildcard(String),
    Object {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        predicate: Option<ShellPredicate>,
    },
}

/// Why a matcher could not be built from what a rule says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MatcherError {
    /// The pattern is not a regular expression.
    #[error("invalid regex `{pattern}`: {reason}")]
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// What the regex parser said.
        reason: String,
    },
    /// A matcher type that needs a pattern was given none.
    #[error("matcher type `{0}` needs a `pattern`")]
    MissingPattern(String),
    /// `semantic_shell` was given no predicate.
    #[error("matcher type `semantic_shell` needs a `predicate`")]
    MissingPredicate,
    /// A matcher type rein does not have.
    #[error(
        "unknown matcher type `{0}` (expected exact, prefix, wildcard, regex, shell_regex or semantic_shell)"
    )]
    UnknownType(String),
}

fn regex_pattern(pattern: &str) -> Result<RegexPattern, MatcherError> {
    RegexPattern::new(pattern).map_err(|e| MatcherError::InvalidRegex {
        pattern: pattern.to_owned(),
        reason: e.to_string(),
    })
}

impl TryFrom<RawMatcher> for ArgumentMatcher {
    type Error = MatcherError;
    fn try_from(raw: RawMatcher) -> Result<Self, MatcherError> {
        let (kind, pattern, predicate) = match raw {
            RawMatcher::Wildcard(p) => return Ok(Self::Wildcard(p)),
            RawMatcher::Object {
                kind,
                pattern,
                predicate,
            } => (kind, pattern, predicate),
        };
        let need_pattern = || {
            pattern
                .clone()
                .ok_or_else(|| MatcherError::MissingPattern(kind.clone()))
        };
        match kind.as_str() {
            "exact" => Ok(Self::Exact(need_pattern()?)),
            "prefix" => Ok(Self::Prefix(need_pattern()?)),
            "wildcard" => Ok(Self::Wildcard(need_pattern()?)),
            "regex" => regex_pattern(&need_pattern()?).map(Self::Regex),
            "shell_regex" => regex_pattern(&need_pattern()?).map(Self::ShellRegex),
            "semantic_shell" => predicate
                .map(Self::Shell)
                .ok_or(MatcherError::MissingPredicate),
            other => Err(MatcherError::UnknownType(other.to_owned())),
        }
    }
}

impl From<ArgumentMatcher> for RawMatcher {
    fn from(m: ArgumentMatcher) -> Self {
        let obj = |kind: &str, pattern: String| RawMatcher::Object {
            kind: kind.into(),
            pattern: Some(pattern),
            predicate: None,
        };
        match m {
            ArgumentMatcher::Wildcard(p) => RawMatcher::Wildcard(p),
            ArgumentMatcher::Exact(p) => obj("exact", p),
            ArgumentMatcher::Prefix(p) => obj("prefix", p),
            ArgumentMatcher::Regex(r) => obj("regex", r.as_str().to_owned()),
            ArgumentMatcher::ShellRegex(r) => obj("shell_regex", r.as_str().to_owned()),
            ArgumentMatcher::Shell(p) => RawMatcher::Object {
                kind: "semantic_shell".into(),
                pattern: None,
                predicate: Some(p),
            },
        }
    }
}

impl ArgumentMatcher {
    /// A regex matcher; panics never, errors name the pattern.
    pub fn regex(pattern: &str) -> Result<Self, MatcherError> {
        regex_pattern(pattern).map(Self::Regex)
    }

    /// A shell-regex matcher; errors name the pattern.
    pub fn shell_regex(pattern: &str) -> Result<Self, MatcherError> {
        regex_pattern(pattern).map(Self::ShellRegex)
    }

    /// Test a (stringified) argument value.
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Self::Exact(p) => value == p,
            Self::Prefix(p) => value.starts_with(p.as_str()),
            Self::Wildcard(p) => wildcard_match(p, value),
            Self::Regex(r) => r.is_match(value),
            Self::Shell(pred) => shell::check(*pred, value),
            Self::ShellRegex(r) => {
                r.is_match(value) || shell::analyze(value).rendered.iter().any(|c| r.is_match(c))
            }
        }
    }

    /// Which part of a command line matched, for explanations: the shell finding (its
    /// command, where it sits and why), or the simple command a shell regex matched.
    pub fn describe_match(&self, value: &str) -> Option<String> {
        match self {
            Self::Shell(pred) => shell::explain(*pred, value),
            Self::ShellRegex(r) if !r.is_match(value) => shell::analyze(value)
                .rendered
                .iter()
                .find(|c| r.is_match(c))
                .map(|c| format!("`{c}`")),
            _ => None,
        }
    }
}

/// Glob-style match where `*` is the only special character and the whole value must match.
/// `prefix:*` is the command-prefix form: it matches `prefix`, or `prefix` followed by a space
/// or a colon and anything.
pub fn wildcard_match(pattern: &str, value: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*")
        && !prefix.contains('*')
    {
        return match value.strip_prefix(prefix) {
            Some(rest) => rest.is_empty() || rest.starts_with(' ') || rest.starts_with(':'),
            None => false,
        };
    }
    let (p, v): (Vec<char>, Vec<char>) = (pattern.chars().collect(), value.chars().collect());
    let (mut pi, mut vi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, vi));
            pi += 1;
        } else if pi < p.len() && p[pi] == v[vi] {
            pi += 1;
            vi += 1;
        } else if let Some((sp, sv)) = star {
            pi = sp + 1;
            vi = sv + 1;
            star = Some((sp, sv + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The string form of an argument value: strings as they are, anything else as JSON.
pub fn stringify(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("git add:*", "git add"));
        assert!(wildcard_match("git add:*", "git add src/main.rs"));
        assert!(!wildcard_match("git add:*", "git addx"));
        assert!(wildcard_match("*.rs", "src/lib.rs"));
        assert!(!wildcard_match("*.rs", "src/lib.rsx"));
        assert!(wildcard_match("a*b*c", "aXXbYYc"));
        assert!(!wildcard_match("a*b*c", "aXXbYY"));
        assert!(wildcard_match("exact", "exact"));
        assert!(wildcard_match("*", ""));
    }

    #[test]
    fn matcher_json_shapes_round_trip_and_bad_ones_name_the_problem() {
        for json in [
            r#""git *""#,
            r#"{"type":"exact","pattern":"ls"}"#,
            r#"{"type":"prefix","pattern":"git "}"#,
            r#"{"type":"regex","pattern":"^rm\\s"}"#,
            r#"{"type":"semantic_shell","predicate":"rm_recursive_root_target"}"#,
        ] {
            let m: ArgumentMatcher = serde_json::from_str(json).unwrap();
            let back = serde_json::to_string(&m).unwrap();
            let again: ArgumentMatcher = serde_json::from_str(&back).unwrap();
            assert_eq!(m, again, "{json}");
        }
        let err = serde_json::from_str::<ArgumentMatcher>(r#"{"type":"regex","pattern":"("}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid regex `(`"), "{err}");
        let err = serde_json::from_str::<ArgumentMatcher>(r#"{"type":"glob","pattern":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown matcher type `glob`"), "{err}");
    }
}
