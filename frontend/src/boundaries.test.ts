// The lint rules that keep the frontend's shape (eslint.config.js): each is shown to refuse what it is for, on code
// linted as if it were a file at the given path, and to let the allowed form through.
import { ESLint } from "eslint";
import { beforeAll, describe, expect, it } from "vitest";

const frontendDir = decodeURIComponent(new URL("..", import.meta.url).pathname);
let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({ cwd: frontendDir });
}, 60_000);

/** The rule ids ESLint reports for `code` as the file `path` (relative to frontend/). */
async function ruleIds(path: string, code: string): Promise<(string | null)[]> {
  const [result] = await eslint.lintText(code, { filePath: `${frontendDir}${path}` });
  return result.messages.map((m) => m.ruleId);
}

// The first lint loads the parser and reads the features: seconds on a busy machine.
describe("frontend lint boundaries", { timeout: 60_000 }, () => {
  it("lets a feature import another only through its index.ts", async () => {
    const deep = `import { useSession } from "../auth/session";\nexport const s = useSession;\n`;
    const pub = `import { useSession } from "../auth";\nexport const s = useSession;\n`;
    expect(await ruleIds("src/features/users/probe.ts", deep)).toContain("import-x/no-restricted-paths");
    expect(await ruleIds("src/features/users/probe.ts", pub)).toEqual([]);
    // Pages compose features and may reach their internals.
    const fromRoute = `import { useSession } from "../features/auth/session";\nexport const s = useSession;\n`;
    expect(await ruleIds("src/routes/Probe.tsx", fromRoute)).toEqual([]);
  });

  it("keeps api/, lib/ and components/ below the features, and features below the pages", async () => {
    const feature = `import { useSession } from "../../features/auth";\nexport const s = useSession;\n`;
    expect(await ruleIds("src/components/ui/Probe.tsx", feature)).toContain("import-x/no-restricted-paths");
    const page = `import { RunPage } from "../../routes/RunPage";\nexport const p = RunPage;\n`;
    expect(await ruleIds("src/features/runs/Probe.tsx", page)).toContain("import-x/no-restricted-paths");
  });

  it("refuses an import that closes a cycle between features", async () => {
    // launch already imports runs (useCreateRun), so runs importing launch would make launch ↔ runs.
    const code = `import { LaunchForm } from "../launch/LaunchForm";\nexport const f = LaunchForm;\n`;
    expect(await ruleIds("src/features/runs/probe.ts", code)).toContain("tunelab/no-feature-cycle");
    const noCycle = `import { runKeys } from "../runs";\nexport const k = runKeys;\n`;
    expect(await ruleIds("src/features/launch/probe.ts", noCycle)).toEqual([]);
  });

  it("keeps fetch and XMLHttpRequest inside the generated client", async () => {
    const code = `export const a = () => fetch("/api/v1/runs");\nexport const b = () => window.fetch("/x");\nexport const c = new XMLHttpRequest();\n`;
    expect(await ruleIds("src/features/runs/probe.ts", code)).toEqual([
      "no-restricted-globals",
      "no-restricted-properties",
      "no-restricted-globals",
    ]);
    expect(await ruleIds("src/api/client.ts", `export const a = () => fetch("/api/v1/runs");\n`)).toEqual([]);
  });

  it("keeps components on their feature's hooks, not the client's api object", async () => {
    const direct = `import { api } from "../../../api/client";\nexport const cancel = (id: number) => api.POST("/api/v1/runs/{run_id}/cancel", { params: { path: { run_id: id } } });\n`;
    expect(await ruleIds("src/features/run/components/Probe.tsx", direct)).toContain("no-restricted-imports");
    // The feature's api/ modules are where the client is called; types from the client are fine anywhere.
    expect(await ruleIds("src/features/run/api/probe.ts", direct)).toEqual([]);
    const types = `import type { Run } from "../../../api/client";\nexport type R = Run;\n`;
    expect(await ruleIds("src/features/run/components/Probe.tsx", types)).toEqual([]);
  });

  it("checks the rules of hooks", async () => {
    const code = `import { useState } from "react";\nexport function Box({ on }: { on: boolean }) {\n  if (on) useState(0);\n  return null;\n}\n`;
    expect(await ruleIds("src/features/runs/Probe.tsx", code)).toContain("react-hooks/rules-of-hooks");
  });

  it("checks what a screen reader and a keyboard need (jsx-a11y)", async () => {
    const clickOnly = `export function Row({ open }: { open: () => void }) {\n  return <div onClick={open}>run 5</div>;\n}\n`;
    expect(await ruleIds("src/features/runs/Probe.tsx", clickOnly)).toEqual(
      expect.arrayContaining(["jsx-a11y/click-events-have-key-events", "jsx-a11y/no-static-element-interactions"]),
    );
    const button = `export function Row({ open }: { open: () => void }) {\n  return <button type="button" onClick={open}>run 5</button>;\n}\n`;
    expect(await ruleIds("src/features/runs/Probe.tsx", button)).toEqual([]);
    // The app's own components take a project role, not an ARIA one.
    const projectRole = `import { RunActions } from "../run";\nexport const a = <RunActions run={null as never} role="viewer" />;\n`;
    expect(await ruleIds("src/features/runs/Probe.tsx", projectRole)).not.toContain("jsx-a11y/aria-role");
  });
});
