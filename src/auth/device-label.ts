// What the keys page shows for a remembered device: "Chrome on Windows", enough for its owner to
// recognise it (and a stranger's), never the whole User-Agent header (which a client writes freely
// and which fingerprints the browser's exact version). Order matters: Edge and Opera also say
// "Chrome", Chrome also says "Safari", Android also says "Linux", iOS also says "Mac OS X".

const BROWSERS: ReadonlyArray<[RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, "Edge"],
  [/\bOPR\//, "Opera"],
  [/\bFirefox\/|\bFxiOS\//, "Firefox"],
  [/\bChrom(?:e|ium)\/|\bCriOS\/|\bHeadlessChrome\//, "Chrome"],
  [/\bSafari\//, "Safari"],
];

const SYSTEMS: ReadonlyArray<[RegExp, string]> = [
  [/\bAndroid\b/, "Android"],
  [/\biPhone\b|\biPad\b|\biPod\b/, "iOS"],
  [/\bWindows\b/, "Windows"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bMac OS X\b|\bMacintosh\b/, "macOS"],
  [/\bLinux\b/, "Linux"],
];

const firstMatch = (ua: string, table: ReadonlyArray<[RegExp, string]>): string | null =>
  table.find(([re]) => re.test(ua))?.[1] ?? null;

/** "Firefox on Linux", "Safari", "on iOS"…; "Unknown browser" when nothing is recognised. */
export function deviceLabel(userAgent: string | undefined): string {
  const ua = (userAgent ?? "").slice(0, 512);
  const browser = firstMatch(ua, BROWSERS);
  const system = firstMatch(ua, SYSTEMS);
  if (browser && system) return `${browser} on ${system}`;
  return browser ?? (system ? `A browser on ${system}` : "Unknown browser");
}
