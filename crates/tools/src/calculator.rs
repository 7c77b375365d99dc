//! The built-in calculator: evaluates an arithmetic expression (`+ - * / % ^`, parentheses,
//! unary minus, decimals). Pure, so it is safe to re-run after a crash.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::json;

/// The calculator tool.
pub struct Calculator;

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
            let expr = args
                .get("expression")
                .and_then(|e| e.as_str())
                .unwrap_or_default();
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
        description: "Evaluate arithmetic expressions exactly.".into(),
        system_role: None,
        apis: vec![ToolApi {
            name: "evaluate".into(),
            description: "Evaluate an arithmetic expression with + - * / % ^ and parentheses, e.g. (17 * 23) / 2.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"expression": {"type": "string", "description": "The expression to evaluate"}},
                "required": ["expression"]
            }),
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
            Some(c) => Err(format!(
                "unexpected '{}' at position {}",
                c as char,
                self.pos + 1
            )),
            None => Err("unexpected end of expression".into()),
        }
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

/// The result as the model reads it: integers without a decimal point.
pub fn format(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
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
}
