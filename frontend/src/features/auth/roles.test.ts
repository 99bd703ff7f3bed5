import { describe, expect, it } from "vitest";

import { canEdit, canOwn, roleAllows } from "./roles";

describe("roles", () => {
  it("lets editors and owners change things, not viewers or non-members", () => {
    expect(canEdit("viewer")).toBe(false);
    expect(canEdit("editor")).toBe(true);
    expect(canEdit("owner")).toBe(true);
    expect(canEdit(null)).toBe(false);
    expect(canEdit(undefined)).toBe(false);
  });

  it("keeps project management to owners", () => {
    expect(canOwn("editor")).toBe(false);
    expect(canOwn("owner")).toBe(true);
  });

  it("orders the roles", () => {
    expect(roleAllows("owner", "viewer")).toBe(true);
    expect(roleAllows("viewer", "owner")).toBe(false);
    expect(roleAllows("editor", "editor")).toBe(true);
  });
});
