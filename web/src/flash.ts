// A message carried across one navigation (e.g. "upload accepted" shown on the task page).
let pending: string | null = null;

export function setFlash(message: string): void {
  pending = message;
}

export function takeFlash(): string | null {
  const m = pending;
  pending = null;
  return m;
}
