// `npm run lint`: TypeScript, React hooks and accessibility (jsx-a11y) rules, and the frontend's boundaries (README "Frontend code"):
// a feature reaches another only through its public index.ts, no import cycles, the API only through the client.
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

import js from "@eslint/js";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import jsxA11y from "eslint-plugin-jsx-a11y";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

import featureCycles from "./lint/featureCycles.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const featuresDir = fileURLToPath(new URL("./src/features", import.meta.url));

// Read from the tree so that a new feature is bounded from its first file, without editing this list.
const features = readdirSync(featuresDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const featureBoundaries = features.flatMap((target) =>
  features
    .filter((from) => from !== target)
    .map((from) => ({
      target: `./src/features/${target}`,
      from: `./src/features/${from}`,
      except: ["./index.ts"],
      message: `import it from features/${from}/index.ts (its public API), exporting it there if needed`,
    })),
);

// The layers under the features (api/, lib/, components/) know no feature and no page; a feature knows no page.
const layerBoundaries = [
  ...["api", "lib", "components"].map((layer) => ({
    target: `./src/${layer}`,
    from: ["./src/features", "./src/routes"],
    message: `src/${layer} sits below the features and pages: pass what it needs in (props, arguments) instead`,
  })),
  { target: "./src/features", from: "./src/routes", message: "pages compose features, not the other way round" },
];

const networkOutsideClient = "call the API through the generated client (src/api/client.ts: api.GET/POST …) instead";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "src/client/**"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  // What a screen reader and a keyboard need: labels on inputs, roles that exist, no click handler without a key one.
  { files: ["**/*.tsx"], ...jsxA11y.flatConfigs.recommended },
  {
    files: ["**/*.tsx"],
    rules: {
      // `role` on the app's own components is the member's project role (viewer, editor), not an ARIA role.
      "jsx-a11y/aria-role": ["error", { ignoreNonDOM: true }],
      // Focus goes to the first field of a page or dialog the user has just opened (sign-in, a new project, the
      // project switcher), as the WAI-ARIA dialog pattern asks; never on a page that opens on its own.
      "jsx-a11y/no-autofocus": "off",
    },
  },
  {
    files: ["**/*.{ts,tsx}"],
    languageOptions: { globals: globals.browser },
    // Only the two classic hooks rules: the plugin's React Compiler rules (refs, set-state-in-effect, purity …) judge
    // code for a compiler this app does not use, and flag its deliberate latest-value refs.
    plugins: { "import-x": importX, "react-hooks": reactHooks, tunelab: featureCycles },
    settings: {
      // The node resolver with TypeScript's extensions: the sources import without extensions, and ../client/schema
      // is a .d.ts.
      "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".tsx", ".d.ts", ".js", ".json"] })],
    },
    rules: {
      "import-x/no-restricted-paths": ["error", { basePath: root, zones: [...featureBoundaries, ...layerBoundaries] }],
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
      "tunelab/no-feature-cycle": ["error", { featuresDir }],
      "no-restricted-globals": [
        "error",
        { name: "fetch", message: networkOutsideClient },
        { name: "XMLHttpRequest", message: networkOutsideClient },
      ],
      "no-restricted-properties": [
        "error",
        { object: "window", property: "fetch", message: networkOutsideClient },
        { object: "globalThis", property: "fetch", message: networkOutsideClient },
        { object: "self", property: "fetch", message: networkOutsideClient },
        { object: "window", property: "XMLHttpRequest", message: networkOutsideClient },
        { object: "globalThis", property: "XMLHttpRequest", message: networkOutsideClient },
      ],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "react-hooks/rules-of-hooks": "error",
      // An effect that leaves out a dependency on purpose says why, beside an eslint-disable-next-line.
      "react-hooks/exhaustive-deps": "error",
    },
  },
  {
    // Components and pages reach the API through their feature's hooks and queryOptions (features/<x>/api/), where
    // the cache keys and invalidations live; a component with its own api.POST beside a hook bypasses them.
    files: ["src/features/*/components/**", "src/features/*/*.tsx", "src/routes/**", "src/components/**", "src/App.tsx"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^|/)api/client$",
              importNames: ["api"],
              message: "call the API through the feature's hooks or queryOptions (features/<x>/api/), not api.GET/POST here",
            },
          ],
        },
      ],
    },
  },
  {
    // The one module that talks to the network (openapi-fetch calls fetch inside it), and the component tests' fake
    // network under it.
    files: ["src/api/client.ts", "src/test/**"],
    rules: { "no-restricted-globals": "off", "no-restricted-properties": "off" },
  },
  {
    files: ["*.config.{js,ts}"],
    languageOptions: { globals: globals.node },
  },
);
