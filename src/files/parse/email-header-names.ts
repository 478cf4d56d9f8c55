// Which header names mean "the email column". Dependency-free on purpose: the dashboard's upload
// preview (web/src/lib/email-column.ts) imports this same module, so the column it pre-selects is
// the one the server will read.

// Compared after lowercasing and removing spaces, "_", "-", "." and ":" ("E-Mail Address:" →
// "emailaddress"). English plus the languages our users upload most (es, fr, de, pt, it, nl).
const EMAIL_HEADER_KEYS = new Set([
  "email",
  "emails",
  "mail",
  "emailaddress",
  "emailaddresses",
  "mailaddress",
  "emailid",
  "correo",
  "correoelectronico",
  "courriel",
  "adresseemail",
  "emailadresse",
  "mailadresse",
  "endereçodeemail",
  "indirizzoemail",
  "emailadres",
]);

const headerKey = (cell: string): string =>
  cell
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[\s_\-.:]/gu, "")
    .normalize("NFC");

/** True when a header cell names an email column ("Email", "E-mail", "email_address", "Correo"…). */
export const isEmailHeaderName = (cell: string): boolean => EMAIL_HEADER_KEYS.has(headerKey(cell));
