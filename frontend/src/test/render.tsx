// Rendering a component as the app does: its own QueryClient (no retries), a router at a given URL, and a signed-in
// session (SessionProvider with a MePublic) when the component needs one. Requests go to the test's fake network
// (network.ts).
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactElement, ReactNode } from "react";
import { MemoryRouter, Route, Routes } from "react-router";

import { SessionProvider, type Me } from "../features/auth/session";

export function testQueryClient(): QueryClient {
  return new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
}

export type RenderOptions = {
  /** The URL the router starts at. */
  at?: string;
  /** The route pattern `ui` is mounted on (e.g. "/runs/new"); other routes go in `routes`. */
  path?: string;
  /** More routes, e.g. where a successful form navigates to. */
  routes?: ReactNode;
  /** A signed-in user with their projects (useSession); none: no session. */
  me?: Me;
  queryClient?: QueryClient;
};

export function renderInApp(ui: ReactElement, { at = "/", path = "*", routes, me, queryClient = testQueryClient() }: RenderOptions = {}) {
  const page = me ? <SessionProvider me={me}>{ui}</SessionProvider> : ui;
  const result = render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter initialEntries={[at]}>
        <Routes>
          <Route path={path} element={page} />
          {routes}
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return { ...result, queryClient };
}
