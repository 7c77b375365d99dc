-- Providers a user brought: their own base URL and API key for a model provider, used only by
-- their operations. The key is stored sealed (`sealed_key`: base64 of an XChaCha20-Poly1305
-- nonce and ciphertext, made by rein-operation with the server's secret key, whose id is
-- `key_id`); the database never holds it in the clear. Instants are microseconds.
CREATE TABLE IF NOT EXISTS own_providers (
    user_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    base_url TEXT,
    sealed_key TEXT,
    key_id TEXT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, provider)
);
