// The current project in the URL: a pasted link opens the project it names, a project page's URL names it, and a link
// to a project the reader is not in says so instead of silently showing their own.
import { screen, waitFor } from "@testing-library/react";
import { useLocation } from "react-router";
import { afterEach, describe, expect, it } from "vitest";

import { renderInApp } from "../../test/render";
import { PROJECT_STORAGE_KEY } from "./currentProject";
import { useSession, type Me } from "./session";

const me = {
  user: { id: 1, email: "a@example.com", display_name: "A", is_admin: false, is_active: true, invite_pending: false, created_at: "2026-12-01T00:00:00Z", last_sign_in_at: null },
  projects: [
    { project_id: 1, project_name: "default", role: "editor" },
    { project_id: 7, project_name: "llm-evals", role: "viewer" },
  ],
} as unknown as Me;

function Probe() {
  const { projectId, unknownLinkedProject, setProjectId } = useSession();
  const location = useLocation();
  return (
    <>
      <output data-testid="project">{projectId}</output>
      <output data-testid="unknown">{unknownLinkedProject ?? "none"}</output>
      <output data-testid="url">{location.pathname + location.search}</output>
      <button type="button" onClick={() => setProjectId(1)}>
        switch
      </button>
    </>
  );
}

afterEach(() => localStorage.clear());

describe("the current project in the URL", () => {
  it("opens the project a pasted link names, over the one this browser remembers, and remembers it", async () => {
    localStorage.setItem(PROJECT_STORAGE_KEY, "1");
    renderInApp(<Probe />, { at: "/datasets?project=7", me });
    expect(screen.getByTestId("project").textContent).toBe("7");
    await waitFor(() => expect(localStorage.getItem(PROJECT_STORAGE_KEY)).toBe("7"));
  });

  it("writes the current project into the URL of a project page, and follows a switch", async () => {
    localStorage.setItem(PROJECT_STORAGE_KEY, "7");
    renderInApp(<Probe />, { at: "/?status=running", me });
    await waitFor(() => expect(screen.getByTestId("url").textContent).toBe("/?status=running&project=7"));
    screen.getByRole("button", { name: "switch" }).click();
    await waitFor(() => expect(screen.getByTestId("url").textContent).toBe("/?status=running&project=1"));
    expect(screen.getByTestId("project").textContent).toBe("1");
  });

  it("leaves a run page's URL and a clone's alone: their project is the run's", async () => {
    renderInApp(<Probe />, { at: "/runs/new?clone=12", me });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(screen.getByTestId("url").textContent).toBe("/runs/new?clone=12");
  });

  it("says when the link's project is not one of the reader's, and keeps the link as it was", async () => {
    localStorage.setItem(PROJECT_STORAGE_KEY, "7");
    renderInApp(<Probe />, { at: "/?project=99", me });
    expect(screen.getByTestId("unknown").textContent).toBe("99");
    expect(screen.getByTestId("project").textContent).toBe("7");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(screen.getByTestId("url").textContent).toBe("/?project=99");
  });
});
