// The provider-pace port: how many RCPTs a session may ask a provider that throttled us
// (docs/pacing.md). Providers count recipients per client IP across all their mail servers, so
// the pace is per provider and egress identity; the app plugs in one kept in the database
// (hostslots/provider-pace.ts), shared by every worker and the realtime API.

/** What a pace lets one session ask. */
export interface PaceGrant {
  /** RCPTs the session may send (at least 1); its recipients past them are left unasked. */
  granted: number;
  /** The provider refused us and its window is not known yet: this session finds out whether it answers again. */
  probe: boolean;
  /** The reservation's handle, lowered to what the session really asked. */
  spend: string | null;
}

export type PaceAnswer =
  /** Not paced: ask freely (the session still reports what it asked). */
  | { kind: "free" }
  | { kind: "granted"; grant: PaceGrant }
  /** No room now: the next RCPT fits at `roomAt`. */
  | { kind: "no_room"; roomAt: Date };

/** What one session asked of a provider, reported at its end. */
export interface PaceUsage {
  provider: string;
  egress: string;
  /** When the session took its place at the server (its reservation, when paced). */
  startedAt: Date;
  /** RCPT commands sent. */
  asked: number;
  /** RCPTs the provider answered (any reply but a volume refusal). */
  accepted: number;
  /** A RCPT drew a refusal of our volume (client-scope rate limit: Gmail's 421 4.7.0, [TSS04], 4.7.650). */
  throttled: boolean;
  grant: PaceGrant | null;
}

export interface ProviderPace {
  /**
   * No room: "defer" makes the session throw PaceRefusal before connecting (the worker pool puts
   * the group back, untried); "answer" makes it answer `unknown` (rate_limited) without asking
   * (a realtime request has no later).
   */
  readonly whenNoRoom: "defer" | "answer";
  /** Whether `provider` is paced for `egress`, from a view at most about a second old: only then is reserve worth a round trip. */
  isPaced(provider: string, egress: string): Promise<boolean>;
  /** Reserves up to `want` RCPTs. */
  reserve(provider: string, egress: string, want: number): Promise<PaceAnswer>;
  /** Learns from a session (a throttle teaches the pace). When the provider is paced: when it has room again. Never throws. */
  report(usage: PaceUsage): Promise<Date | null>;
}

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
