-- Accounts are unique ignoring case: `CaseX` and `casex` are one account. Accounts are ASCII
-- (xUserAccount), so lower() agrees on SQLite and PostgreSQL; lookups use the same expression,
-- so they use this index.
CREATE UNIQUE INDEX users_account_lower ON users (lower(account));
