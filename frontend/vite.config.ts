import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `npm run dev` proxies the API to a running `tunelab api`; the built app is served by FastAPI itself.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": "http://127.0.0.1:8000" } },
  build: { outDir: "dist", sourcemap: true },
  // css.include: the stylesheet reaches tests as text (progress-contrast.test.ts checks its colours).
  test: { environment: "node", include: ["src/**/*.test.ts"], css: { include: [/styles\.css/] } },
});
