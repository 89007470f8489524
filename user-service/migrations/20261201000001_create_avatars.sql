-- Avatars: at most one image per account (PNG, JPEG or WebP of at most 1 MiB: the service
-- checks both before it stores one), its media type, and its SHA-256 in hex (the ETag is made
-- from it, so a read hashes nothing). Portable SQL: BYTEA is PostgreSQL's byte string; SQLite
-- gives a column of that declared type no conversion, so the bytes are stored as the blob
-- they are bound as.
CREATE TABLE avatars (
    account TEXT NOT NULL PRIMARY KEY REFERENCES users (account),
    content_type TEXT NOT NULL,
    image BYTEA NOT NULL,
    sha256 TEXT NOT NULL
);
-- Avatars are read by account ignoring case, as users are.
CREATE UNIQUE INDEX avatars_account_lower ON avatars (lower(account));
