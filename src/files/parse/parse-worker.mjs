// Entry of the list-parsing worker threads when the server runs from the TypeScript sources
// (tests, a checkout without a fresh dist/): plain JS so that Node loads it without a loader; it
// registers tsx for the parser's sources, which Node's own type stripping cannot read (parameter
// properties). bin/mailprobe.js registers tsx in the main thread only. Under `node --import tsx`
// (the tests) the loader is inherited and this second registration is a no-op in effect: the
// first hook to see a .ts file compiles it. The compiled runtime loads dist/.../parse-thread.js
// instead (parse-pool.ts), so tsx stays a dev dependency.
import { register } from "tsx/esm/api";

register();
const { default: parse } = await import("./parse-thread.ts");

export default parse;
