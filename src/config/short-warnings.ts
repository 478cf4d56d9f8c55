// One short line per set-up problem, for a terminal: the CLI's commands that probe, and the
// start of `serve` and `worker`. /readyz and `mailprobe doctor` keep the full explanation
// (smtp-identity.ts), which ran to five lines of a terminal at every start.
import type { Config, ConfigWarning, ConfigWarningCode } from "./index.ts";

const SHORT_WARNINGS = {
  helo_name_unset: (c) => `SMTP_HELO_NAME is not set; probing as "${c.verify.smtpHeloName}"`,
  helo_name_derived: (c) =>
    `SMTP_HELO_NAME is not set; probing as "${c.verify.smtpHeloName}", which receivers may refuse`,
  helo_name_not_fqdn: (c) =>
    `SMTP_HELO_NAME "${c.verify.smtpHeloName}" is not fully qualified; receivers may refuse it`,
  helo_name_address_literal: (c) =>
    `SMTP_HELO_NAME "${c.verify.smtpHeloName}" is an address literal; spam filters score it`,
  mail_from_not_fqdn: (c) =>
    `SMTP_MAIL_FROM "${c.verify.smtpMailFrom}" is not of a fully-qualified domain; receivers may refuse it`,
} as const satisfies Record<ConfigWarningCode, (config: Readonly<Config>) => string>;

/** The warning in one line, with where its explanation is. */
export const shortWarning = (w: ConfigWarning, config: Readonly<Config>): string =>
  `${SHORT_WARNINGS[w.code](config)} (see: mailprobe doctor)`;
