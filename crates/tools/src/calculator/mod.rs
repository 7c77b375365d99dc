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

    fn expr(&mut self) -> Result<Number, String> {
        let mut v = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<Number, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v * r,
                _ if r.is_zero() => return Err("division by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<Number, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let exp = self.power()?;
            if base.is_zero() && exp.cmp_value(Number::int(0)) == Ordering::Less {
                return Err("division by zero (0 raised to a negative power)".into());
            }
            return Ok(base.pow(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<Number, String> {
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

    fn atom(&mut self) -> Result<Number, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(b')') {
                    return Err(format!("expected ')' at position {}", self.pos + 1));
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
                let text =
                    std::str::from_utf8(&self.s[start..self.pos]).map_err(|e| e.to_string())?;
                Number::parse_decimal(text).ok_or_else(|| format!("invalid number '{text}'"))
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
                let name = std::str::from_utf8(&self.s[start..self.pos])
                    .map_err(|e| e.to_string())?
                    .to_ascii_lowercase();
                if self.peek() != Some(b'(') {
                    return match name.as_str() {
                        "pi" => Ok(Number::Approx(std::f64::consts::PI)),
                        "e" => Ok(Number::Approx(std::f64::consts::E)),
                        _ => Err(format!("unknown name '{name}' at position {}", start + 1)),
                    };
                }
                self.pos += 1;
                let mut args = vec![self.expr()?];
                while self.peek() == Some(b',') {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
                if self.peek() != Some(b')') {
                    return Err(format!("expected ')' at position {}", self.pos + 1));
                }
                self.pos += 1;
                call(&name, &args)
            }
            Some(c) => Err(format!(
                "unexpected '{}' at position {}",
                c as char,
                self.pos + 1
            )),
            None => Err("unexpected end of expression".into()),
        }
    }
}

/// Apply a named function; errors name the function and what was wrong. Functions that keep
/// exactness (abs, round, floor, ceil, min, max, pow) work on exact values; the others go
/// through floating point.
fn call(name: &str, args: &[Number]) -> Result<Number, String> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            let s = if n == 1 { "" } else { "s" };
            Err(format!("{name} takes {n} argument{s}, got {}", args.len()))
        }
    };
    let float = |f: fn(f64) -> f64| -> Result<Number, String> {
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
                .ok_or_else(|| format!("{name} takes at least 1 argument"))
        }
        "pow" => {
            arity(2)?;
            Ok(args[0].pow(args[1]))
        }
        "sqrt" => {
            arity(1)?;
            let x = args[0];
            if x.cmp_value(Number::int(0)) == Ordering::Less {
                return Err(format!("sqrt of a negative number ({x})"));
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
                return Err(format!(
                    "{name} needs an argument in [-1, 1], got {}",
                    args[0]
                ));
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
                return Err(format!("{name} needs a positive argument, got {}", args[0]));
            }
            let x = args[0].to_f64();
            Ok(Number::Approx(match name {
                "ln" => x.ln(),
                "log10" => x.log10(),
                _ => x.log2(),
            }))
        }
        _ => Err(format!("unknown function '{name}'")),
    }
}

/// Evaluate `expression`; errors say what is wrong and where.
pub(crate) fn evaluate(expression: &str) -> Result<Number, String> {
    let mut p = Parser {
        s: expression.as_bytes(),
        pos: 0,
    };
    let v = p.expr()?;
    if p.peek().is_some() {
        return Err(format!(
            "unexpected '{}' at position {}",
            p.s[p.pos] as char,
            p.pos + 1
        ));
    }
    if !v.is_finite() {
        return Err("the result is not a finite number".into());
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
        assert_eq!(evaluate("1 / 0").unwrap_err(), "division by zero");
        assert!(evaluate("2 +").unwrap_err().contains("end of expression"));
        assert!(
            evaluate("2 $ 3")
                .unwrap_err()
                .contains("unexpected '$' at position 3")
        );
        assert!(evaluate("(1").unwrap_err().contains("expected ')'"));
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
        assert!(evaluate("sqrt(-1)").unwrap_err().contains("negative"));
        assert!(evaluate("ln(0)").unwrap_err().contains("positive"));
        assert!(evaluate("pow(2)").unwrap_err().contains("2 arguments"));
        assert!(
            evaluate("foo(1)")
                .unwrap_err()
                .contains("unknown function 'foo'")
        );
        assert!(evaluate("tau").unwrap_err().contains("unknown name 'tau'"));
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
        assert!(evaluate("0 ^ -1").unwrap_err().contains("division by zero"));
        assert!(evaluate("1 % 0").unwrap_err().contains("division by zero"));
        assert!(
            evaluate("1.2.3")
                .unwrap_err()
                .contains("invalid number '1.2.3'")
        );
    }
}
