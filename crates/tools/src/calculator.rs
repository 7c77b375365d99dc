//! The built-in calculator: evaluates an arithmetic expression (`+ - * / % ^`, parentheses,
//! unary minus, decimals, functions such as `sqrt` and `round`, constants `pi` and `e`). Results
//! are shown rounded to 12 significant digits, so binary floating-point noise (`0.1 + 0.2`)
//! does not reach the model. Pure, so it is safe to re-run after a crash.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use schemars::JsonSchema;
use serde::Deserialize;

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
                Ok(v) => ToolOutput::ok(format(v)),
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

    fn expr(&mut self) -> Result<f64, String> {
        let mut v = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v * r,
                _ if r == 0.0 => return Err("division by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<f64, String> {
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

    fn atom(&mut self) -> Result<f64, String> {
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
                text.parse().map_err(|_| format!("invalid number '{text}'"))
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
                        "pi" => Ok(std::f64::consts::PI),
                        "e" => Ok(std::f64::consts::E),
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

/// Apply a named function; errors name the function and what was wrong.
fn call(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| match args {
        [x] => Ok(f(*x)),
        _ => Err(format!("{name} takes 1 argument, got {}", args.len())),
    };
    let positive = |x: f64, f: fn(f64) -> f64| {
        if x > 0.0 {
            Ok(f(x))
        } else {
            Err(format!(
                "{name} needs a positive argument, got {}",
                format(x)
            ))
        }
    };
    match name {
        "sqrt" => match args {
            [x] if *x >= 0.0 => Ok(x.sqrt()),
            [x] => Err(format!("sqrt of a negative number ({})", format(*x))),
            _ => Err(format!("sqrt takes 1 argument, got {}", args.len())),
        },
        "abs" => one(f64::abs),
        "round" => one(f64::round),
        "floor" => one(f64::floor),
        "ceil" => one(f64::ceil),
        "exp" => one(f64::exp),
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "atan" => one(f64::atan),
        "asin" | "acos" => match args {
            [x] if (-1.0..=1.0).contains(x) => Ok(if name == "asin" { x.asin() } else { x.acos() }),
            [x] => Err(format!(
                "{name} needs an argument in [-1, 1], got {}",
                format(*x)
            )),
            _ => Err(format!("{name} takes 1 argument, got {}", args.len())),
        },
        "ln" | "log10" | "log2" => match args {
            [x] => positive(
                *x,
                match name {
                    "ln" => f64::ln,
                    "log10" => f64::log10,
                    _ => f64::log2,
                },
            ),
            _ => Err(format!("{name} takes 1 argument, got {}", args.len())),
        },
        "min" | "max" if !args.is_empty() => Ok(args
            .iter()
            .copied()
            .reduce(if name == "min" { f64::min } else { f64::max })
            .unwrap_or(f64::NAN)),
        "pow" => match args {
            [b, x] => Ok(b.powf(*x)),
            _ => Err(format!("pow takes 2 arguments, got {}", args.len())),
        },
        _ => Err(format!("unknown function '{name}'")),
    }
}

/// Evaluate `expression`; errors say what is wrong and where.
pub fn evaluate(expression: &str) -> Result<f64, String> {
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

/// The result as the model reads it: rounded to 12 significant digits (binary noise such as
/// `0.30000000000000004` disappears), integers without a decimal point.
pub fn format(v: f64) -> String {
    let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        format!("{}", rounded as i64)
    } else {
        format!("{rounded}")
    }
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
            assert_eq!(format(evaluate(e).unwrap()), want, "{e}");
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
            assert_eq!(format(evaluate(e).unwrap()), want, "{e}");
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
}
