import { randomUUID } from "node:crypto";

/** Record ids are UUIDs (the spec says so); v4 from the CSPRNG. */
export const newId = (): string => randomUUID();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);
