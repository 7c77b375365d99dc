-- MCP servers a user defined: their operations (only theirs) are offered the server's tools.
-- The request headers (an `Authorization` token, say) are stored sealed, as one JSON object
-- (`sealed_headers`: base64 of an XChaCha20-Poly1305 nonce and ciphertext made by
-- rein-operation with the server's secret key `key_id`); `header_names` (a JSON array) says
-- which headers are set without opening them. Instants are microseconds.
CREATE TABLE IF NOT EXISTS own_mcp_servers (
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    header_names TEXT NOT NULL,
    sealed_headers TEXT,
    key_id TEXT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, name)
);
