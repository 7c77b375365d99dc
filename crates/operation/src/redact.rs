//! Secrets kept out of what an operation records: the values of this process's keys and tokens
//! (its environment's secret variables, the configuration's provider and backend keys) are
//! replaced in every tool result before the result is recorded, shown to the model or
//! streamed as an event, so no tool, command or planted instruction reads them back through
//! rein. Files a tool returns (kept as artifacts, images shown to the model) are redacted the
//! same way when they are text, and withheld when a binary one holds a secret.

use std::borrow::Cow;
use std::sync::Arc;

/// Values shorter than this are not redacted: they would match ordinary text.
const SHORTEST: usize = 8;

/// The secret values this process knows, each with the name it is redacted as.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// `(value, name)`, longest value first, so a secret containing another is replaced whole.
    known: Arc<Vec<(String, String)>>,
}

impl Redactor {
    /// Redact `value` as `[redacted: NAME]` (ignored when shorter than 8 bytes).
    pub fn add(&mut self, name: &str, value: &str) {
        let value = value.trim();
        if value.len() < SHORTEST || self.known.iter().any(|(v, _)| v == value) {
            return;
        }
        let known = Arc::make_mut(&mut self.known);
        known.push((value.to_owned(), name.to_owned()));
        known.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    }

    /// This process's environment variables that hold secrets ([`rein_tools::secrets`]).
    pub fn from_env() -> Self {
        let mut s = Self::default();
        for (name, value) in rein_tools::secrets::secret_vars() {
            s.add(&name, &value);
        }
        s
    }

    /// Whether no secret is known.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// `text` with every known secret replaced by `[redacted: NAME]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (value, name) in self.known.iter() {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[redacted: {name}]")));
            }
        }
        out
    }

    /// A file a tool returned, as it may be kept and shown: text (UTF-8) with every known
    /// secret replaced; binary bytes as they are when they hold none. A binary file holding
    /// one cannot be rewritten without breaking its format: `Err` names the secret, and the
    /// file is withheld.
    pub fn redact_file(&self, bytes: Vec<u8>) -> Result<Vec<u8>, &str> {
        if self.known.is_empty() {
            return Ok(bytes);
        }
        match String::from_utf8(bytes) {
            Ok(text) => Ok(match self.redact(&text) {
                Cow::Borrowed(_) => text.into_bytes(),
                Cow::Owned(redacted) => redacted.into_bytes(),
            }),
            Err(binary) => {
                let bytes = binary.into_bytes();
                let held = self
                    .known
                    .iter()
                    .find(|(value, _)| bytes.windows(value.len()).any(|w| w == value.as_bytes()));
                match held {
                    Some((_, name)) => Err(name.as_str()),
                    None => Ok(bytes),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Redactor;

    #[test]
    fn known_values_are_replaced_longest_first_and_short_ones_ignored() {
        let mut s = Redactor::default();
        s.add("OPENAI_API_KEY", "sk-test-0123456789");
        s.add("PREFIX", "sk-test-01");
        s.add("PIN", "1234");
        let text = "key=sk-test-0123456789, other=sk-test-01x, pin 1234";
        assert_eq!(
            s.redact(text),
            "key=[redacted: OPENAI_API_KEY], other=[redacted: PREFIX]x, pin 1234"
        );
        assert!(matches!(
            s.redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_text_file_is_redacted_and_a_binary_one_holding_a_secret_is_withheld() {
        let mut s = Redactor::default();
        s.add("DEPLOY_TOKEN", "tok-4f9a1b2c3d");
        assert_eq!(
            s.redact_file(b"export T=tok-4f9a1b2c3d\n".to_vec()),
            Ok(b"export T=[redacted: DEPLOY_TOKEN]\n".to_vec())
        );
        let mut png = b"\x89PNG\r\n\x1a\n\xff\xfe".to_vec();
        assert_eq!(
            s.redact_file(png.clone()),
            Ok(png.clone()),
            "no secret: kept"
        );
        png.extend_from_slice(b"tEXttok-4f9a1b2c3d");
        assert_eq!(s.redact_file(png), Err("DEPLOY_TOKEN"));
        // Nothing known: nothing read.
        let none = Redactor::default();
        assert_eq!(none.redact_file(vec![0xff, 0x00]), Ok(vec![0xff, 0x00]));
    }
}
