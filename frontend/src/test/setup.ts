// Set-up for the component tests (*.test.tsx, jsdom): DOM matchers, a fake network under the real API client, and an
// unmounted tree after each test.
import "@testing-library/jest-dom/vitest";
import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

import { fakeFetch, PageRequest, resetNetwork } from "./network";

// Before any test file imports src/api/client.ts, which takes fetch and Request from globalThis when it is created.
globalThis.Request = PageRequest;
globalThis.fetch = fakeFetch;

// findBy*/waitFor wait for what the page will show, not for a time: a busy machine only makes them slower.
configure({ asyncUtilTimeout: 10_000 });

afterEach(() => {
  cleanup();
  resetNetwork();
});
