import { describe, expect, it } from "vitest";

import { absoluteUrl } from "./url";

describe("absoluteUrl", () => {
  it("joins the page's origin and the API's path", () => {
    expect(absoluteUrl("https://tunelab.lab.example", "/s/abc123")).toBe("https://tunelab.lab.example/s/abc123");
    expect(absoluteUrl("http://127.0.0.1:8000/", "/invite/xyz")).toBe("http://127.0.0.1:8000/invite/xyz");
    expect(absoluteUrl("http://127.0.0.1:8000", "s/abc")).toBe("http://127.0.0.1:8000/s/abc");
  });
});
