// Uploaded lists are parsed on worker threads, not on the thread that answers HTTP. Parsing is
// CPU work on untrusted bytes: a 5 MB csv is ~300 ms of synchronous work, a row of a million
// empty cells ~450 ms, and three such uploads at once held /healthz for ~1 s. On a
// worker the event loop stays free, and each parse gets hard limits the in-process budgets
// cannot give: a heap cap (the worker dies with ERR_WORKER_OUT_OF_MEMORY, not the server) and a
// wall-time cap (the worker is terminated). Both answer as a refused file, like every other
// limit. piscina keeps the pool: a queue, resource limits, and a new thread after a death.
import { Piscina } from "piscina";
import { fileProblem } from "./problems.ts";
import type { PackListResult } from "./pack-list.ts";
import type { ParseListInput } from "./parse-list-file.ts";

/**
 * A thread is a fresh module graph: compiled (dist/, this module is .js) it loads the compiled
 * task; from the sources it needs a TypeScript loader first (parse-worker.mjs).
 */
const THREAD_ENTRY = import.meta.url.endsWith(".ts") ? "./parse-worker.mjs" : "./parse-thread.js";

export interface ListParserOptions {
  /** Threads parsing at once; further uploads wait in the queue. */
  threads: number;
  /** Heap cap of one parsing thread (V8 old generation), MB. */
  maxMemoryMb: number;
  /** Wall-time cap of one parse, waiting for a free thread included, ms. */
  timeoutMs: number;
}

export interface ListParser {
  /** Parses and packs a list (pack-list.ts) on a thread. Refusals are values, as in parseListFile. */
  parse(input: ParseListInput): Promise<PackListResult>;
  close(): Promise<void>;
}

export function createListParserPool(
  options: ListParserOptions,
  onThreadError: (error: unknown) => void = () => {},
): ListParser {
  const pool = new Piscina<ParseListInput, PackListResult>({
    filename: new URL(THREAD_ENTRY, import.meta.url).href,
    minThreads: 0,
    maxThreads: options.threads,
    // A thread that served an upload stays a little (warm modules for the next of a burst), then
    // ends and gives back its heap: up to UPLOAD_PARSE_MEMORY_MB, held for nothing while idle
    // (a parse thread kept 60 s after a burst of uploads added ~230 MB to what came next).
    idleTimeout: 5_000,
    resourceLimits: { maxOldGenerationSizeMb: options.maxMemoryMb, maxYoungGenerationSizeMb: 32 },
  });
  // An idle thread's failure is emitted on the pool; unheard, it would end the process.
  pool.on("error", onThreadError);
  return {
    async parse(input) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), options.timeoutMs);
      try {
        return await pool.run(input, { signal: controller.signal });
      } catch (error) {
        if (controller.signal.aborted) {
          return refused(
            `The file took longer than ${duration(options.timeoutMs)} to read; split it into smaller files.`,
          );
        }
        if ((error as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY") {
          return refused(
            `Reading the file needs more than ${options.maxMemoryMb} MB of memory; split it into smaller files or save it without formatting.`,
          );
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await pool.destroy();
    },
  };
}

const duration = (ms: number): string => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

const refused = (message: string): PackListResult => ({
  ok: false,
  problem: fileProblem("too_complex", message),
});
