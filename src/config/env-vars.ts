// Typed readers for environment variables. Each names the variable in its error so a
// misconfigured deployment says exactly what to fix.

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

const present = (env: Env, name: string): string | undefined => {
  const raw = env[name];
  return raw === undefined || raw.trim() === "" ? undefined : raw.trim();
};

export function stringVar(env: Env, name: string, fallback: string): string {
  return present(env, name) ?? fallback;
}

export function optionalVar(env: Env, name: string): string | null {
  return present(env, name) ?? null;
}

export function intVar(
  env: Env,
  name: string,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = present(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (["1", "true", "yes", "on"].includes(raw)) return true;
  if (["0", "false", "no", "off"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

export function enumVar<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

export function urlVar(env: Env, name: string, protocols: readonly string[]): string | null {
  const raw = present(env, name);
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(" or ")}, got ${url.protocol}`);
  }
  return raw;
}

/** A 32-byte key given as 64 hex characters or base64. */
export function keyVar(env: Env, name: string): Buffer | null {
  const raw = present(env, name);
  if (raw === undefined) return null;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, "hex") : Buffer.from(raw, "base64");
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes (64 hex characters or base64)`);
  return key;
}
