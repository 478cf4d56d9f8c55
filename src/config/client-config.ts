// Configuration of `mailprobe client …`, the command-line client of a running server. Separate
// from loadConfig: the client needs none of the server's settings (and must not fail on them).
import { ConfigError, optionalVar, urlVar } from "./env-vars.ts";

/** MAILPROBE_URL when unset: the server's default PORT on this machine. */
const DEFAULT_MAILPROBE_URL = "http://127.0.0.1:8080";

export interface ClientConfig {
  /** MAILPROBE_URL: the server's base URL, without a trailing slash. */
  url: string;
  /** MAILPROBE_KEY: the API key sent as `Authorization: Bearer`; null when unset. */
  key: string | null;
}

export function loadClientConfig(env: Record<string, string | undefined>): Readonly<ClientConfig> {
  const url = urlVar(env, "MAILPROBE_URL", ["http:", "https:"]) ?? DEFAULT_MAILPROBE_URL;
  return Object.freeze({ url: url.replace(/\/+$/, ""), key: optionalVar(env, "MAILPROBE_KEY") });
}

/** The API key, or a ConfigError that says how to provide one. */
export function requireClientKey(config: Readonly<ClientConfig>): string {
  if (config.key === null) {
    throw new ConfigError(
      "MAILPROBE_KEY is not set: export MAILPROBE_KEY=<an API key> (create one with `mailprobe users create` or `mailprobe keys create`)",
    );
  }
  return config.key;
}
