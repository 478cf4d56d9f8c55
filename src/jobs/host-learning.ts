import type { Database } from "../db/client.ts";
import { rememberDomainHosts } from "../db/queries/claims.ts";
import { domainsAwaitingFirstSession } from "../db/queries/jobs.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../observability/logger.ts";
import { providerOf, type Engine } from "../verify/index.ts";
import type { DomainHosts } from "./domain-hosts.ts";

/** How often, at most, and how many domains at a time, the pool learns mail hosts ahead. */
const HOSTS_AHEAD_EVERY_MS = 1_000;
const HOSTS_AHEAD_MAX = 500;
const HOSTS_AHEAD_PARALLEL = 8;

/**
 * Which server IP serves each queued domain: learnt from the engine's (cached) DNS resolution,
 * kept in this process (domain-hosts.ts) and written to mail_domain_hosts, where every worker's
 * claim reads it to skip domains of saturated servers.
 *
 * The hosts of domains still waiting for their first session are learnt ahead (their DNS is
 * looked up once either way: the session reads the engine's cache). Without it, a host that just
 * freed a slot is offered only the domains a session or a claim had already taught us, and a
 * claim cannot tell that an untouched domain's server is saturated.
 */
export class HostLearning {
  private learningSince = 0;
  private learning: Promise<void> | null = null;
  private learntUpTo = "";

  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      logger: Logger;
      engine: Engine;
      hosts: DomainHosts;
      stopping: AbortSignal;
    },
  ) {}

  /** The domain's first mail host address from the engine's (cached) resolution, learnt; null if none. */
  async learn(domain: string): Promise<string | null> {
    const found = await this.resolve(domain);
    if (found !== null) this.taught(domain, found.host, found.provider);
    return found?.host ?? null;
  }

  /**
   * A session, a busy host or a provider's pace told us where `domain` is served (and by which
   * provider, when it said: egress.ts providerOf).
   */
  taught(domain: string, host: string, provider: string | null): void {
    if (!this.deps.hosts.learn(domain, host, provider)) return;
    rememberDomainHosts(this.deps.db, [{ domain, host, provider }], this.deps.clock.now()).catch(
      (err: unknown) => this.deps.logger.warn({ err, domain }, "remembering a mail host failed"),
    );
  }

  /** Starts learning the next page of queued domains, unless a page is in progress or was just learnt. */
  learnAhead(): void {
    const now = this.deps.clock.now();
    if (this.learning !== null || now.getTime() - this.learningSince < HOSTS_AHEAD_EVERY_MS) return;
    this.learningSince = now.getTime();
    this.learning = this.learnPage(now)
      .catch((err: unknown) => this.deps.logger.warn({ err }, "learning mail hosts ahead failed"))
      .finally(() => (this.learning = null));
  }

  /** Settles when no page is being learnt. */
  async idle(): Promise<void> {
    await this.learning;
  }

  private async learnPage(now: Date): Promise<void> {
    const { db, hosts, stopping } = this.deps;
    const page = await domainsAwaitingFirstSession(db, now, this.learntUpTo, HOSTS_AHEAD_MAX);
    this.learntUpTo = page.length < HOSTS_AHEAD_MAX ? "" : page[page.length - 1]!;
    const domains = page.filter((d) => !hosts.knows(d));
    const learnt: Array<{ domain: string; host: string; provider: string }> = [];
    for (let i = 0; i < domains.length && !stopping.aborted; i += HOSTS_AHEAD_PARALLEL) {
      const slice = domains.slice(i, i + HOSTS_AHEAD_PARALLEL);
      const found = await Promise.all(slice.map((d) => this.resolve(d)));
      slice.forEach((domain, j) => {
        const f = found[j];
        if (f != null && hosts.learn(domain, f.host, f.provider)) learnt.push({ domain, ...f });
      });
    }
    await rememberDomainHosts(db, learnt, this.deps.clock.now());
  }

  /** The first address of the domain's best mail host and its provider; null when it has none or DNS failed. */
  private async resolve(domain: string): Promise<{ host: string; provider: string } | null> {
    try {
      const resolution = await this.deps.engine.resolveDomain(domain);
      if (resolution.kind !== "mail_hosts") return null;
      const best = resolution.hosts[0];
      const host = best?.addresses[0];
      return best === undefined || host === undefined
        ? null
        : { host, provider: providerOf(best.name, host) };
    } catch {
      // The session resolves again and reports what failed.
      return null;
    }
  }
}
