// What the keys page says a remembered device is: browser and system from real User-Agent
// headers, in the order that tells Edge and Opera from Chrome, Chrome from Safari, Android from
// Linux and iOS from macOS.
import assert from "node:assert/strict";
import { test } from "node:test";
import { deviceLabel } from "../../../src/auth/device-label.ts";

const CASES: Array<[string | undefined, string]> = [
  [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86",
    "Edge on Windows",
  ],
  [
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0.0.0",
    "Opera on macOS",
  ],
  ["Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Linux"],
  [
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.135 Mobile Safari/537.36",
    "Chrome on Android",
  ],
  [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Safari on iOS",
  ],
  [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
    "Chrome on Linux",
  ],
  ["curl/8.5.0", "Unknown browser"],
  [undefined, "Unknown browser"],
  ["Something (Windows NT 10.0)", "A browser on Windows"],
];

test("deviceLabel names the browser and the system", () => {
  for (const [ua, label] of CASES) assert.equal(deviceLabel(ua), label, String(ua));
});
