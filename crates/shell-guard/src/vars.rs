//! Shell variables as the analysis knows them: every value a name is assigned anywhere in a
//! program (`X=…`, `export`/`local`/`declare`, arrays, `for` loop words), whether it may also
//! hold something unknown (`read`, `mapfile`, the environment before the first assignment), and
//! whether it may be unset. Control flow is ignored, so a name holds the union of its values:
//! an over-approximation, which is what a guard needs.

use super::value::{HOME, QUOTED_UNKNOWN};
use super::walk::Walker;
use brush_parser::ast;
use std::collections::BTreeMap;

/// Values a variable could hold beyond this count make it unknown.
const MAX_VALUES: usize = 16;
/// Variables referring to variables: deeper chains are unknown.
const MAX_VAR_DEPTH: usize = 4;

/// One variable's assignments in one program.
#[derive(Clone, Debug, Default)]
pub(super) struct Var {
    /// Assigned values: the raw word text and where it was assigned.
    values: Vec<(String, usize)>,
    /// Something outside the text may set it (`read X`, `for X; do`, a nameref).
    unknown: bool,
    /// `unset X` appears.
    unset: bool,
    /// Offset of the first assignment; a use before it reads the environment.
    first_at: usize,
}

/// The variables of one program (the top-level command, or an `sh -c`/`eval` string in it).
pub(super) type Vars = BTreeMap<String, Var>;

fn at(word: &ast::Word) -> usize {
    word.loc.as_ref().map_or(0, |l| l.start.index)
}

fn record(vars: &mut Vars, name: &str, value: Option<(String, usize)>, unknown: bool) {
    let v = vars.entry(name.to_owned()).or_insert_with(|| Var {
        first_at: usize::MAX,
        ..Var::default()
    });
    if let Some((text, pos)) = value {
        v.first_at = v.first_at.min(pos);
        v.values.push((text, pos));
    }
    v.unknown |= unknown;
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Collect the assignments of `program`.
pub(super) fn collect(program: &ast::Program) -> Vars {
    let mut vars = Vars::new();
    for list in &program.complete_commands {
        list_vars(list, &mut vars);
    }
    vars
}

fn list_vars(list: &ast::CompoundList, vars: &mut Vars) {
    for ast::CompoundListItem(and_or, _) in &list.0 {
        pipeline_vars(&and_or.first, vars);
        for next in &and_or.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => pipeline_vars(p, vars),
            }
        }
    }
}

fn pipeline_vars(p: &ast::Pipeline, vars: &mut Vars) {
    for c in &p.seq {
        command_vars(c, vars);
    }
}

fn command_vars(c: &ast::Command, vars: &mut Vars) {
    match c {
        ast::Command::Simple(s) => simple_vars(s, vars),
        ast::Command::Compound(cc, _) => compound_vars(cc, vars),
        ast::Command::Function(f) => compound_vars(&f.body.0, vars),
        ast::Command::ExtendedTest(..) => {}
    }
}

fn compound_vars(cc: &ast::CompoundCommand, vars: &mut Vars) {
    match cc {
        ast::CompoundCommand::BraceGroup(b) => list_vars(&b.list, vars),
        ast::CompoundCommand::Subshell(s) => list_vars(&s.list, vars),
        ast::CompoundCommand::ForClause(f) => {
            match &f.values {
                Some(words) => {
                    for w in words {
                        record(
                            vars,
                            &f.variable_name,
                            Some((w.value.clone(), at(w))),
                            false,
                        );
                    }
                    if words.is_empty() {
                        record(vars, &f.variable_name, None, true);
                    }
                }
                None => record(vars, &f.variable_name, None, true),
            }
            list_vars(&f.body.list, vars);
        }
        ast::CompoundCommand::ArithmeticForClause(f) => list_vars(&f.body.list, vars),
        ast::CompoundCommand::CaseClause(c) => {
            for item in &c.cases {
                if let Some(cmd) = &item.cmd {
                    list_vars(cmd, vars);
                }
            }
        }
        ast::CompoundCommand::IfClause(i) => {
            list_vars(&i.condition, vars);
            list_vars(&i.then, vars);
            for e in i.elses.iter().flatten() {
                if let Some(c) = &e.condition {
                    list_vars(c, vars);
                }
                list_vars(&e.body, vars);
            }
        }
        ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
            list_vars(&w.0, vars);
            list_vars(&w.1.list, vars);
        }
        ast::CompoundCommand::Coprocess(c) => command_vars(&c.body, vars),
        ast::CompoundCommand::Arithmetic(_) => {}
    }
}

fn assignment(a: &ast::Assignment, word: &ast::Word, vars: &mut Vars) {
    let name = match &a.name {
        ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _) => n,
    };
    match &a.value {
        ast::AssignmentValue::Scalar(w) => {
            // `X+=…` appends to a value the analysis does not track.
            record(vars, name, Some((w.value.clone(), at(word))), a.append);
        }
        ast::AssignmentValue::Array(elements) => {
            for (_, w) in elements {
                record(vars, name, Some((w.value.clone(), at(word))), a.append);
            }
            if elements.is_empty() {
                record(vars, name, Some((String::new(), at(word))), false);
            }
        }
    }
}

fn simple_vars(s: &ast::SimpleCommand, vars: &mut Vars) {
    let items = s
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .chain(s.suffix.iter().flat_map(|p| p.0.iter()));
    let mut words: Vec<&ast::Word> = Vec::new();
    for item in items {
        match item {
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => assignment(a, w, vars),
            ast::CommandPrefixOrSuffixItem::Word(w) => words.push(w),
            _ => {}
        }
    }
    let name = s.word_or_name.as_ref().map(|w| w.value.as_str());
    let args: Vec<&str> = words.iter().map(|w| w.value.as_str()).collect();
    match name {
        Some("export" | "local" | "declare" | "typeset" | "readonly") => {
            let nameref = args.iter().any(|a| a.starts_with('-') && a.contains('n'));
            for (w, a) in words.iter().zip(&args) {
                if let Some((n, v)) = a.split_once('=')
                    && is_name(n.trim_end_matches('+'))
                {
                    record(
                        vars,
                        n.trim_end_matches('+'),
                        Some((v.to_owned(), at(w))),
                        nameref,
                    );
                } else if nameref && is_name(a) {
                    record(vars, a, None, true);
                }
            }
        }
        Some("read" | "mapfile" | "readarray" | "getopts" | "let") => {
            for a in args.iter().filter(|a| is_name(a)) {
                record(vars, a, None, true);
            }
        }
        Some("printf") => {
            if let Some(i) = args.iter().position(|a| *a == "-v")
                && let Some(n) = args.get(i + 1)
            {
                record(vars, n, None, true);
            }
        }
        Some("unset") => {
            for a in args.iter().filter(|a| is_name(a)) {
                vars.entry((*a).to_owned())
                    .or_insert_with(|| Var {
                        first_at: usize::MAX,
                        ..Var::default()
                    })
                    .unset = true;
            }
        }
        _ => {}
    }
}

impl Walker {
    /// The values `$name` could have at offset `at` of the current program.
    pub(super) fn variable(&mut self, name: &str, at: usize) -> Vec<String> {
        let unknown = || vec![QUOTED_UNKNOWN.to_string()];
        let Some(depth) = self
            .var_depth
            .checked_add(1)
            .filter(|d| *d <= MAX_VAR_DEPTH)
        else {
            return unknown();
        };
        let found = self
            .scopes
            .iter()
            .rev()
            .enumerate()
            .find_map(|(i, s)| s.get(name).map(|v| (i == 0, v.clone())));
        let Some((here, var)) = found else {
            return match name {
                "HOME" => vec![HOME.to_owned()],
                "PWD" => vec![".".to_owned()],
                _ => unknown(),
            };
        };
        self.var_depth = depth;
        let mut out: Vec<String> = Vec::new();
        for (raw, pos) in &var.values {
            // Values are expanded where they were assigned; their substitutions ran there.
            let values = if here {
                self.expand_text(raw, *pos, false)
            } else {
                vec![(QUOTED_UNKNOWN.to_string(), Default::default())]
            };
            out.extend(values.into_iter().map(|(t, _)| t));
        }
        self.var_depth -= 1;
        // Inherited from an enclosing program: the environment may have changed it since.
        if var.unknown || !here || at < var.first_at || name == "HOME" && out.is_empty() {
            out.push(QUOTED_UNKNOWN.to_string());
        }
        if var.unset {
            out.push(String::new());
        }
        // Assignment order is kept: `"${a[@]}"` is the elements in order.
        let mut seen = std::collections::HashSet::new();
        out.retain(|v| seen.insert(v.clone()));
        if out.len() > MAX_VALUES {
            return unknown();
        }
        out
    }

    /// The values of positional parameter `n` (`$0`, `$1`, ...).
    pub(super) fn positional(&self, n: usize) -> Vec<String> {
        match self.positionals.last() {
            Some(Some(args)) => vec![args.get(n).cloned().unwrap_or_default()],
            _ => vec![QUOTED_UNKNOWN.to_string()],
        }
    }
}
