// Bounds of credit amounts, read by the CLI's argument parsing as well as the service: a module
// without imports, so the CLI does not load the database layer to check an argument.

/**
 * Most credits one grant (or a new user's opening balance) may add: far beyond any real top-up,
 * and far below 2^53, so a balance stays an exact JavaScript number (balances are bigint columns,
 * read as numbers).
 */
export const MAX_GRANT_CREDITS = 1_000_000_000;
