// Reads one setting of the table (settings.ts) from the environment: the default, bounds, accepted
// values and unit come from its declaration, so loadConfig writes none of them again.
import { boolVar, ConfigError, enumVar, intVar, optionalVar, stringVar, urlVar } from "./env-vars.ts";
import { SETTINGS, type Setting, type SettingKind, type SettingName, type SettingUnit } from "./settings.ts";

type Env = Record<string, string | undefined>;

/** The names of the settings of one kind. */
type NameOf<K extends SettingKind> = {
  [N in SettingName]: (typeof SETTINGS)[N]["kind"] extends K ? N : never;
}[SettingName];

const declared = (name: SettingName): Setting => SETTINGS[name];

const MS_PER: Partial<Record<SettingUnit, number>> = {
  ms: 1,
  s: 1_000,
  min: 60_000,
  h: 3_600_000,
  days: 86_400_000,
};
const BYTES_PER: Partial<Record<SettingUnit, number>> = { bytes: 1, MB: 1024 * 1024 };

function numberDefault(name: SettingName, s: Setting): number {
  if (typeof s.default !== "number") throw new Error(`settings.ts: ${name} has no numeric default`);
  return s.default;
}

/** An int in its declared unit; `fallback` replaces the declared default where it is derived. */
export function intSetting(env: Env, name: NameOf<"int">, fallback?: number): number {
  const s = declared(name);
  return intVar(env, name, fallback ?? numberDefault(name, s), s.min, s.max);
}

/** An int whose absence means "none" (its declared default is null). */
export function optionalIntSetting(env: Env, name: NameOf<"int">): number | null {
  return optionalVar(env, name) === null ? null : intSetting(env, name, 0);
}

/** A duration in milliseconds, whatever unit the variable is written in (its suffix). */
export function durationMsSetting(env: Env, name: NameOf<"int">): number {
  const factor = MS_PER[declared(name).unit];
  if (factor === undefined) throw new Error(`settings.ts: ${name} is not a duration`);
  return intSetting(env, name) * factor;
}

/** A size in bytes, whatever unit the variable is written in (its suffix). */
export function sizeBytesSetting(env: Env, name: NameOf<"int">): number {
  const factor = BYTES_PER[declared(name).unit];
  if (factor === undefined) throw new Error(`settings.ts: ${name} is not a size`);
  return intSetting(env, name) * factor;
}

export function boolSetting(env: Env, name: NameOf<"bool">): boolean {
  const s = declared(name);
  if (typeof s.default !== "boolean") throw new Error(`settings.ts: ${name} has no boolean default`);
  return boolVar(env, name, s.default);
}

export function enumSetting<T extends string>(env: Env, name: NameOf<"enum">): T {
  const s = declared(name);
  return enumVar(env, name, (s.values ?? []) as readonly T[], s.default as T);
}

export function urlSetting(env: Env, name: NameOf<"url">): string | null {
  return urlVar(env, name, declared(name).protocols ?? []);
}

/** A string setting with a default (its declaration must give one). */
export function stringSetting(env: Env, name: NameOf<"string">): string {
  const s = declared(name);
  if (typeof s.default !== "string") throw new Error(`settings.ts: ${name} has no string default`);
  return stringVar(env, name, s.default);
}

/** An optional string setting, refused when shorter than its declared minLength. */
export function optionalStringSetting(env: Env, name: NameOf<"string">, tooShort?: string): string | null {
  const value = optionalVar(env, name);
  const minLength = declared(name).minLength;
  if (value !== null && minLength !== undefined && value.length < minLength)
    throw new ConfigError(tooShort ?? `${name} must be at least ${String(minLength)} characters long`);
  return value;
}

/** A comma-separated list of seconds, in milliseconds; the declared default when unset. */
export function secondsListSetting(env: Env, name: NameOf<"list">): number[] {
  const s = declared(name);
  const raw = optionalVar(env, name);
  if (raw === null) {
    if (!Array.isArray(s.default) || s.unit !== "s")
      throw new Error(`settings.ts: ${name} is no list of seconds`);
    return s.default.map((x: number) => x * 1000);
  }
  const items = raw.split(",").map((x) => x.trim());
  if (items.length === 0 || items.some((x) => !/^\d+(\.\d+)?$/.test(x))) {
    throw new ConfigError(`${name} must be a comma-separated list of seconds, got "${raw}"`);
  }
  return items.map((x) => Math.round(Number(x) * 1000));
}
