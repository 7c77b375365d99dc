//! Which environment variables hold secrets (provider keys, tokens, passwords): the shell's
//! commands do not inherit them, and the tool host redacts their values from what tools return,
//! so neither a planted instruction nor a curious model can read them back.

/// Whether a variable named `name` holds a secret: a word of it (split at `_`, `-`, `.`) is
/// `KEY`, `TOKEN`, `SECRET` or `CREDENTIAL(S)`, or it contains `PASSWORD`, `PASSWD`,
/// `APIKEY` or `SECRET` (`PGPASSWORD`, `OPENAI_APIKEY`) — unless its last word is `FILE`,
/// `PATH` or `DIR`: such a variable says where a secret is, not what it is.
pub fn looks_secret(name: &str) -> bool {
    const WORDS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "CREDENTIAL", "CREDENTIALS"];
    const PARTS: [&str; 4] = ["PASSWORD", "PASSWD", "APIKEY", "SECRET"];
    const PLACES: [&str; 3] = ["FILE", "PATH", "DIR"];
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> = upper.split(['_', '-', '.']).collect();
    if words.last().is_some_and(|w| PLACES.contains(w)) {
        return false;
    }
    words.iter().any(|w| WORDS.contains(w)) || PARTS.iter().any(|p| upper.contains(p))
}

/// This process's environment variables that hold secrets, as `(name, value)`.
pub fn secret_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| {
        let (k, v) = (k.into_string().ok()?, v.into_string().ok()?);
        looks_secret(&k).then_some((k, v))
    })
}

/// Leave the secrets of this process's environment out of `cmd`'s.
pub(crate) fn withhold(cmd: &mut tokio::process::Command) {
    for (name, _) in secret_vars() {
        cmd.env_remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::looks_secret;

    #[test]
    fn keys_tokens_and_passwords_are_secret_and_ordinary_names_are_not() {
        for secret in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "PGPASSWORD",
            "BRAVE_SEARCH_API_KEY",
            "slack-bot-token",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "ANTHROPIC_AUTH_TOKEN",
            "MY_APIKEY",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in [
            "PATH",
            "HOME",
            "KEYBOARD_LAYOUT",
            "SSH_AUTH_SOCK",
            "TOKENIZERS_PARALLELISM",
            "LANG",
            "MY_SECRET_KEY_FILE",
            "GOOGLE_APPLICATION_CREDENTIALS_PATH",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
    }
}
