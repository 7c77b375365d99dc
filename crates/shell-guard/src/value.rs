//! Word expansion, as far as the text allows: a word becomes the argument lists it could
//! expand to. Quotes and escapes are removed, `$'…'` is decoded, braces and `~` are expanded,
//! variables assigned in the same command are substituted (each value it may hold is a
//! candidate), unquoted expansions are split into fields, and command and process
//! substitutions are analysed where they sit (their commands run) and stand for an unknown
//! value. An unknown part is a marker character: [`QUOTED_UNKNOWN`] stays within one argument,
//! [`SPLIT_UNKNOWN`] (from an unquoted expansion) may spread over several.

use super::walk::Walker;
use brush_parser::word::{
    BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr, SpecialParameter,
    TildeExpr, WordPiece, WordPieceWithSource,
};

/// An unknown part that stays within its argument (a quoted expansion).
pub(super) const QUOTED_UNKNOWN: char = '\u{0}';
/// An unknown part that may split into several arguments (an unquoted expansion).
pub(super) const SPLIT_UNKNOWN: char = '\u{1}';
/// Separates the elements of an array expansion: a new argument even inside quotes.
const FIELD_BREAK: char = '\u{2}';
/// Where `~` and `$HOME` point: a placeholder matched by the `/home/<user>` protected path.
pub(super) const HOME: &str = "/home/~";
/// What `$(mktemp …)` stands for: a fresh path under the temporary directory.
const MKTEMP: &str = "/tmp/tmp.rein-mktemp";

/// Candidate expansions of a word beyond this count make the command unanalysable.
pub(super) const MAX_CANDIDATES: usize = 32;

/// Whether `s` has an unknown part.
pub(super) fn has_unknown(s: &str) -> bool {
    s.contains([QUOTED_UNKNOWN, SPLIT_UNKNOWN])
}

/// One argument after expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Field {
    /// The text, with unknown parts as marker characters.
    pub text: String,
    /// It holds (part of) a downloader's output.
    pub downloads: bool,
    /// It holds (part of) a decoder's output (`base64 -d`, `xxd -r`, ...).
    pub decodes: bool,
    /// It is a process substitution: a path to a command's output.
    pub procsubst: bool,
}

impl Field {
    /// A literal argument.
    pub(super) fn lit(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// Whether the whole text is known.
    pub(super) fn is_literal(&self) -> bool {
        !has_unknown(&self.text) && !self.procsubst
    }
}

/// What a command substitution or a pipeline stage produced, as far as it matters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Produced {
    /// A downloader ran in it.
    pub downloads: bool,
    /// A decoder ran in it.
    pub decodes: bool,
    /// Its output, when it is a literal (`echo`/`printf` of literal text, `mktemp`, `pwd`).
    pub text: Option<String>,
    /// Its output is paths, one per line, none of them an option (`find .`, `ls`).
    pub paths: bool,
}

/// A value an expansion yields, with where it came from.
#[derive(Clone, Debug, Default)]
struct Piece {
    text: String,
    downloads: bool,
    decodes: bool,
}

/// How the pieces being expanded are read.
#[derive(Clone, Copy)]
struct Mode {
    /// Inside double quotes: a backslash escapes only `$`, `` ` ``, `"` and `\`.
    in_double_quotes: bool,
    /// Expansions split into several arguments (an unquoted word, not an assignment).
    splits: bool,
}

impl Mode {
    /// A word of a command line.
    const WORD: Mode = Mode {
        in_double_quotes: false,
        splits: true,
    };
    /// A value read as one string: an assignment's value, a here-string, a default.
    const TEXT: Mode = Mode {
        in_double_quotes: false,
        splits: false,
    };
    /// Inside double quotes (and a here-document's body).
    const QUOTED: Mode = Mode {
        in_double_quotes: true,
        splits: false,
    };
}

/// One candidate expansion being built.
#[derive(Clone, Debug, Default)]
struct Build {
    fields: Vec<Field>,
    current: Option<Field>,
}

impl Build {
    fn current(&mut self) -> &mut Field {
        self.current.get_or_insert_with(Field::default)
    }

    fn literal(&mut self, text: &str) {
        self.current().text.push_str(text);
    }

    fn end_field(&mut self) {
        if let Some(f) = self.current.take() {
            self.fields.push(f);
        }
    }

    fn expansion(&mut self, piece: &Piece, quoted: bool) {
        let mark = |f: &mut Field| {
            f.downloads |= piece.downloads;
            f.decodes |= piece.decodes;
        };
        if quoted {
            for (i, part) in piece.text.split(FIELD_BREAK).enumerate() {
                if i > 0 {
                    self.end_field();
                }
                let f = self.current();
                f.text.push_str(part);
                mark(f);
            }
            return;
        }
        // Unquoted: an unknown part may split; a known value splits on blanks.
        let text = piece
            .text
            .replace(QUOTED_UNKNOWN, &SPLIT_UNKNOWN.to_string())
            .replace(FIELD_BREAK, " ");
        if text.is_empty() {
            return;
        }
        if text.starts_with([' ', '\t', '\n']) {
            self.end_field();
        }
        let mut parts = text.split([' ', '\t', '\n']).filter(|p| !p.is_empty());
        if let Some(first) = parts.next() {
            let f = self.current();
            f.text.push_str(first);
            mark(f);
        }
        for p in parts {
            self.end_field();
            let f = self.current();
            f.text.push_str(p);
            mark(f);
        }
        if text.ends_with([' ', '\t', '\n']) {
            self.end_field();
        }
    }
}

/// Decode the body of `$'…'`.
pub(super) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let hex = |digits: &[char]| u32::from_str_radix(&digits.iter().collect::<String>(), 16).ok();
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 >= chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let c = chars[i + 1];
        i += 2;
        match c {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(c),
            '0'..='7' => {
                let mut digits = vec![c];
                while digits.len() < 3 && i < chars.len() && ('0'..='7').contains(&chars[i]) {
                    digits.push(chars[i]);
                    i += 1;
                }
                let v = u32::from_str_radix(&digits.iter().collect::<String>(), 8).unwrap_or(0);
                out.extend(char::from_u32(v));
            }
            'x' | 'u' | 'U' => {
                let max = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let start = i;
                while i < chars.len() && i - start < max && chars[i].is_ascii_hexdigit() {
                    i += 1;
                }
                match hex(&chars[start..i]).and_then(char::from_u32) {
                    Some(ch) if i > start => out.push(ch),
                    _ => {
                        out.push('\\');
                        out.push(c);
                    }
                }
            }
            'c' if i < chars.len() => {
                out.extend(char::from_u32(u32::from(chars[i]) & 0x1f));
                i += 1;
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// One of brush-parser's word grammars on `f`; `None` when it panics (it unwraps numbers too
/// large for an `i64`, as in `{1..99999999999999999999}`, found by the `shell_guard` fuzz
/// target): a word the analysis cannot follow, never a crash of the caller.
fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// Unquoted braces in one word beyond which brace expansion is not attempted: brush-parser's
/// brace grammar backtracks exponentially on runs of them (`{{{{…`, `{,{,{,…`: 16 took seconds,
/// 20 over two minutes; found by the `shell_guard` fuzz target), so such a word is one the
/// analysis cannot follow: the command is unanalysable, not a guard that never answers.
const MAX_BRACES: usize = 8;

/// The characters of `text` outside quotes and not escaped, each with whether a `$` came
/// right before it (`${`, `$(`).
pub(super) fn unquoted(text: &str) -> impl Iterator<Item = (char, bool)> + '_ {
    let (mut single, mut double, mut escaped, mut dollar) = (false, false, false, false);
    text.chars().filter_map(move |c| {
        let after_dollar = std::mem::take(&mut dollar);
        if escaped {
            escaped = false;
            return None;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single || double => {}
            '$' => dollar = true,
            _ => return Some((c, after_dollar)),
        }
        None
    })
}

/// Braces of `raw` outside quotes, escapes and `${`: those brace expansion reads.
pub(super) fn unquoted_braces(raw: &str) -> usize {
    unquoted(raw)
        .filter(|&(c, after_dollar)| c == '{' && !after_dollar)
        .count()
}

/// Brace expansion of a raw word (`{a,b}`, `{1..3}`); long sequences become a `*` glob. `None`
/// when the word has more braces than are followed ([`MAX_BRACES`]).
fn braces(raw: &str) -> Option<Vec<String>> {
    if !raw.contains('{') {
        return Some(vec![raw.to_owned()]);
    }
    if unquoted_braces(raw) > MAX_BRACES {
        return None;
    }
    let options = brush_parser::ParserOptions::default();
    Some(
        match guarded(|| brush_parser::word::parse_brace_expansions(raw, &options))? {
            Ok(Some(parts)) => {
                let mut out = vec![String::new()];
                expand_brace_parts(&parts, &mut out);
                out
            }
            _ => vec![raw.to_owned()],
        },
    )
}

fn expand_brace_parts(parts: &[BraceExpressionOrText], out: &mut Vec<String>) {
    for part in parts {
        match part {
            BraceExpressionOrText::Text(t) => out.iter_mut().for_each(|o| o.push_str(t)),
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives: Vec<String> = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::Child(children) => {
                            let mut sub = vec![String::new()];
                            expand_brace_parts(children, &mut sub);
                            alternatives.extend(sub);
                        }
                        BraceExpressionMember::NumberSequence { .. }
                        | BraceExpressionMember::CharSequence { .. } => {
                            // Sequences never spell a path separator; what they spell is left
                            // to the glob matcher.
                            alternatives.push("*".into());
                        }
                    }
                }
                let mut next = Vec::new();
                for o in out.iter() {
                    for a in &alternatives {
                        if next.len() >= MAX_CANDIDATES * 2 {
                            break;
                        }
                        next.push(format!("{o}{a}"));
                    }
                }
                *out = next;
            }
        }
    }
}

impl Walker {
    /// The argument lists `raw` could expand to; `None` when there are too many to follow.
    /// Substitutions in it are analysed (they run) when `run` is set.
    pub(super) fn expand(&mut self, raw: &str, at: usize, run: bool) -> Option<Vec<Vec<Field>>> {
        let mut out: Vec<Vec<Field>> = Vec::new();
        for variant in braces(raw)? {
            let options = brush_parser::ParserOptions::default();
            let builds = match guarded(|| brush_parser::word::parse(&variant, &options))? {
                Ok(pieces) => self.pieces(&pieces, vec![Build::default()], Mode::WORD, at, run)?,
                Err(_) => {
                    // A word the parser cannot split stands for an unknown value.
                    let mut b = Build::default();
                    b.expansion(
                        &Piece {
                            text: SPLIT_UNKNOWN.to_string(),
                            ..Piece::default()
                        },
                        false,
                    );
                    vec![b]
                }
            };
            for mut b in builds {
                b.end_field();
                out.push(b.fields);
            }
            if out.len() > MAX_CANDIDATES {
                return None;
            }
        }
        Some(out)
    }

    /// The values `raw` could have as one string (an assignment's value, a `${X:-default}`
    /// default, a here-string): expanded without field splitting.
    pub(super) fn expand_text(
        &mut self,
        raw: &str,
        at: usize,
        run: bool,
    ) -> Vec<(String, Produced)> {
        let options = brush_parser::ParserOptions::default();
        let builds = match brush_parser::word::parse(raw, &options) {
            Ok(pieces) => self.pieces(&pieces, vec![Build::default()], Mode::TEXT, at, run),
            Err(_) => None,
        };
        let Some(builds) = builds else {
            return vec![(QUOTED_UNKNOWN.to_string(), Produced::default())];
        };
        builds
            .into_iter()
            .map(|mut b| {
                b.end_field();
                let mut text = String::new();
                let mut produced = Produced::default();
                for f in b.fields {
                    text.push_str(&f.text);
                    produced.downloads |= f.downloads;
                    produced.decodes |= f.decodes;
                }
                (text, produced)
            })
            .collect()
    }

    /// A here-document's body, expanded when its delimiter was unquoted.
    pub(super) fn expand_heredoc(
        &mut self,
        body: &str,
        expand: bool,
        at: usize,
    ) -> Vec<(String, Produced)> {
        if !expand {
            return vec![(body.to_owned(), Produced::default())];
        }
        let options = brush_parser::ParserOptions::default();
        match brush_parser::word::parse_heredoc(body, &options) {
            Ok(pieces) => {
                match self.pieces(&pieces, vec![Build::default()], Mode::QUOTED, at, true) {
                    Some(builds) => builds
                        .into_iter()
                        .map(|mut b| {
                            b.end_field();
                            let mut produced = Produced::default();
                            let text = b
                                .fields
                                .iter()
                                .map(|f| {
                                    produced.downloads |= f.downloads;
                                    produced.decodes |= f.decodes;
                                    f.text.as_str()
                                })
                                .collect();
                            (text, produced)
                        })
                        .collect(),
                    None => vec![(QUOTED_UNKNOWN.to_string(), Produced::default())],
                }
            }
            Err(_) => vec![(QUOTED_UNKNOWN.to_string(), Produced::default())],
        }
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        mut builds: Vec<Build>,
        mode: Mode,
        at: usize,
        run: bool,
    ) -> Option<Vec<Build>> {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => builds.iter_mut().for_each(|b| b.literal(t)),
                WordPiece::SingleQuotedText(t) => builds.iter_mut().for_each(|b| b.literal(t)),
                WordPiece::AnsiCQuotedText(t) => {
                    let decoded = decode_ansi_c(t);
                    builds.iter_mut().for_each(|b| b.literal(&decoded));
                }
                WordPiece::EscapeSequence(e) => {
                    let c = e.strip_prefix('\\').unwrap_or(e);
                    // In double quotes only `\$ \` \" \\` escape; a backslash before anything
                    // else stays.
                    let text = if mode.in_double_quotes && !matches!(c, "$" | "`" | "\"" | "\\") {
                        e.as_str()
                    } else {
                        c
                    };
                    builds.iter_mut().for_each(|b| b.literal(text));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    builds.iter_mut().for_each(|b| {
                        b.current();
                    });
                    builds = self.pieces(inner, builds, Mode::QUOTED, at, run)?;
                }
                WordPiece::TildeExpansion(t) => {
                    let text = match t {
                        TildeExpr::Home => HOME.to_owned(),
                        TildeExpr::UserHome(u) => format!("/home/{u}"),
                        TildeExpr::WorkingDir => ".".to_owned(),
                        _ => QUOTED_UNKNOWN.to_string(),
                    };
                    builds.iter_mut().for_each(|b| b.literal(&text));
                }
                WordPiece::ParameterExpansion(expr) => {
                    let values = self.parameter_values(expr, at, run);
                    builds = product(builds, &values, !mode.splits)?;
                }
                WordPiece::CommandSubstitution(body) => {
                    let produced = self.substitution(body, run);
                    builds = product(builds, &[produced_piece(&produced)], !mode.splits)?;
                }
                WordPiece::BackquotedCommandSubstitution(body) => {
                    let body = body
                        .replace("\\`", "`")
                        .replace("\\$", "$")
                        .replace("\\\\", "\\");
                    let produced = self.substitution(&body, run);
                    builds = product(builds, &[produced_piece(&produced)], !mode.splits)?;
                }
                WordPiece::ArithmeticExpression(expr) => {
                    if run {
                        self.arithmetic(&expr.value);
                    }
                    let unknown = Piece {
                        text: QUOTED_UNKNOWN.to_string(),
                        ..Piece::default()
                    };
                    builds = product(builds, &[unknown], !mode.splits)?;
                }
            }
        }
        Some(builds)
    }

    /// Analyse a command substitution's body (when `run`) and say what it produces.
    fn substitution(&mut self, body: &str, run: bool) -> Produced {
        let trimmed = body.trim();
        let first = trimmed.split_whitespace().next().unwrap_or("");
        let produced = if run {
            self.nested(body, "command substitution", None)
        } else {
            self.peek(body)
        };
        let text = match first {
            "mktemp" if !trimmed.contains([';', '|', '&']) => Some(MKTEMP.to_owned()),
            "pwd" if trimmed == "pwd" => Some(".".to_owned()),
            _ => None,
        };
        Produced { text, ..produced }
    }

    fn parameter_values(&mut self, expr: &ParameterExpr, at: usize, run: bool) -> Vec<Piece> {
        let plain = |v: Vec<String>| -> Vec<Piece> {
            v.into_iter()
                .map(|text| Piece {
                    text,
                    ..Piece::default()
                })
                .collect()
        };
        let unknown = || {
            vec![Piece {
                text: QUOTED_UNKNOWN.to_string(),
                ..Piece::default()
            }]
        };
        match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect: false,
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect: false,
                ..
            } => plain(self.param(parameter, at)),
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect: false,
                default_value,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                indirect: false,
                default_value,
                ..
            } => {
                let mut v = plain(self.param(parameter, at));
                v.extend(self.alternative(default_value.as_deref(), at, run));
                v
            }
            ParameterExpr::UseAlternativeValue {
                indirect: false,
                alternative_value,
                ..
            } => {
                let mut v = self.alternative(alternative_value.as_deref(), at, run);
                v.push(Piece::default());
                v
            }
            ParameterExpr::ParameterLength { .. } => plain(vec!["0".into()]),
            _ => unknown(),
        }
    }

    fn alternative(&mut self, word: Option<&str>, at: usize, run: bool) -> Vec<Piece> {
        match word {
            None => vec![Piece::default()],
            Some(w) => self
                .expand_text(w, at, run)
                .into_iter()
                .map(|(text, p)| Piece {
                    text,
                    downloads: p.downloads,
                    decodes: p.decodes,
                })
                .collect(),
        }
    }

    fn param(&mut self, parameter: &Parameter, at: usize) -> Vec<String> {
        match parameter {
            Parameter::Named(name) | Parameter::NamedWithIndex { name, .. } => {
                self.variable(name, at)
            }
            // `"${a[@]}"` is every element, each its own argument.
            Parameter::NamedWithAllIndices { name, .. } => {
                vec![self.variable(name, at).join(&FIELD_BREAK.to_string())]
            }
            Parameter::Positional(n) => self.positional(*n as usize),
            Parameter::Special(SpecialParameter::ShellName) => self.positional(0),
            // `"$@"` may be any number of arguments, options included.
            Parameter::Special(SpecialParameter::AllPositionalParameters { .. }) => {
                vec![SPLIT_UNKNOWN.to_string()]
            }
            Parameter::Special(_) => vec![QUOTED_UNKNOWN.to_string()],
        }
    }
}

fn produced_piece(p: &Produced) -> Piece {
    Piece {
        text: p.text.clone().unwrap_or_else(|| QUOTED_UNKNOWN.to_string()),
        downloads: p.downloads,
        decodes: p.decodes,
    }
}

/// Every build combined with every value; `None` past the candidate limit.
fn product(builds: Vec<Build>, values: &[Piece], quoted: bool) -> Option<Vec<Build>> {
    if values.len() == 1 {
        let mut builds = builds;
        builds
            .iter_mut()
            .for_each(|b| b.expansion(&values[0], quoted));
        return Some(builds);
    }
    if builds.len().saturating_mul(values.len()) > MAX_CANDIDATES {
        return None;
    }
    let mut out = Vec::with_capacity(builds.len() * values.len());
    for b in builds {
        for v in values {
            let mut next = b.clone();
            next.expansion(v, quoted);
            out.push(next);
        }
    }
    Some(out)
}
