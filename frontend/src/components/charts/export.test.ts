import { describe, expect, it } from "vitest";

import { chartCsv, exportFilename } from "./export";

describe("chart CSV", () => {
  it("has the x column, one column per series and a row per x, with the raw values and gaps left empty", () => {
    const csv = chartCsv("step", [1, 2, 3], [
      { label: "lora-a", values: [2.5, null, 1.195] },
      { label: "lora-b", values: [2.25, 2.0, 0.000123456789] },
    ]);
    expect(csv.split("\r\n")).toEqual(["step,lora-a,lora-b", "1,2.5,2.25", "2,,2", "3,1.195,0.000123456789", ""]);
  });

  it("names the x column by its unit and quotes a label with a comma or a quote", () => {
    const csv = chartCsv("time", [0.5], [{ label: 'run "7", lora', values: [1] }]);
    expect(csv.split("\r\n")[0]).toBe('relative_time_s,"run ""7"", lora"');
    expect(chartCsv("tokens", [], []).split("\r\n")[0]).toBe("tokens_seen");
  });

  it("names the file after the metric key", () => {
    expect(exportFilename("train/loss", "csv")).toBe("train-loss.csv");
    expect(exportFilename("system/rss_bytes", "png")).toBe("system-rss_bytes.png");
  });
});
