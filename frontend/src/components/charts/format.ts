/** Axis and colour helpers shared by the charts. */
import { formatCount, formatNumber } from "../../lib/format";
import type { XAxisKind } from "../../lib/series";

export const X_AXIS_LABELS: Record<XAxisKind, string> = {
  step: "Step",
  time: "Relative time",
  tokens: "Tokens seen",
};

/** Short relative time for axis ticks: 45s, 12m30s, 3h05m. */
export function formatShortDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "";
  const sign = seconds < 0 ? "-" : "";
  const s = Math.abs(seconds);
  if (s < 60) return `${sign}${Number(s.toFixed(s < 10 ? 1 : 0))}s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) {
    const rest = Math.round(s % 60);
    return `${sign}${minutes}m${rest ? `${String(rest).padStart(2, "0")}s` : ""}`;
  }
  return `${sign}${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

export function formatAxisX(value: number | null | undefined, kind: XAxisKind): string {
  if (value === null || value === undefined) return "—";
  if (kind === "time") return formatShortDuration(value);
  if (kind === "tokens") return formatCount(Math.round(value));
  return Number.isInteger(value) ? String(value) : formatNumber(value, 4);
}

/** Compact y tick labels: 0.004, 5.75, 1e-4, 2.5e5; empty for the ticks uPlot leaves unlabelled (log scales). */
export function formatAxisY(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "";
  const abs = Math.abs(value);
  if (value !== 0 && (abs >= 1e5 || abs < 1e-3)) {
    const [mantissa, exponent] = value.toExponential(Math.max(1, digits - 2)).split("e");
    return `${mantissa.replace(/\.?0+$/, "")}e${Number(exponent)}`;
  }
  return formatNumber(value, digits);
}

/**
 * A y axis' tick labels, each as short as formatAxisY makes it, but with as many significant digits as the ticks
 * need to read apart: a narrow range (a loss between 6.255 and 6.262) labelled "6.26, 6.26, 6.25" told nothing.
 */
export function formatAxisYTicks(splits: readonly (number | null | undefined)[]): string[] {
  for (let digits = 3; digits < 10; digits++) {
    const labels = splits.map((v) => formatAxisY(v, digits));
    const distinct = labels.every((label, i) => {
      if (i === 0 || label === "" || labels[i - 1] === "") return true;
      return label !== labels[i - 1] || splits[i] === splits[i - 1];
    });
    if (distinct) return labels;
  }
  return splits.map((v) => formatAxisY(v, 10));
}

/** The colour with an alpha: for hsl()/rgb() strings in CSS colour level 4 form and #rrggbb. */
export function withAlpha(color: string, alpha: number): string {
  if (color.startsWith("#") && color.length === 7) {
    return `${color}${Math.round(alpha * 255).toString(16).padStart(2, "0")}`;
  }
  const match = /^(hsl|rgb)\((.*)\)$/.exec(color);
  if (match && !match[2].includes("/")) return `${match[1]}(${match[2]} / ${alpha})`;
  return color;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** Tick spacings of a byte axis: 1, 2, 5 … 500 of each binary unit, so that ticks fall on round MiB or GiB. */
export const BYTE_TICK_INCREMENTS: number[] = BYTE_UNITS.flatMap((_, unit) =>
  [1, 2, 5, 10, 20, 50, 100, 200, 500].map((m) => m * 1024 ** unit),
);

/**
 * Tick labels of a byte axis in one unit (the largest tick's) with as many decimals as the spacing of the ticks
 * needs to tell them apart: "546.5 MiB", "546.7 MiB" where plain numbers read 5.7e8 on every tick.
 */
export function formatByteTicks(splits: readonly (number | null | undefined)[]): string[] {
  const values = splits.filter((v): v is number => v !== null && v !== undefined && Number.isFinite(v));
  const largest = Math.max(0, ...values.map(Math.abs));
  let unit = 0;
  while (unit < BYTE_UNITS.length - 1 && largest >= 1024 ** (unit + 1)) unit += 1;
  const scale = 1024 ** unit;
  const sorted = [...values].sort((a, b) => a - b);
  let spacing = Infinity;
  for (let i = 1; i < sorted.length; i++) if (sorted[i] > sorted[i - 1]) spacing = Math.min(spacing, sorted[i] - sorted[i - 1]);
  const decimals = unit === 0 || !Number.isFinite(spacing) ? 0 : Math.min(3, Math.max(0, Math.ceil(-Math.log10(spacing / scale))));
  return splits.map((v) =>
    v === null || v === undefined || !Number.isFinite(v) ? "" : `${(v / scale).toFixed(decimals)} ${BYTE_UNITS[unit]}`,
  );
}
