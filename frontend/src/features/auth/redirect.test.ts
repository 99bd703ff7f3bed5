import { describe, expect, it } from "vitest";

import { ApiError } from "../../api/client";
import { isAuthRequired, safeNext, signInPath } from "./redirect";

describe("signInPath", () => {
  it("carries the page, its query and hash as ?next=", () => {
    expect(signInPath({ pathname: "/compare", search: "?runs=1,2", hash: "" })).toBe("/sign-in?next=%2Fcompare%3Fruns%3D1%2C2");
  });

  it("needs no ?next= for the runs list or a public page", () => {
    expect(signInPath({ pathname: "/" })).toBe("/sign-in");
    expect(signInPath({ pathname: "/sign-in", search: "?next=%2Fx" })).toBe("/sign-in");
  });
});

describe("safeNext", () => {
  it("keeps a path on this site", () => {
    expect(safeNext("/runs/7?x=tokens")).toBe("/runs/7?x=tokens");
  });

  it("refuses other origins and protocol-relative URLs", () => {
    expect(safeNext("https://evil.example/")).toBe("/");
    expect(safeNext("//evil.example/runs")).toBe("/");
    expect(safeNext("/\\evil.example")).toBe("/");
    expect(safeNext(null)).toBe("/");
  });

  it("does not return to a sign-in or shared page", () => {
    expect(safeNext("/sign-in?next=/")).toBe("/");
    expect(safeNext("/s/abc")).toBe("/");
  });
});

describe("isAuthRequired", () => {
  it("is true only for a missing session", () => {
    expect(isAuthRequired(new ApiError(401, "AUTH_REQUIRED", "sign in", null))).toBe(true);
    expect(isAuthRequired(new ApiError(401, "INVALID_CREDENTIALS", "email or password is incorrect", null))).toBe(false);
    expect(isAuthRequired(new ApiError(403, "FORBIDDEN", "no", null))).toBe(false);
    expect(isAuthRequired(new Error("network"))).toBe(false);
  });
});
