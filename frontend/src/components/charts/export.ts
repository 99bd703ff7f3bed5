/** A chart's data as CSV and its picture as PNG, saved as downloads. */
import type { XAxisKind } from "../../lib/series";

/** The CSV header of each x axis: the unit is in the name, since a CSV cell carries none. */
export const CSV_X_HEADERS: Record<XAxisKind, string> = {
  step: "step",
  time: "relative_time_s",
  tokens: "tokens_seen",
};

export type CsvSeries = { label: string; values: readonly (number | null)[] };

function csvCell(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One row per x value: x, then each series' logged value there (empty where it has none), at full precision. */
export function chartCsv(xKind: XAxisKind, x: readonly number[], series: readonly CsvSeries[]): string {
  const lines = [[CSV_X_HEADERS[xKind], ...series.map((s) => s.label)].map(csvCell).join(",")];
  x.forEach((xValue, i) => {
    const cells = series.map((s) => {
      const v = s.values[i];
      return v === null || v === undefined ? "" : String(v);
    });
    lines.push([String(xValue), ...cells].join(","));
  });
  return `${lines.join("\r\n")}\r\n`;
}

/** A file name from a chart's metric key: "train/loss" → "train-loss.csv". */
export function exportFilename(chartKey: string, extension: "csv" | "png"): string {
  const stem = chartKey.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "chart";
  return `${stem}.${extension}`;
}

export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has taken its copy once the click's task is over.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

export type PngLegendEntry = { label: string; color: string; value: string };

/** The plot's canvas (axes included) under its title and above its legend, on white, as a PNG. */
export function chartPng(plotCanvas: HTMLCanvasElement, cssWidth: number, title: string,
                         legend: readonly PngLegendEntry[]): Promise<Blob> {
  const ratio = cssWidth > 0 ? plotCanvas.width / cssWidth : 1;
  const pad = 10 * ratio;
  const titleHeight = 28 * ratio;
  const legendLine = 18 * ratio;
  const canvas = document.createElement("canvas");
  canvas.width = plotCanvas.width;
  canvas.height = Math.ceil(titleHeight + plotCanvas.height + pad + legend.length * legendLine + pad);
  const ctx = canvas.getContext("2d");
  if (!ctx) return Promise.reject(new Error("this browser cannot draw on a canvas"));
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#1f2933";
  ctx.textBaseline = "middle";
  ctx.font = `600 ${14 * ratio}px system-ui`;
  ctx.fillText(title, pad, titleHeight / 2);
  ctx.drawImage(plotCanvas, 0, titleHeight);
  ctx.font = `${12 * ratio}px system-ui`;
  legend.forEach((entry, i) => {
    const y = titleHeight + plotCanvas.height + pad + (i + 0.5) * legendLine;
    ctx.fillStyle = entry.color;
    ctx.fillRect(pad, y - 5 * ratio, 10 * ratio, 10 * ratio);
    ctx.fillStyle = "#1f2933";
    ctx.fillText(`${entry.label}  ${entry.value}`, pad + 16 * ratio, y);
  });
  return new Promise((resolve, reject) => {
    canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("the chart could not be encoded as PNG"))), "image/png");
  });
}
