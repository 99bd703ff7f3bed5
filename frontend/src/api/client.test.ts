import type { MiddlewareCallbackParams } from "openapi-fetch";
import { afterEach, describe, expect, it } from "vitest";

import {
  ApiError,
  authHeaders,
  createAuthMiddleware,
  onShareFailure,
  readCookie,
  shareFailureCode,
  shouldRetry,
  withShareParam,
} from "./client";

const COOKIES = "theme=dark; tunelab_csrf=abc%3D123; other=1";

async function send(method: string, cookies: string, shareToken: string | null): Promise<Request> {
  const middleware = createAuthMiddleware(() => cookies, () => shareToken);
  const request = new Request("http://tunelab.test/api/v1/runs", { method });
  const result = await middleware.onRequest!({ request } as MiddlewareCallbackParams);
  return result as Request;
}

describe("readCookie", () => {
  it("finds one cookie among several and decodes it", () => {
    expect(readCookie(COOKIES, "tunelab_csrf")).toBe("abc=123");
    expect(readCookie(COOKIES, "csrf")).toBeNull();
    expect(readCookie("", "tunelab_csrf")).toBeNull();
  });
});

describe("authHeaders", () => {
  it("echoes the CSRF cookie on state changes only", () => {
    expect(authHeaders("POST", COOKIES, null)).toEqual({ "X-CSRF-Token": "abc=123" });
    expect(authHeaders("delete", COOKIES, null)).toEqual({ "X-CSRF-Token": "abc=123" });
    expect(authHeaders("GET", COOKIES, null)).toEqual({});
  });

  it("sends nothing when there is no CSRF cookie (not signed in)", () => {
    expect(authHeaders("POST", "theme=dark", null)).toEqual({});
  });

  it("adds the share token in shared mode", () => {
    expect(authHeaders("GET", "", "tok")).toEqual({ "X-Share-Token": "tok" });
  });
});

describe("the auth middleware", () => {
  it("sets the CSRF header on a POST made with the session cookie", async () => {
    const request = await send("POST", COOKIES, null);
    expect(request.headers.get("X-CSRF-Token")).toBe("abc=123");
    expect(request.headers.get("X-Share-Token")).toBeNull();
  });

  it("leaves reads alone, except for the share token", async () => {
    expect((await send("GET", COOKIES, null)).headers.get("X-CSRF-Token")).toBeNull();
    expect((await send("GET", COOKIES, "link-token")).headers.get("X-Share-Token")).toBe("link-token");
  });

  describe("in shared mode", () => {
    const stops: (() => void)[] = [];
    afterEach(() => stops.splice(0).forEach((stop) => stop()));

    async function respond(status: number, code: string, shareToken: string | null): Promise<string[]> {
      const seen: string[] = [];
      stops.push(onShareFailure((c) => seen.push(c)));
      const middleware = createAuthMiddleware(() => "", () => shareToken);
      const response = new Response(JSON.stringify({ error: { code, message: "m", details: null } }), { status });
      await middleware.onResponse!({ response } as MiddlewareCallbackParams & { response: Response });
      return seen;
    }

    it("reports a revoked, expired or unknown link", async () => {
      expect(await respond(410, "SHARE_REVOKED", "t")).toEqual(["SHARE_REVOKED"]);
      expect(await respond(404, "SHARE_NOT_FOUND", "t")).toEqual(["SHARE_NOT_FOUND"]);
    });

    it("does not mistake a missing run, or the signed-in app, for a dead link", async () => {
      expect(await respond(404, "RUN_NOT_FOUND", "t")).toEqual([]);
      expect(await respond(410, "SHARE_REVOKED", null)).toEqual([]);
    });
  });
});

describe("withShareParam", () => {
  it("adds ?share= for what cannot send a header", () => {
    expect(withShareParam("/api/v1/runs/3/events", "a b")).toBe("/api/v1/runs/3/events?share=a%20b");
    expect(withShareParam("/api/v1/runs/3/events?after=7", "tok")).toBe("/api/v1/runs/3/events?after=7&share=tok");
  });

  it("leaves the URL alone in the signed-in app", () => {
    expect(withShareParam("/api/v1/runs/3/events", null)).toBe("/api/v1/runs/3/events");
  });
});

describe("shareFailureCode", () => {
  it("knows the three ways a link can fail", () => {
    expect(shareFailureCode("SHARE_EXPIRED")).toBe("SHARE_EXPIRED");
    expect(shareFailureCode("FORBIDDEN")).toBeNull();
    expect(shareFailureCode(undefined)).toBeNull();
  });
});

describe("shouldRetry", () => {
  it("retries a server error once, never a client error", () => {
    expect(shouldRetry(0, new ApiError(503, "HTTP_ERROR", "busy", null))).toBe(true);
    expect(shouldRetry(1, new ApiError(503, "HTTP_ERROR", "busy", null))).toBe(false);
    expect(shouldRetry(0, new ApiError(401, "AUTH_REQUIRED", "sign in", null))).toBe(false);
    expect(shouldRetry(0, new TypeError("Failed to fetch"))).toBe(true);
  });
});
