// The run page's actions: shown by role, and done through the run mutations (useCancelRun, useResumeRun), which
// send the request and put the answer in the run's cache entry.
import { cleanup, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { Run } from "../../../api/client";
import { apiError, fakeNetwork, json } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { runKeys } from "../../runs";
import { RunActions } from "./RunActions";

const running = {
  id: 5, name: "lora-r8", project_id: 7, status: "running", external: false, cancel_requested: false,
  force_stop_requested: false, checkpoint_step: null, attempt: 1,
} as Run;

type Sent = { method: string; url: string };

function fakeCancel(answer: (url: URL) => Response): Sent[] {
  const sent: Sent[] = [];
  fakeNetwork((request) => {
    const url = new URL(request.url);
    sent.push({ method: request.method, url: `${url.pathname}${url.search}` });
    return answer(url);
  });
  return sent;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("RunActions", () => {
  it("shows a viewer no control that changes the run", () => {
    renderInApp(<RunActions run={running} role="viewer" />);
    expect(screen.queryByTestId("cancel-run")).not.toBeInTheDocument();
    expect(screen.queryByTestId("clone-run")).not.toBeInTheDocument();
    expect(screen.queryByTestId("share-button")).not.toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Compare…" })).toHaveAttribute("href", "/compare?runs=5");
  });

  it("offers an editor to continue from a succeeded run's weights, and no one else", () => {
    const succeeded = { ...running, status: "succeeded" } as Run;
    renderInApp(<RunActions run={succeeded} role="editor" />);
    expect(screen.getByTestId("continue-run")).toHaveAttribute("href", "/runs/new?base_run=5");
    expect(screen.getByTestId("continue-run")).toHaveTextContent("Continue from this run");
    cleanup();

    for (const [run, role] of [
      [succeeded, "viewer"],
      [running, "editor"],
      [{ ...running, status: "failed" }, "editor"],
      [{ ...succeeded, external: true }, "owner"],
    ] as const) {
      renderInApp(<RunActions run={run as Run} role={role} />);
      expect(screen.queryByTestId("continue-run")).not.toBeInTheDocument();
      cleanup();
    }
  });

  it("cancels through the run mutation after a confirmation, and keeps the answer as the run", async () => {
    const sent = fakeCancel(() => json({ ...running, cancel_requested: true }));
    vi.spyOn(window, "confirm").mockReturnValue(true);
    const { queryClient } = renderInApp(<RunActions run={running} role="editor" />);

    await userEvent.click(screen.getByTestId("cancel-run"));

    await waitFor(() => expect(queryClient.getQueryData<Run>(runKeys.detail(5))?.cancel_requested).toBe(true));
    expect(window.confirm).toHaveBeenCalledWith(expect.stringContaining("lora-r8"));
    expect(sent).toEqual([{ method: "POST", url: "/api/v1/runs/5/cancel?force=false" }]);
  });

  it("sends nothing when the confirmation is declined, and shows the server's refusal", async () => {
    const sent = fakeCancel(() => apiError(409, "RUN_FINISHED", "run 5 has already finished"));
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    renderInApp(<RunActions run={running} role="editor" />);

    await userEvent.click(screen.getByTestId("cancel-run"));
    expect(sent).toEqual([]);

    confirm.mockReturnValue(true);
    await userEvent.click(screen.getByTestId("cancel-run"));
    expect(await screen.findByRole("alert")).toHaveTextContent("run 5 has already finished");
    expect(sent).toHaveLength(1);
  });
});
