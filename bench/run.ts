// `npm run bench`: every benchmark, in order. Each is bounded in time and stops by itself.
// PostgreSQL figures need BENCH_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test).
import { benchVerifyEngine } from "./verify-engine.ts";
import { benchVerifyHttp } from "./verify-http.ts";

const started = performance.now();
await benchVerifyEngine();
await benchVerifyHttp();
console.log(`\nbench finished in ${((performance.now() - started) / 1000).toFixed(1)} s; peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
