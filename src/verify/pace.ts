// What a provider's pace (the ProviderPace port in ports.ts; docs/pacing.md) leaves on a session
// and its results. Providers count recipients per client IP across all their mail servers, so
// the pace is per provider and egress identity; the app plugs in one kept in the database
// (politeness/provider-pace.ts), shared by every worker and the realtime API.

/** The pace of the session's provider had no room: the group goes back to the queue until `roomAt`. */
export class PaceRefusal extends Error {
  override name = "PaceRefusal";
  constructor(
    readonly provider: string,
    /** The server IP the session would have asked. */
    readonly host: string,
    readonly roomAt: Date,
  ) {
    super(`${provider} is paced: no room before ${roomAt.toISOString()}`);
  }
}

/** Why an address is unknown because of a provider's pace, on its result (not a public field). */
export interface PacedBy {
  /** The provider (egress.ts providerOf: "google", "yahoo", or the MX name's registrable domain). */
  provider: string;
  /** When its pace has room again; null when not known. */
  retryAt: Date | null;
  /** Never asked (the pace had no room) rather than refused by the provider. */
  unasked: boolean;
}

const LABELS: Readonly<Record<string, string>> = {
  google: "Gmail",
  yahoo: "Yahoo",
  outlook: "Outlook.com",
  microsoft365: "Microsoft 365",
  icloud: "iCloud",
  gmx: "GMX",
  mailru: "Mail.ru",
  yandex: "Yandex",
};

/** A provider's name for people: "Gmail" for google, else the provider key itself. */
export const providerLabel = (provider: string): string => LABELS[provider] ?? provider;
