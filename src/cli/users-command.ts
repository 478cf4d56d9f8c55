// `mailprobe users list|show|deactivate|sign-in-link`: the operator's view of users from the command line,
// through the same operator service as the HTTP operator API (directly, or through the loopback
// admin API while `serve` owns the embedded data directory).
import { signInLinkUrl } from "../auth/sign-in-links.ts";
import { loadConfig } from "../config/index.ts";
import { isUuid } from "../lib/ids.ts";
import { createLogger } from "../observability/logger.ts";
import type { OperatorUserJson } from "../users/operator.ts";
import { CliError } from "./cli-support.ts";
import { openDataAccess, type DataAccess } from "./data-access.ts";

const say = (line: string): void => void process.stdout.write(line + "\n");

async function withData<T>(run: (data: DataAccess) => Promise<T>): Promise<T> {
  const data = await openDataAccess(loadConfig(process.env), createLogger("warn", "stderr"));
  try {
    return await run(data);
  } finally {
    await data.close();
  }
}

/** A user named by id (UUID) or by email (anything with an @). */
export function userSelector(who: string): { id: string } | { email: string } {
  const trimmed = who.trim();
  if (trimmed.includes("@")) return { email: trimmed };
  if (isUuid(trimmed)) return { id: trimmed.toLowerCase() };
  throw new CliError(`"${who}" is neither a user id (UUID) nor an email address`);
}

const stateOf = (u: OperatorUserJson): string => (u.is_active ? "active" : "deactivated");

export function formatUsersTable(users: OperatorUserJson[]): string {
  const header = ["user_id", "email", "balance", "state", "keys", "verified_30d", "charged_30d"];
  const rows = users.map((u) => [
    u.user_id,
    u.email ?? "-",
    String(u.balance),
    stateOf(u),
    String(u.active_keys),
    String(u.usage.verifications),
    String(u.usage.credits_charged),
  ]);
  return [header, ...rows].map((r) => r.join("\t")).join("\n");
}

export async function usersListCommand(opts: {
  email?: string;
  limit: number;
  offset: number;
  json?: boolean;
}): Promise<void> {
  const page = { email: opts.email?.trim() || null, limit: opts.limit, offset: opts.offset };
  const r = await withData((data) => data.listUsers(page));
  if (opts.json) {
    say(JSON.stringify({ users: r.users, total: r.total, limit: page.limit, offset: page.offset }));
    return;
  }
  if (r.users.length > 0) say(formatUsersTable(r.users));
  const shown = r.users.length ? `${page.offset + 1}-${page.offset + r.users.length}` : "none";
  const next =
    page.offset + r.users.length < r.total ? `; next page: --offset ${page.offset + r.users.length}` : "";
  say(`(${shown} of ${r.total} users${next})`);
}

export async function usersShowCommand(who: string, opts: { json?: boolean }): Promise<void> {
  const selector = userSelector(who);
  const { user, keys } = await withData(async (data) => {
    const user = await data.findUser(selector);
    return { user, keys: await data.listKeys(user.user_id) };
  });
  if (opts.json) {
    say(JSON.stringify({ ...user, api_keys: keys }));
    return;
  }
  say(`user_id: ${user.user_id}`);
  say(`email: ${user.email ?? "-"}`);
  say(`state: ${stateOf(user)}${user.deactivated_at ? ` (since ${user.deactivated_at})` : ""}`);
  say(`balance: ${user.balance}`);
  say(`created_at: ${user.created_at}`);
  say(`last_used_at: ${user.last_used_at ?? "-"}`);
  say(
    `usage (${user.usage.days} days): ${user.usage.verifications} verifications, ${user.usage.credits_charged} credits charged`,
  );
  say(`api_keys: ${user.active_keys} active of ${keys.length}`);
  for (const k of keys)
    say(`  ${[k.id, k.is_active ? "active" : "revoked", k.purpose, k.prefix, k.name].join("\t")}`);
}

export async function usersDeactivateCommand(who: string, opts: { json?: boolean }): Promise<void> {
  const selector = userSelector(who);
  const r = await withData(async (data) => data.deactivateUser((await data.findUser(selector)).user_id));
  if (opts.json) say(JSON.stringify(r));
  else
    say(
      `deactivated ${r.user.user_id}${r.user.email ? ` (${r.user.email})` : ""}: ` +
        `${r.deactivated_key_ids.length} API keys deactivated, their sessions end`,
    );
}

/**
 * A one-time dashboard sign-in link for a user who cannot get in (their key sits in a script, or
 * was printed once and lost): 15 minutes, one use, tied to `--key` or to the user's newest custom
 * key. The address is `--url` (default this server's on localhost); the token rides in the
 * fragment, which the browser never sends to a server.
 */
export async function usersSignInLinkCommand(
  who: string,
  opts: { key?: string; url?: string; json?: boolean },
): Promise<void> {
  const selector = userSelector(who);
  const origin = opts.url ?? `http://localhost:${String(loadConfig(process.env).port)}`;
  const link = await withData(async (data) =>
    data.createSignInLink((await data.findUser(selector)).user_id, opts.key ?? null),
  );
  const url = signInLinkUrl(origin, link.token);
  if (opts.json) {
    say(JSON.stringify({ url, ...link }));
    return;
  }
  say(url);
  say(`one use, until ${link.expires_at}; opens a session of key ${link.api_key_id} (revoking it ends both)`);
}
