-- Users: the account is the key (unique), the password is the client's SHA-256 digest in hex.
-- Portable SQL: the same file runs on SQLite and PostgreSQL.
CREATE TABLE users (
    account TEXT NOT NULL PRIMARY KEY,
    password TEXT NOT NULL
);
