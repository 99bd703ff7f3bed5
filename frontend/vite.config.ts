import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `npm run dev` proxies the API to a running `tunelab api`; the built app is served by FastAPI itself.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": "http://127.0.0.1:8000" } },
  build: { outDir: "dist", sourcemap: true },
  test: {
    // css.include: the stylesheet reaches tests as text (progress-contrast.test.ts checks its colours).
    css: { include: [/styles\.css/] },
    // Pure functions (*.test.ts) run in Node; components (*.test.tsx) render into jsdom with Testing Library.
    projects: [
      { extends: true, test: { name: "unit", environment: "node", include: ["src/**/*.test.ts"] } },
      {
        extends: true,
        test: {
          name: "components",
          environment: "jsdom",
          include: ["src/**/*.test.tsx"],
          setupFiles: ["src/test/setup.ts"],
          // A render with typing takes about a second; on a busy 2-core machine many times that.
          testTimeout: 30_000,
        },
      },
    ],
  },
});
