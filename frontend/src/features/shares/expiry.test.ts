import { describe, expect, it } from "vitest";

import { localDateString, resolveExpiry } from "./expiry";

const now = new Date("2025-03-10T12:00:00Z");

describe("resolveExpiry", () => {
  it("never expires when asked", () => {
    expect(resolveExpiry("never", "", now)).toEqual({ expiresAt: null });
  });

  it("adds whole days to now", () => {
    expect(resolveExpiry("1d", "", now)).toEqual({ expiresAt: "2025-03-11T12:00:00.000Z" });
    expect(resolveExpiry("7d", "", now)).toEqual({ expiresAt: "2025-03-17T12:00:00.000Z" });
    expect(resolveExpiry("30d", "", now)).toEqual({ expiresAt: "2025-04-09T12:00:00.000Z" });
  });

  it("keeps a chosen date working until that day ends, in local time", () => {
    const { expiresAt } = resolveExpiry("custom", "2025-03-14", now);
    expect(expiresAt).toBe(new Date(2025, 2, 15).toISOString());
  });

  it("refuses a missing or past date", () => {
    expect(resolveExpiry("custom", "", now).error).toBeTruthy();
    expect(resolveExpiry("custom", "2025-03-01", now).error).toBeTruthy();
  });
});

describe("localDateString", () => {
  it("formats the local calendar day", () => {
    expect(localDateString(new Date(2025, 0, 5, 23, 30))).toBe("2025-01-05");
  });
});
