//! The walk over the syntax tree: every simple command wherever it sits, with what feeds its
//! standard input, whether it runs in the background or in a pipeline, and where it sits (the
//! context an explanation names). Nested programs (`sh -c` strings, `eval`, substitutions)
//! are parsed and walked the same way, up to a depth.

use super::reach::Cwd;
use super::value::{Field, MAX_CANDIDATES, Produced};
use super::vars::{self, Vars};
use super::{Analysis, Finding, ShellPredicate, syntax};
use brush_parser::ast;

/// Programs nested in programs (`sh -c "eval '…'"`) deeper than this are unanalysable.
const MAX_DEPTH: usize = 6;
/// Simple commands analysed per command line; more is unanalysable.
const MAX_COMMANDS: usize = 20_000;

/// What feeds a command's standard input.
#[derive(Clone, Debug)]
pub(super) enum Stdin {
    /// Nothing in the text.
    Inherited,
    /// The previous stages of a pipeline (or a process substitution after `<`).
    Pipe(Produced),
    /// A here-string (`false`) or here-document (`true`), with each value it could have.
    Text(Vec<(String, Produced)>, bool),
    /// A file (`< path`).
    File(Field),
    /// Another descriptor (`<&3`): what it holds is not in the text.
    Descriptor,
}

/// A function definition being walked, to recognise fork bombs by their shape.
struct FunctionFrame {
    name: String,
    self_calls: usize,
    piped_or_background: bool,
    background_in_loop: bool,
    loops_at_start: usize,
}

/// The walk's state.
pub(super) struct Walker {
    findings: Vec<Finding>,
    rendered: Vec<String>,
    /// Variables of each program being walked, the innermost last.
    pub(super) scopes: Vec<Vars>,
    /// Positional parameters of each program or function body being walked.
    pub(super) positionals: Vec<Option<Vec<String>>>,
    /// Variables being resolved through other variables.
    pub(super) var_depth: usize,
    /// Directories the command could be working in (never narrowed: `cd` only adds).
    pub(super) cwds: Vec<Cwd>,
    /// Files a downloader wrote (`curl -o F`, `wget -O F`).
    pub(super) downloaded: Vec<String>,
    /// Names this command line defined as aliases: what they run is not followed.
    pub(super) aliases: Vec<String>,
    context: Vec<String>,
    depth: usize,
    pub(super) loops: usize,
    budget: usize,
    max_openers: usize,
    /// While above zero, findings are not recorded (values re-expanded for a second look).
    quiet: usize,
    functions: Vec<FunctionFrame>,
    /// Whether the simple command being run sits in a pipeline or runs in the background.
    piped_or_background: bool,
    background: bool,
}

impl Walker {
    fn new(max_openers: usize) -> Self {
        Self {
            findings: Vec::new(),
            rendered: Vec::new(),
            scopes: Vec::new(),
            positionals: Vec::new(),
            var_depth: 0,
            cwds: vec![Cwd::Work(Vec::new())],
            downloaded: Vec::new(),
            aliases: Vec::new(),
            context: Vec::new(),
            depth: 0,
            loops: 0,
            budget: MAX_COMMANDS,
            max_openers,
            quiet: 0,
            functions: Vec::new(),
            piped_or_background: false,
            background: false,
        }
    }

    /// Analyse a command line, parsing nested programs with at most `max_openers` openers.
    pub(super) fn analyze(command: &str, max_openers: usize) -> Analysis {
        let mut w = Self::new(max_openers);
        // The shell tool runs the command as `sh -c COMMAND`: `$0` is `sh`, no arguments.
        w.program(command, Some(vec!["sh".to_owned()]));
        Analysis {
            findings: w.findings,
            rendered: w.rendered,
        }
    }

    /// An analysis with one finding: the command could not be analysed, and why.
    pub(super) fn unanalysable(command: &str, why: &str) -> Analysis {
        let shown: String = command.chars().take(80).collect();
        Analysis {
            findings: vec![Finding {
                predicate: ShellPredicate::Unanalysable,
                node: format!("`{shown}`"),
                detail: why.to_owned(),
            }],
            rendered: Vec::new(),
        }
    }

    /// Record a finding about `node` (unless quiet); duplicates are dropped.
    pub(super) fn found(&mut self, predicate: ShellPredicate, node: &str, detail: String) {
        if self.quiet > 0 {
            return;
        }
        let node = match self.context.is_empty() {
            true => node.to_owned(),
            false => format!("{node} in {}", self.context.join(" › ")),
        };
        let f = Finding {
            predicate,
            node,
            detail,
        };
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    /// Record a command as it would run, for the blacklist's text rules.
    pub(super) fn render(&mut self, text: String) {
        if self.quiet == 0 && !self.rendered.contains(&text) && self.rendered.len() < 1000 {
            self.rendered.push(text);
        }
    }

    /// Walk `text` as a program of its own; `None` positionals are unknown.
    fn program(&mut self, text: &str, positionals: Option<Vec<String>>) -> Produced {
        if self.depth >= MAX_DEPTH {
            self.found(
                ShellPredicate::Unanalysable,
                &format!(
                    "`{}`",
                    super::reach::shown(&text.chars().take(60).collect::<String>())
                ),
                format!("it nests programs more than {MAX_DEPTH} deep"),
            );
            return Produced::default();
        }
        let program = match syntax::parse(text, self.max_openers) {
            Ok(p) => p,
            Err(why) => {
                let shown: String = text.chars().take(80).collect();
                self.found(
                    ShellPredicate::Unanalysable,
                    &format!("`{}`", super::reach::shown(&shown)),
                    why,
                );
                return Produced::default();
            }
        };
        self.walk_program(&program, positionals)
    }

    fn walk_program(
        &mut self,
        program: &ast::Program,
        positionals: Option<Vec<String>>,
    ) -> Produced {
        self.depth += 1;
        self.scopes.push(vars::collect(program));
        self.positionals.push(positionals);
        let mut produced = Produced::default();
        let single = program.complete_commands.len() == 1;
        for list in &program.complete_commands {
            let p = self.list(list);
            produced = merge(produced, p, single);
        }
        self.positionals.pop();
        self.scopes.pop();
        self.depth -= 1;
        produced
    }

    /// Walk a nested program in `context` (an `sh -c` string, a substitution's body, ...).
    pub(super) fn nested(
        &mut self,
        text: &str,
        context: &str,
        positionals: Option<Vec<String>>,
    ) -> Produced {
        self.context.push(context.to_owned());
        let p = self.program(text, positionals);
        self.context.pop();
        p
    }

    /// What a program would produce, without recording findings (they were recorded where
    /// it first appeared).
    pub(super) fn peek(&mut self, text: &str) -> Produced {
        self.quiet += 1;
        let p = self.program(text, None);
        self.quiet -= 1;
        p
    }

    fn list(&mut self, list: &ast::CompoundList) -> Produced {
        let mut produced = Produced::default();
        let single = list.0.len() == 1;
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let background = matches!(sep, ast::SeparatorOperator::Async);
            let mut p = self.pipeline(&and_or.first, background);
            for next in &and_or.additional {
                let (ast::AndOr::And(pl) | ast::AndOr::Or(pl)) = next;
                p = merge(p, self.pipeline(pl, background), false);
            }
            produced = merge(produced, p, single && and_or.additional.is_empty());
        }
        produced
    }

    fn pipeline(&mut self, p: &ast::Pipeline, background: bool) -> Produced {
        let piped = p.seq.len() > 1;
        let mut upstream: Option<Produced> = None;
        let mut out = Produced::default();
        for c in &p.seq {
            let stdin = match &upstream {
                Some(u) => Stdin::Pipe(u.clone()),
                None => Stdin::Inherited,
            };
            let (saved_pb, saved_bg) = (self.piped_or_background, self.background);
            self.piped_or_background = piped || background;
            self.background = background;
            let produced = self.command(c, stdin);
            self.piped_or_background = saved_pb;
            self.background = saved_bg;
            // Downloaded or decoded data stays so through filters (`curl … | tee f | sh`).
            let carried = upstream.take().unwrap_or_default();
            let next = Produced {
                downloads: produced.downloads || carried.downloads,
                decodes: produced.decodes || carried.decodes,
                ..produced
            };
            upstream = Some(next.clone());
            out = next;
        }
        out
    }

    fn command(&mut self, c: &ast::Command, stdin: Stdin) -> Produced {
        match c {
            ast::Command::Simple(s) => self.simple(s, stdin),
            ast::Command::Compound(cc, redirects) => {
                if let Some(r) = redirects {
                    self.redirects(&r.0, &mut Stdin::Inherited, "compound command");
                }
                self.compound(cc)
            }
            ast::Command::Function(f) => {
                self.function(f);
                Produced::default()
            }
            ast::Command::ExtendedTest(test, _) => {
                self.test_expr(&test.expr);
                Produced::default()
            }
        }
    }

    fn function(&mut self, f: &ast::FunctionDefinition) {
        let name = f.fname.value.clone();
        self.functions.push(FunctionFrame {
            name: name.clone(),
            self_calls: 0,
            piped_or_background: false,
            background_in_loop: false,
            loops_at_start: self.loops,
        });
        self.positionals.push(None);
        self.context.push(format!("function `{name}` body"));
        if let Some(r) = &f.body.1 {
            self.redirects(&r.0, &mut Stdin::Inherited, &name);
        }
        self.compound(&f.body.0);
        self.context.pop();
        self.positionals.pop();
        if let Some(frame) = self.functions.pop()
            && ((frame.self_calls >= 2 && frame.piped_or_background) || frame.background_in_loop)
        {
            self.found(
                ShellPredicate::ForkBomb,
                &format!("function `{name}`"),
                "it calls itself repeatedly in the background or a pipeline, multiplying processes"
                    .into(),
            );
        }
    }

    /// Note a call of `name`: a function calling itself, for the fork-bomb shape.
    pub(super) fn note_call(&mut self, name: &str) {
        let (pb, bg, loops) = (self.piped_or_background, self.background, self.loops);
        for frame in self.functions.iter_mut().filter(|f| f.name == name) {
            frame.self_calls += 1;
            frame.piped_or_background |= pb;
            frame.background_in_loop |= bg && loops > frame.loops_at_start;
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) -> Produced {
        match cc {
            ast::CompoundCommand::BraceGroup(b) => self.within("brace group", |w| w.list(&b.list)),
            ast::CompoundCommand::Subshell(s) => self.within("subshell", |w| w.list(&s.list)),
            ast::CompoundCommand::ForClause(f) => {
                for word in f.values.iter().flatten() {
                    let at = word.loc.as_ref().map_or(0, |l| l.start.index);
                    let _ = self.expand(&word.value, at, true);
                }
                self.looping("for loop", |w| w.list(&f.body.list))
            }
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                self.looping("for loop", |w| w.list(&f.body.list))
            }
            ast::CompoundCommand::CaseClause(c) => {
                let at = c.value.loc.as_ref().map_or(0, |l| l.start.index);
                let _ = self.expand(&c.value.value, at, true);
                self.within("case", |w| {
                    let mut p = Produced::default();
                    for item in &c.cases {
                        for pat in &item.patterns {
                            let at = pat.loc.as_ref().map_or(0, |l| l.start.index);
                            let _ = w.expand(&pat.value, at, true);
                        }
                        if let Some(cmd) = &item.cmd {
                            p = merge(p, w.list(cmd), false);
                        }
                    }
                    p
                })
            }
            ast::CompoundCommand::IfClause(i) => self.within("if", |w| {
                let mut p = w.list(&i.condition);
                p = merge(p, w.list(&i.then), false);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        p = merge(p, w.list(c), false);
                    }
                    p = merge(p, w.list(&e.body), false);
                }
                p
            }),
            ast::CompoundCommand::WhileClause(l) | ast::CompoundCommand::UntilClause(l) => self
                .looping("while loop", |w| {
                    let p = w.list(&l.0);
                    merge(p, w.list(&l.1.list), false)
                }),
            ast::CompoundCommand::Arithmetic(a) => {
                self.arithmetic(&a.expr.value);
                Produced::default()
            }
            ast::CompoundCommand::Coprocess(c) => {
                self.within("coproc", |w| w.command(&c.body, Stdin::Inherited))
            }
        }
    }

    fn within(&mut self, context: &str, f: impl FnOnce(&mut Self) -> Produced) -> Produced {
        self.context.push(context.to_owned());
        let p = f(self);
        self.context.pop();
        p
    }

    /// Run `f` with `context` named in the findings it records.
    pub(super) fn in_context(&mut self, context: &str, f: impl FnOnce(&mut Self)) {
        self.context.push(context.to_owned());
        f(self);
        self.context.pop();
    }

    fn looping(&mut self, context: &str, f: impl FnOnce(&mut Self) -> Produced) -> Produced {
        self.loops += 1;
        let p = self.within(context, f);
        self.loops -= 1;
        p
    }

    /// An arithmetic expression: its substitutions run. It is also walked as a program when
    /// it parses as one, because the parser reads `( ( cmd ) )` (two subshells to a shell) as
    /// arithmetic.
    pub(super) fn arithmetic(&mut self, expr: &str) {
        if expr.contains("$(") || expr.contains('`') {
            let _ = self.expand_text(expr, 0, true);
        }
        if self.depth < MAX_DEPTH
            && let Ok(program) = syntax::parse(expr, self.max_openers)
        {
            self.context.push("subshell".to_owned());
            self.walk_program(&program, None);
            self.context.pop();
        }
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr) {
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a);
                self.test_expr(b);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a)
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                let _ = self.expand(&w.value, 0, true);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                let _ = self.expand(&a.value, 0, true);
                let _ = self.expand(&b.value, 0, true);
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, stdin: Stdin) -> Produced {
        if self.budget == 0 {
            self.found(
                ShellPredicate::Unanalysable,
                "the command line",
                format!("it has more than {MAX_COMMANDS} simple commands"),
            );
            return Produced::default();
        }
        self.budget -= 1;
        let mut stdin = stdin;
        let mut words: Vec<(&str, usize)> = Vec::new();
        let mut redirects: Vec<&ast::IoRedirect> = Vec::new();
        let mut procsubsts: Vec<(usize, &ast::SubshellCommand)> = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => self.assignment_value(a, w),
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r),
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push((&w.value, pos(w))),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    procsubsts.push((words.len(), sub));
                    words.push(("", 0));
                }
            }
        }
        if let Some(name) = &s.word_or_name {
            words.push((&name.value, pos(name)));
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    self.assignment_value(a, w);
                    words.push((&w.value, pos(w)));
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r),
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push((&w.value, pos(w))),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    procsubsts.push((words.len(), sub));
                    words.push(("", 0));
                }
            }
        }
        let name_text = s.word_or_name.as_ref().map(|w| w.value.clone());
        let shown_redirects = self.redirects(
            &redirects.iter().map(|r| (*r).clone()).collect::<Vec<_>>(),
            &mut stdin,
            name_text.as_deref().unwrap_or(""),
        );
        if s.word_or_name.is_none() {
            return Produced::default();
        }
        // Expand every word; the command runs once per combination of candidates.
        let mut argvs: Vec<Vec<Field>> = vec![Vec::new()];
        for (i, (raw, at)) in words.iter().enumerate() {
            let candidates = if let Some((_, sub)) = procsubsts.iter().find(|(j, _)| *j == i) {
                let produced = self.within("process substitution", |w| w.list(&sub.list));
                vec![vec![Field {
                    text: "/dev/fd/63".into(),
                    downloads: produced.downloads,
                    decodes: produced.decodes,
                    procsubst: true,
                }]]
            } else {
                match self.expand(raw, *at, true) {
                    Some(c) => c,
                    None => {
                        self.too_many(raw);
                        return Produced::default();
                    }
                }
            };
            if argvs.len() * candidates.len() > MAX_CANDIDATES {
                self.too_many(raw);
                return Produced::default();
            }
            let mut next = Vec::with_capacity(argvs.len() * candidates.len());
            for a in &argvs {
                for c in &candidates {
                    let mut v = a.clone();
                    v.extend(c.iter().cloned());
                    next.push(v);
                }
            }
            argvs = next;
        }
        let mut produced = Produced::default();
        let single = argvs.len() == 1;
        for argv in argvs {
            if argv.is_empty() {
                continue;
            }
            let mut text: Vec<String> = argv.iter().map(|f| super::reach::shown(&f.text)).collect();
            text.extend(shown_redirects.iter().cloned());
            self.render(text.join(" "));
            let p = self.exec(&argv, &stdin);
            produced = merge(produced, p, single);
        }
        produced
    }

    fn too_many(&mut self, raw: &str) {
        self.found(
            ShellPredicate::Unanalysable,
            &format!("`{raw}`"),
            format!("it could expand in more than {MAX_CANDIDATES} ways"),
        );
    }

    /// Run the substitutions of an assignment's value (they execute when it is assigned).
    fn assignment_value(&mut self, a: &ast::Assignment, w: &ast::Word) {
        let at = pos(w);
        match &a.value {
            ast::AssignmentValue::Scalar(v) => {
                let _ = self.expand_text(&v.value, at, true);
            }
            ast::AssignmentValue::Array(elements) => {
                for (_, v) in elements {
                    let _ = self.expand_text(&v.value, at, true);
                }
            }
        }
    }

    /// Check redirections (writes to block devices) and find what feeds standard input.
    /// Returns the redirections as shown (`> /dev/sda`).
    fn redirects(
        &mut self,
        redirects: &[ast::IoRedirect],
        stdin: &mut Stdin,
        name: &str,
    ) -> Vec<String> {
        let mut shown = Vec::new();
        for r in redirects {
            match r {
                ast::IoRedirect::File(fd, kind, target) => {
                    // Only what goes to descriptor 0 feeds the command's standard input.
                    let feeds_stdin = fd.is_none_or(|f| f == 0);
                    let write = !matches!(
                        kind,
                        ast::IoFileRedirectKind::Read
                            | ast::IoFileRedirectKind::DuplicateInput
                            | ast::IoFileRedirectKind::DuplicateOutput
                    );
                    match target {
                        ast::IoFileRedirectTarget::Filename(w)
                        | ast::IoFileRedirectTarget::Duplicate(w) => {
                            let fields = self.expand(&w.value, pos(w), true).unwrap_or_default();
                            for f in fields.into_iter().flatten() {
                                let op = if write { ">" } else { "<" };
                                shown.push(format!("{op} {}", super::reach::shown(&f.text)));
                                if write {
                                    self.disk_write_target(&f, &format!("`{name} > {}`", w.value));
                                } else if !feeds_stdin {
                                } else if matches!(kind, ast::IoFileRedirectKind::Read) {
                                    *stdin = Stdin::File(f);
                                } else if matches!(kind, ast::IoFileRedirectKind::DuplicateInput) {
                                    *stdin = Stdin::Descriptor;
                                }
                            }
                        }
                        ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                            let produced =
                                self.within("process substitution", |w| w.list(&sub.list));
                            if !write && feeds_stdin {
                                *stdin = Stdin::Pipe(produced);
                            }
                        }
                        ast::IoFileRedirectTarget::Fd(_) => {
                            if feeds_stdin
                                && matches!(kind, ast::IoFileRedirectKind::DuplicateInput)
                            {
                                *stdin = Stdin::Descriptor;
                            }
                        }
                    }
                }
                ast::IoRedirect::OutputAndError(w, _) => {
                    for f in self
                        .expand(&w.value, pos(w), true)
                        .unwrap_or_default()
                        .into_iter()
                        .flatten()
                    {
                        shown.push(format!("> {}", super::reach::shown(&f.text)));
                        self.disk_write_target(&f, &format!("`{name} &> {}`", w.value));
                    }
                }
                ast::IoRedirect::HereString(fd, w) => {
                    let text = self.expand_text(&w.value, pos(w), true);
                    if fd.is_none_or(|f| f == 0) {
                        *stdin = Stdin::Text(text, false);
                    }
                }
                ast::IoRedirect::HereDocument(fd, doc) => {
                    let at = pos(&doc.doc);
                    let text = self.expand_heredoc(&doc.doc.value, doc.requires_expansion, at);
                    if fd.is_none_or(|f| f == 0) {
                        *stdin = Stdin::Text(text, true);
                    }
                }
            }
        }
        shown
    }
}

fn pos(w: &ast::Word) -> usize {
    w.loc.as_ref().map_or(0, |l| l.start.index)
}

/// Combine what two parts of a program produce; the literal text survives only where one
/// command alone produced it.
pub(super) fn merge(a: Produced, b: Produced, keep_text: bool) -> Produced {
    Produced {
        downloads: a.downloads || b.downloads,
        decodes: a.decodes || b.decodes,
        paths: keep_text && b.paths,
        text: if keep_text { b.text.or(a.text) } else { None },
    }
}
