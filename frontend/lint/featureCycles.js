// ESLint rule tunelab/no-feature-cycle: features/<a> may import features/<b> only if b does not, through any chain of
// features, import a. import-x/no-cycle sees modules, and two features can depend on each other through different
// modules (auth's session on a projects helper, a projects card on the session) without a module cycle.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const SOURCE = /\.(ts|tsx)$/;
// import … from "x", export … from "x", import "x", import("x").
const SPECIFIERS = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;

/** The feature a path lies in (its first folder under featuresDir); null outside features. */
export function featureOf(file, featuresDir) {
  const relative = path.relative(featuresDir, file);
  if (!relative || relative.startsWith("..") || path.isAbsolute(relative)) return null;
  const [first, ...rest] = relative.split(path.sep);
  return rest.length > 0 ? first : null;
}

/** The feature another feature's module imports, or null when `specifier` stays in `from` or leaves features. */
function importedFeature(file, specifier, featuresDir) {
  if (!specifier.startsWith(".")) return null;
  // "../runs" names the folder: give it a child so that featureOf sees a path inside it.
  return featureOf(path.join(path.resolve(path.dirname(file), specifier), "_"), featuresDir);
}

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(full);
    else if (SOURCE.test(entry.name)) yield full;
  }
}

/** feature → the features its files import, each with one file that does (for the message). */
export function featureGraph(featuresDir) {
  const graph = new Map();
  for (const file of sourceFiles(featuresDir)) {
    const from = featureOf(file, featuresDir);
    if (!graph.has(from)) graph.set(from, new Map());
    for (const match of readFileSync(file, "utf8").matchAll(SPECIFIERS)) {
      const to = importedFeature(file, match[1], featuresDir);
      if (to && to !== from && !graph.get(from).has(to)) graph.get(from).set(to, path.relative(featuresDir, file));
    }
  }
  return graph;
}

/** The chain of features from `start` to `goal` (both included), or null when there is none. */
export function featurePath(graph, start, goal) {
  const seen = new Set([start]);
  const queue = [[start]];
  while (queue.length > 0) {
    const chain = queue.shift();
    const last = chain[chain.length - 1];
    if (last === goal) return chain;
    for (const next of graph.get(last)?.keys() ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push([...chain, next]);
      }
    }
  }
  return null;
}

// One graph per lint run (ESLint lints every file in one process); keyed by folder for tests that point elsewhere.
const graphs = new Map();

export const noFeatureCycle = {
  meta: {
    type: "problem",
    docs: { description: "no dependency cycle between features (folders under src/features)" },
    schema: [{ type: "object", properties: { featuresDir: { type: "string" } }, required: ["featuresDir"], additionalProperties: false }],
    messages: {
      cycle: "features/{{from}} imports features/{{to}}, which already depends on features/{{from}} ({{chain}}): move what both need to one of them or below them (api/, lib/, components/)",
    },
  },
  create(context) {
    const { featuresDir } = context.options[0];
    const file = context.filename;
    const from = featureOf(file, featuresDir);
    if (!from) return {};
    if (!graphs.has(featuresDir)) graphs.set(featuresDir, featureGraph(featuresDir));
    const graph = graphs.get(featuresDir);

    function check(node) {
      if (!node.source || typeof node.source.value !== "string") return;
      const to = importedFeature(file, node.source.value, featuresDir);
      if (!to || to === from) return;
      const back = featurePath(graph, to, from);
      if (!back) return;
      const chain = [from, ...back]
        .map((feature, i, all) => (i < all.length - 1 && i > 0 ? `${feature} (${graph.get(feature).get(all[i + 1])})` : feature))
        .join(" → ");
      context.report({ node: node.source, messageId: "cycle", data: { from, to, chain } });
    }

    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { "no-feature-cycle": noFeatureCycle } };
