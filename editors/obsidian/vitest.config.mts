// Tests run in Node; `obsidian` resolves to the typed fake in test/fake-obsidian.ts (the app
// itself cannot be downloaded here). Tests of the modals run in happy-dom (a docblock says
// so); the rest, the HTTP and process ones among them, in plain Node.
import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: { obsidian: fileURLToPath(new URL("./test/fake-obsidian.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
