// @vitest-environment jsdom
// Deleting a dataset from its page: confirmed first, sent as DELETE through the real client; the server's refusal
// (runs and studies that use it, named) shows beside the button; a bundled sample has no button.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { Dataset } from "../../../api/client";
import { apiError, fakeNetwork } from "../../../test/network";
import { renderInApp } from "../../../test/render";
import { DeleteDatasetButton } from "./DeleteDatasetButton";

const dataset = (bundled = false) => ({ id: 7, name: "support chats", row_count: 120, bundled }) as unknown as Dataset;

describe("DeleteDatasetButton", () => {
  afterEach(() => vi.restoreAllMocks());

  it("sends DELETE once confirmed and reports the deletion", async () => {
    const requests: string[] = [];
    fakeNetwork((request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return new Response(null, { status: 204 });
    });
    vi.spyOn(window, "confirm").mockReturnValue(true);
    const onDeleted = vi.fn();
    renderInApp(<DeleteDatasetButton dataset={dataset()} onDeleted={onDeleted} />);
    await userEvent.click(screen.getByTestId("delete-dataset"));
    await waitFor(() => expect(onDeleted).toHaveBeenCalled());
    expect(requests).toEqual(["DELETE /api/v1/datasets/7"]);
  });

  it("shows the server's refusal naming the runs that use the dataset, and sends nothing when not confirmed", async () => {
    const message = "dataset 'support chats' is used by 1 run (12 'lora-tiny-12'); delete them first";
    fakeNetwork(() => apiError(409, "DATASET_IN_USE", message));
    const confirm = vi.spyOn(window, "confirm").mockReturnValueOnce(false).mockReturnValueOnce(true);
    renderInApp(<DeleteDatasetButton dataset={dataset()} onDeleted={() => {}} />);
    await userEvent.click(screen.getByTestId("delete-dataset"));
    expect(screen.queryByRole("alert")).toBeNull();
    await userEvent.click(screen.getByTestId("delete-dataset"));
    expect(await screen.findByRole("alert")).toHaveTextContent(message);
    expect(confirm).toHaveBeenCalledTimes(2);
  });

  it("offers no delete for a bundled sample", () => {
    renderInApp(<DeleteDatasetButton dataset={dataset(true)} onDeleted={() => {}} />);
    expect(screen.queryByTestId("delete-dataset")).toBeNull();
  });
});
