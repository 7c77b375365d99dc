//! The server's secret key and what it seals: the API keys users store for their own
//! providers and the headers of the MCP servers they define. A secret is sealed with
//! XChaCha20-Poly1305 under a random 24-byte nonce, bound to its owner and place (the
//! associated data), so a sealed secret copied to another user's or place's row does not
//! open. The secret key never reaches the database; each sealed key records the
//! fingerprint of the key that sealed it ([`SecretKey::id`]), so a server started with another
//! key says so instead of failing to decrypt in silence.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::TryRngCore;
use rein_store::SealedKey;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use crate::env::SECRET_KEY as SECRET_KEY_ENV;

const NONCE_LEN: usize = 24;

/// Why a secret key cannot be had or a sealed key cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The key's text is not base64 of 32 bytes.
    #[error("the secret key from {from} is not base64 of 32 bytes ({why})")]
    Malformed {
        /// Where it came from (a variable or a file).
        from: String,
        /// What is wrong with it.
        why: String,
    },
    /// The key file cannot be read or written.
    #[error("secret key file {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The system has no randomness to give.
    #[error("no randomness for a secret: {0}")]
    Random(String),
    /// A key sealed with another secret key than this process has.
    #[error(
        "a stored key was sealed with secret key {sealed_with}, and this process has {have}: start it with the secret key the keys were stored under (REIN_SECRET_KEY_FILE)"
    )]
    OtherKey {
        /// The sealing key's id.
        sealed_with: String,
        /// This process's key's id.
        have: String,
    },
    /// A sealed secret that does not open under its own secret key: altered, or moved to
    /// another user's or place's row.
    #[error("the stored secret of {owner} for `{label}` does not open: it was altered")]
    Tampered {
        /// Whose.
        owner: String,
        /// What it is for: a provider id, or `mcp:` and a server's name.
        label: String,
    },
    /// Keys are stored but this process has no secret key to open them.
    #[error(
        "this process has no secret key to open stored secrets: set REIN_SECRET_KEY_FILE (or REIN_SECRET_KEY) to the server's"
    )]
    NoKey,
}

/// A 256-bit secret key. Its `Debug` shows only its id.
#[derive(Clone)]
pub struct SecretKey {
    bytes: [u8; 32],
    id: String,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", self.id)
    }
}

fn random<const N: usize>() -> Result<[u8; N], SecretError> {
    let mut bytes = [0u8; N];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| SecretError::Random(e.to_string()))?;
    Ok(bytes)
}

/// What a seal is bound to: the owner and the label (a provider id, or `mcp:` and a server's
/// name). The prefix stays what provider keys were first sealed under.
fn associated(owner: &str, label: &str) -> Vec<u8> {
    format!("rein provider key\0{owner}\0{label}").into_bytes()
}

impl SecretKey {
    /// A new random key.
    pub fn generate() -> Result<Self, SecretError> {
        Ok(Self::from_bytes(random()?))
    }

    fn from_bytes(bytes: [u8; 32]) -> Self {
        let digest = Sha256::new()
            .chain_update(b"rein secret key id\0")
            .chain_update(bytes)
            .finalize();
        let id = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Self { bytes, id }
    }

    /// The key written as base64 (`from` names where it came from, for the error).
    pub fn decode(text: &str, from: &str) -> Result<Self, SecretError> {
        let malformed = |why: String| SecretError::Malformed {
            from: from.to_owned(),
            why,
        };
        let raw = B64
            .decode(text.trim())
            .map_err(|e| malformed(e.to_string()))?;
        let bytes: [u8; 32] = raw
            .try_into()
            .map_err(|raw: Vec<u8>| malformed(format!("{} bytes", raw.len())))?;
        Ok(Self::from_bytes(bytes))
    }

    /// The key as base64, as its file holds it.
    pub fn encode(&self) -> String {
        B64.encode(self.bytes)
    }

    /// Its fingerprint: twelve hex digits of a SHA-256 of the key, safe to show and store.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key in `path`.
    pub fn read(path: &Path) -> Result<Self, SecretError> {
        let text = std::fs::read_to_string(path).map_err(|source| SecretError::File {
            path: path.to_owned(),
            source,
        })?;
        Self::decode(&text, &path.display().to_string())
    }

    /// Write the key to a new file `path` readable by its owner only; an existing file is
    /// never overwritten.
    pub fn write_new(&self, path: &Path) -> Result<(), SecretError> {
        use std::io::Write as _;
        let fail = |source| SecretError::File {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(fail)?;
        file.write_all(format!("{}\n", self.encode()).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(fail)
    }

    /// Seal `owner`'s secret for `label` ([`rein_store::SealedFor::label`]).
    pub fn seal(&self, owner: &str, label: &str, key: &str) -> Result<SealedKey, SecretError> {
        let nonce: [u8; NONCE_LEN] = random()?;
        let cipher = XChaCha20Poly1305::new(&self.bytes.into());
        let aad = associated(owner, label);
        let sealed = cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: key.as_bytes(),
                    aad: &aad,
                },
            )
            // Encryption fails only for messages of gigabytes; an API key is not one.
            .map_err(|_| SecretError::Tampered {
                owner: owner.to_owned(),
                label: label.to_owned(),
            })?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(SealedKey {
            key_id: self.id.clone(),
            sealed: B64.encode(out),
        })
    }

    /// Open `owner`'s sealed secret for `label`.
    pub fn open(
        &self,
        owner: &str,
        label: &str,
        sealed: &SealedKey,
    ) -> Result<String, SecretError> {
        if sealed.key_id != self.id {
            return Err(SecretError::OtherKey {
                sealed_with: sealed.key_id.clone(),
                have: self.id.clone(),
            });
        }
        let tampered = || SecretError::Tampered {
            owner: owner.to_owned(),
            label: label.to_owned(),
        };
        let raw = B64.decode(&sealed.sealed).map_err(|_| tampered())?;
        if raw.len() < NONCE_LEN {
            return Err(tampered());
        }
        let (nonce, body) = raw.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| tampered())?;
        let cipher = XChaCha20Poly1305::new(&self.bytes.into());
        let aad = associated(owner, label);
        let plain = cipher
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: body,
                    aad: &aad,
                },
            )
            .map_err(|_| tampered())?;
        String::from_utf8(plain).map_err(|_| tampered())
    }
}

/// Where this process's secret key is: the file given (`--secret-key-file`,
/// `REIN_SECRET_KEY_FILE`), else `REIN_SECRET_KEY` (the key itself), else `secret.key` in the
/// data directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyPlace {
    /// In the environment.
    Env,
    /// In a file.
    File(PathBuf),
}

impl KeyPlace {
    /// Where the key is for a process given `file`, whose data directory is `home`, with the
    /// environment `env`.
    pub fn find(env: &dyn Fn(&str) -> Option<String>, file: Option<PathBuf>, home: &Path) -> Self {
        match file {
            Some(file) => Self::File(file),
            None if env(SECRET_KEY_ENV).is_some_and(|v| !v.trim().is_empty()) => Self::Env,
            None => Self::File(home.join("secret.key")),
        }
    }

    /// The key, if there is one (`None`: no file yet).
    pub fn load(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<SecretKey>, SecretError> {
        match self {
            Self::Env => env(SECRET_KEY_ENV)
                .map(|v| SecretKey::decode(&v, SECRET_KEY_ENV))
                .transpose(),
            Self::File(path) if !path.exists() => Ok(None),
            Self::File(path) => SecretKey::read(path).map(Some),
        }
    }

    /// The key, made and written to its file when there is none yet (a server's first start).
    pub fn load_or_create(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SecretKey, SecretError> {
        if let Some(key) = self.load(env)? {
            return Ok(key);
        }
        let Self::File(path) = self else {
            // `find` chose the environment because the variable is set: `load` read it.
            return Err(SecretError::NoKey);
        };
        let key = SecretKey::generate()?;
        match key.write_new(path) {
            Ok(()) => Ok(key),
            // Another process made it first: theirs is the key.
            Err(SecretError::File { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                SecretKey::read(path)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_key_opens_only_for_its_owner_and_provider_under_its_secret() {
        let secret = SecretKey::generate().unwrap();
        let sealed = secret.seal("u1", "openai", "sk-abc").unwrap();
        assert!(!sealed.sealed.contains("sk-abc"));
        assert_eq!(secret.open("u1", "openai", &sealed).unwrap(), "sk-abc");
        // Moved to another user's or provider's row, it does not open.
        assert!(matches!(
            secret.open("u2", "openai", &sealed),
            Err(SecretError::Tampered { .. })
        ));
        assert!(matches!(
            secret.open("u1", "anthropic", &sealed),
            Err(SecretError::Tampered { .. })
        ));
        // Two seals of one key differ (fresh nonces).
        assert_ne!(
            secret.seal("u1", "openai", "sk-abc").unwrap().sealed,
            sealed.sealed
        );
        // Another secret key says so.
        let other = SecretKey::generate().unwrap();
        assert!(matches!(
            other.open("u1", "openai", &sealed),
            Err(SecretError::OtherKey { .. })
        ));
        // One flipped bit does not open.
        let mut raw = B64.decode(&sealed.sealed).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        let altered = SealedKey {
            sealed: B64.encode(raw),
            ..sealed
        };
        assert!(matches!(
            secret.open("u1", "openai", &altered),
            Err(SecretError::Tampered { .. })
        ));
    }

    #[test]
    fn a_key_file_is_made_once_owner_only_and_read_back() {
        let dir =
            std::env::temp_dir().join(format!("rein-secret-{}", rein_core::OperationId::new()));
        let none = |_: &str| None;
        let place = KeyPlace::find(&none, None, &dir);
        assert_eq!(place, KeyPlace::File(dir.join("secret.key")));
        assert!(place.load(&none).unwrap().is_none());
        let made = place.load_or_create(&none).unwrap();
        let again = place.load_or_create(&none).unwrap();
        assert_eq!(made.id(), again.id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.join("secret.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.join("secret.key"), "not a key").unwrap();
        let e = place.load(&none).unwrap_err();
        assert!(e.to_string().contains("secret.key"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();

        let env = |k: &str| (k == SECRET_KEY_ENV).then(|| made.encode());
        let place = KeyPlace::find(&env, None, &dir);
        assert_eq!(place, KeyPlace::Env);
        assert_eq!(place.load(&env).unwrap().unwrap().id(), made.id());
        // A file given wins over the variable.
        let given = dir.join("given.key");
        assert_eq!(
            KeyPlace::find(&env, Some(given.clone()), &dir),
            KeyPlace::File(given)
        );
    }
}
