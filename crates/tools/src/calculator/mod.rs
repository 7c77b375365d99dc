//! The built-in calculator: evaluates an arithmetic expression (`+ - * / % ^`, parentheses,
//! unary minus, decimals, functions such as `sqrt` and `round`, constants `pi` and `e`).
//! Arithmetic on decimals is exact (fractions of 128-bit integers, see [`number`]); once a
//! result can only be approximate it is shown rounded to 12 significant digits. Pure, so it is
//! safe to re-run after a crash.

pub mod number;

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use schemars::JsonSchema;
use serde::Deserialize;
use std::cmp::Ordering;

pub use number::Number;

/// Why an expression has no value; the text is what the model reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CalcError {
    /// `x / 0` or `x % 0`.
    #[error("division by zero")]
    DivisionByZero,
    /// `0 ^ -n`.
    #[error("division by zero (0 raised to a negative power)")]
    ZeroToNegativePower,
    /// A `(` without its `)`; the position is 1-based.
    #[error("expected ')' at position {0}")]
    Unclosed(usize),
    /// Digits and dots that are not one number.
    #[error("invalid number '{0}'")]
    InvalidNumber(String),
    /// A name that is neither a constant nor followed by `(`.
    #[error("unknown name '{name}' at position {at}")]
    UnknownName {
        /// The name, lower case.
        name: String,
        /// Where it starts, 1-based.
        at: usize,
    },
    /// A character nothing expects there.
    #[error("unexpected '{found}' at position {at}")]
    Unexpected {
        /// The character.
        found: char,
        /// Where, 1-based.
        at: usize,
    },
    /// The text ended inside the expression.
    #[error("unexpected end of expression")]
    End,
    /// A function given the wrong number of arguments.
    #[error("{name} takes {takes} argument{}, got {got}", if *takes == 1 { "" } else { "s" })]
    Arity {
        /// The function.
        name: String,
        /// How many it takes.
        takes: usize,
        /// How many it got.
        got: usize,
    },
    /// `min()` or `max()` of nothing.
    #[error("{0} takes at least 1 argument")]
    NoArguments(String),
    /// An argument outside the function's domain.
    #[error("{name} {needs}, got {got}")]
    Domain {
        /// The function.
        name: String,
        /// What it needs (`needs a positive argument`).
        needs: &'static str,
        /// What it got.
        got: String,
    },
    /// `sqrt` of a negative number.
    #[error("sqrt of a negative number ({0})")]
    NegativeRoot(String),
    /// A function rein does not have.
    #[error("unknown function '{0}'")]
    UnknownFunction(String),
    /// The value overflowed or is not a number.
    #[error("the result is not a finite number")]
    NotFinite,
}

/// The calculator tool.
pub struct Calculator;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EvaluateArgs {
    /// The expression to evaluate
    expression: String,
}

impl Tool for Calculator {
    fn manifest(&self) -> ToolManifest {
        manifest()
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        _cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args = tool_args!("calculator/evaluate", args, EvaluateArgs);
            let expr = args.expression.as_str();
            Ok(match evaluate(expr) {
                Ok(v) => ToolOutput::ok(v.to_string()),
                Err(e) => ToolOutput::failed(format!("Cannot evaluate `{expr}`: {e}")),
            })
        }
        .boxed()
    }
}

/// The calculator's manifest.
pub fn manifest() -> ToolManifest {
    ToolManifest {
        identifier: "calculator".into(),
        kind: ToolKind::Builtin,
        title: "Calculator".into(),
        description: "Evaluate arithmetic expressions.".into(),
        system_role: None,
        apis: vec![ToolApi {
            name: "evaluate".into(),
            description: "Evaluate an arithmetic expression with + - * / % ^, parentheses, functions (sqrt, abs, round, floor, ceil, exp, ln, log10, log2, sin, cos, tan, asin, acos, atan, min, max, pow) and constants pi and e, e.g. round(sqrt(2) * 100) / 100.".into(),
            parameters: crate::parameters_of::<EvaluateArgs>(),
            intervention: None,
            cost: None,
        }],
        intervention: None,
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip();
        self.s.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<Number, CalcError> {
        let mut v = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<Number, CalcError> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v * r,
                _ if r.is_zero() => return Err(CalcError::DivisionByZero),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<Number, CalcError> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let exp = self.power()?;
            if base.is_zero() && exp.cmp_value(Number::int(0)) == Ordering::Less {
                return Err(CalcError::ZeroToNegativePower);
            }
            return Ok(base.pow(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<Number, CalcError> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some(b'+') => {
                self.pos += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<Number, CalcError> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(b')') {
                    return Err(CalcError::Unclosed(self.pos + 1));
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.pos;
                while self.pos < self.s.len()
                    && (self.s[self.pos].is_ascii_digit() || self.s[self.pos] == b'.')
                {
                    self.pos += 1;
                }
                // Digits and dots only: ASCII, so always UTF-8.
                let text = String::from_utf8_lossy(&self.s[start..self.pos]);
                Number::parse_decimal(&text)
                    .ok_or_else(|| CalcError::InvalidNumber(text.into_owned()))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self
                    .s
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    self.pos += 1;
                }
                // ASCII letters, digits and `_` only.
                let name = String::from_utf8_lossy(&self.s[start..self.pos]).to_ascii_lowercase();
                if self.peek() != Some(b'(') {
                    return match name.as_str() {
                        "pi" => Ok(Number::Approx(std::f64::consts::PI)),
                        "e" => Ok(Number::Approx(std::f64::consts::E)),
                        _ => Err(CalcError::UnknownName {
                            name,
                            at: start + 1,
                        }),
                    };
                }
                self.pos += 1;
                let mut args = vec![self.expr()?];
                while self.peek() == Some(b',') {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
                if self.peek() != Some(b')') {
                    return Err(CalcError::Unclosed(self.pos + 1));
                }
                self.pos += 1;
                call(&name, &args)
            }
            Some(c) => Err(CalcError::Unexpected {
                found: c as char,
                at: self.pos + 1,
            }),
            None => Err(CalcError::End),
        }
    }
}

/// Apply a named function; errors name the function and what was wrong. Functions that keep
/// exactness (abs, round, floor, ceil, min, max, pow) work on exact values; the others go
/// through floating point.
fn call(name: &str, args: &[Number]) -> Result<Number, CalcError> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(CalcError::Arity {
                name: name.to_owned(),
                takes: n,
                got: args.len(),
            })
        }
    };
    let float = |f: fn(f64) -> f64| -> Result<Number, CalcError> {
        arity(1)?;
        Ok(Number::Approx(f(args[0].to_f64())))
    };
    match name {
        "abs" => arity(1).map(|()| args[0].abs()),
        "round" => arity(1).map(|()| args[0].round()),
        "floor" => arity(1).map(|()| args[0].floor()),
        "ceil" => arity(1).map(|()| args[0].ceil()),
        "min" | "max" => {
            let want = if name == "min" {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            args.iter()
                .copied()
                .reduce(|a, b| if b.cmp_value(a) == want { b } else { a })
                .ok_or_else(|| CalcError::NoArguments(name.to_owned()))
        }
        "pow" => {
            arity(2)?;
            Ok(args[0].pow(args[1]))
        }
        "sqrt" => {
            arity(1)?;
            let x = args[0];
            if x.cmp_value(Number::int(0)) == Ordering::Less {
                return Err(CalcError::NegativeRoot(x.to_string()));
            }
            // A perfect square of an exact value stays exact (sqrt(2.25) = 1.5).
            let root = x.to_f64().sqrt();
            let candidate = Number::parse_decimal(&format!("{root}"));
            Ok(match candidate {
                Some(c) if matches!(x, Number::Exact { .. }) && c * c == x => c,
                _ => Number::Approx(root),
            })
        }
        "exp" => float(f64::exp),
        "sin" => float(f64::sin),
        "cos" => float(f64::cos),
        "tan" => float(f64::tan),
        "atan" => float(f64::atan),
        "asin" | "acos" => {
            arity(1)?;
            let x = args[0].to_f64();
            if !(-1.0..=1.0).contains(&x) {
                return Err(CalcError::Domain {
                    name: name.to_owned(),
                    needs: "needs an argument in [-1, 1]",
                    got: args[0].to_string(),
                });
            }
            Ok(Number::Approx(if name == "asin" {
                x.asin()
            } else {
                x.acos()
            }))
        }
        "ln" | "log10" | "log2" => {
            arity(1)?;
            if args[0].cmp_value(Number::int(0)) != Ordering::Greater {
                return Err(CalcError::Domain {
                    name: name.to_owned(),
                    needs: "needs a positive argument",
                    got: args[0].to_string(),
                });
            }
            let x = args[0].to_f64();
            Ok(Number::Approx(match name {
                "ln" => x.ln(),
                "log10" => x.log10(),
                _ => x.log2(),
            }))
        }
        _ => Err(CalcError::UnknownFunction(name.to_owned())),
    }
}

/// Evaluate `expression`; errors say what is wrong and where.
pub(crate) fn evaluate(expression: &str) -> Result<Number, CalcError> {
    let mut p = Parser {
        s: expression.as_bytes(),
        pos: 0,
    };
    let v = p.expr()?;
    if p.peek().is_some() {
        return Err(CalcError::Unexpected {
            found: p.s[p.pos] as char,
            at: p.pos + 1,
        });
    }
    if !v.is_finite() {
        return Err(CalcError::NotFinite);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let cases = [
            ("1 + 2 * 3", "7"),
            ("(1 + 2) * 3", "9"),
            ("2 ^ 3 ^ 2", "512"),
            ("-(4 - 6) / 4", "0.5"),
            ("17*23", "391"),
            ("10 % 4", "2"),
        ];
        for (e, want) in cases {
            assert_eq!(evaluate(e).unwrap().to_string(), want, "{e}");
        }
        assert_eq!(
            evaluate("1 / 0").unwrap_err().to_string(),
            "division by zero"
        );
        assert!(
            evaluate("2 +")
                .unwrap_err()
                .to_string()
                .contains("end of expression")
        );
        assert!(
            evaluate("2 $ 3")
                .unwrap_err()
                .to_string()
                .contains("unexpected '$' at position 3")
        );
        assert!(
            evaluate("(1")
                .unwrap_err()
                .to_string()
                .contains("expected ')'")
        );
    }

    #[test]
    fn functions_constants_and_clean_decimals() {
        let cases = [
            ("0.1 + 0.2", "0.3"),
            ("sqrt(16) + abs(-2)", "6"),
            ("round(sqrt(2) * 100) / 100", "1.41"),
            ("floor(2.7) + ceil(2.1)", "5"),
            ("max(1, 7, 3) - min(4, 2)", "5"),
            ("pow(2, 10)", "1024"),
            ("log10(1000) + log2(8) + ln(e)", "7"),
            ("round(sin(pi / 2))", "1"),
            ("2 * PI", "6.28318530718"),
        ];
        for (e, want) in cases {
            assert_eq!(evaluate(e).unwrap().to_string(), want, "{e}");
        }
        assert!(
            evaluate("sqrt(-1)")
                .unwrap_err()
                .to_string()
                .contains("negative")
        );
        assert!(
            evaluate("ln(0)")
                .unwrap_err()
                .to_string()
                .contains("positive")
        );
        assert!(
            evaluate("pow(2)")
                .unwrap_err()
                .to_string()
                .contains("2 arguments")
        );
        assert!(
            evaluate("foo(1)")
                .unwrap_err()
                .to_string()
                .contains("unknown function 'foo'")
        );
        assert!(
            evaluate("tau")
                .unwrap_err()
                .to_string()
                .contains("unknown name 'tau'")
        );
    }

    #[test]
    fn exact_decimal_arithmetic() {
        let cases = [
            ("0.1 * 3", "0.3"),
            ("1 / 3 * 3", "1"),
            ("1 / 3", "0.333333333333 (exactly 1/3)"),
            ("2 ^ 100", "1267650600228229401496703205376"),
            ("2 ^ -3", "0.125"),
            ("19.99 * 3 - 0.03", "59.94"),
            (
                "123456789012345678 * 1000000000000",
                "123456789012345678000000000000",
            ),
            ("0.1 + 0.7 - 0.8", "0"),
            ("7.5 % 2", "1.5"),
            ("-7 % 3", "-1"),
            ("round(2.5) + round(-2.5)", "0"),
            ("floor(-0.5)", "-1"),
            ("ceil(-0.5)", "0"),
            ("sqrt(2.25)", "1.5"),
            ("max(0.1 + 0.2, 0.3)", "0.3"),
        ];
        for (e, want) in cases {
            assert_eq!(evaluate(e).unwrap().to_string(), want, "{e}");
        }
        // Beyond 128-bit fractions the result degrades to floating point, still finite.
        let big = evaluate("10 ^ 40 * 10 ^ 40").unwrap();
        assert!(matches!(big, Number::Approx(_)), "{big:?}");
        assert_eq!(big.to_string(), "1e80");
        assert!(matches!(evaluate("sqrt(2)").unwrap(), Number::Approx(_)));
        assert!(
            evaluate("0 ^ -1")
                .unwrap_err()
                .to_string()
                .contains("division by zero")
        );
        assert!(
            evaluate("1 % 0")
                .unwrap_err()
                .to_string()
                .contains("division by zero")
        );
        assert!(
            evaluate("1.2.3")
                .unwrap_err()
                .to_string()
                .contains("invalid number '1.2.3'")
        );
    }
}
