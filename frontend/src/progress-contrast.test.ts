// The progress bar's label lies over both its fill and its empty track: it must read at WCAG AA (4.5:1) on each.
import { describe, expect, it } from "vitest";

import styles from "./styles.css?raw";

/** The value of `property` in the first rule whose selector is exactly `selector`, with var(--x) resolved from :root. */
function declared(selector: string, property: string): string {
  const rule = new RegExp(`(?:^|\\n)${selector.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*\\{([^}]*)\\}`).exec(styles);
  if (!rule) throw new Error(`no rule for ${selector}`);
  const value = new RegExp(`(?:^|;)\\s*${property}\\s*:\\s*([^;]+)`).exec(rule[1])?.[1].trim();
  if (!value) throw new Error(`${selector} sets no ${property}`);
  const variable = /^var\((--[\w-]+)\)$/.exec(value);
  return variable ? declared(":root", variable[1]) : value;
}

function relativeLuminance(hex: string): number {
  const digits = hex.replace("#", "");
  const full = digits.length === 3 ? [...digits].map((d) => d + d).join("") : digits;
  const [r, g, b] = [0, 2, 4].map((i) => {
    const channel = parseInt(full.slice(i, i + 2), 16) / 255;
    return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrastRatio(a: string, b: string): number {
  const [light, dark] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

describe("contrast ratio", () => {
  it("matches WCAG's reference values", () => {
    expect(contrastRatio("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrastRatio("#777777", "#ffffff")).toBeCloseTo(4.48, 2);
    expect(contrastRatio("#fff", "#fff")).toBe(1);
  });
});

describe("progress bar label", () => {
  const label = declared(".progress-label", "color");

  it("reads at 4.5:1 on the filled part", () => {
    expect(contrastRatio(label, declared(".progress-fill", "background"))).toBeGreaterThanOrEqual(4.5);
  });

  it("reads at 4.5:1 on the empty track", () => {
    expect(contrastRatio(label, declared(".progress", "background"))).toBeGreaterThanOrEqual(4.5);
  });
});
