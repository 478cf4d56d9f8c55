// What an API key is for. Its own module, free of runtime imports, so the CLI's command tree
// (src/cli/main.ts) can list the purposes in --help without loading the key service.
import type { ApiKeyPurpose } from "../db/queries/api-keys.ts";

export type { ApiKeyPurpose };

export const API_KEY_PURPOSES: readonly ApiKeyPurpose[] = ["zapier", "n8n", "google sheets", "custom"];
