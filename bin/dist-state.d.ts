// Types of dist-state.js for the TypeScript that imports it (the compiled-runtime test).
export declare const ROOT: string;
export declare const STAMP_FILE: string;
export declare function distState(root?: string): "fresh" | "stale" | "missing";
