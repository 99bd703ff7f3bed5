import { describe, expect, it } from "vitest";

import { formatAxisX, formatAxisY, formatAxisYTicks, formatByteTicks, formatShortDuration, withAlpha } from "./format";

describe("chart formats", () => {
  it("labels y ticks compactly and leaves unlabelled log ticks empty", () => {
    expect(formatAxisY(0.004)).toBe("0.004");
    expect(formatAxisY(1e-4)).toBe("1e-4");
    expect(formatAxisY(250000)).toBe("2.5e5");
    expect(formatAxisY(null)).toBe("");
  });
  it("labels x ticks per axis", () => {
    expect(formatAxisX(120, "step")).toBe("120");
    expect(formatAxisX(95, "time")).toBe("1m35s");
    expect(formatAxisX(1_500_000, "tokens")).toBe("1.50M");
    expect(formatShortDuration(7200)).toBe("2h00m");
  });
  it("adds an alpha to hsl and hex colours", () => {
    expect(withAlpha("hsl(10 65% 42%)", 0.3)).toBe("hsl(10 65% 42% / 0.3)");
    expect(withAlpha("#2f6fdf", 0.5)).toBe("#2f6fdf80");
  });
});

describe("byte axis", () => {
  it("labels ticks in the largest tick's unit, with the decimals that keep close ticks apart", () => {
    const mib = 2 ** 20;
    const labels = formatByteTicks([546.4 * mib, 546.6 * mib, 546.8 * mib, null]);
    expect(labels).toEqual(["546.4 MiB", "546.6 MiB", "546.8 MiB", ""]);
    expect(new Set(formatByteTicks([573_000_000, 573_200_000, 573_400_000])).size).toBe(3);
    expect(formatByteTicks([0, 2 * 2 ** 30, 4 * 2 ** 30])).toEqual(["0 GiB", "2 GiB", "4 GiB"]);
    expect(formatByteTicks([0, 512])).toEqual(["0 B", "512 B"]);
  });
});

describe("formatAxisYTicks", () => {
  it("gives narrow-range ticks the digits they need to differ, and keeps wide ones short", () => {
    expect(formatAxisYTicks([6.255, 6.2575, 6.26, 6.2625])).toEqual(["6.255", "6.258", "6.26", "6.263"]);
    expect(formatAxisYTicks([6.26, 6.265, 6.27])).toEqual(["6.26", "6.265", "6.27"]);
    expect(formatAxisYTicks([0, 2.5, 5, 7.5])).toEqual(["0", "2.5", "5", "7.5"]);
    expect(formatAxisYTicks([1.00001, 1.00002, null])).toEqual(["1.00001", "1.00002", ""]);
    expect(formatAxisYTicks([2.5e5, 2.51e5])).toEqual(["2.5e5", "2.51e5"]);
  });
});
