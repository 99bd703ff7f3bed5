// Set-up for the component tests (*.test.tsx, jsdom): DOM matchers, and an unmounted tree after each test.
import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => {
  cleanup();
});
