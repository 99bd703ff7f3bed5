// queryOptions factories for datasets: every dataset (all pages) for lists and pickers, and row previews.
import { keepPreviousData, queryOptions } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Dataset } from "../../../api/client";

export const PREVIEW_ROWS = 10;
const PAGE_LIMIT = 100; // the server's maximum page size

export const datasetKeys = {
  all: ["datasets"] as const,
  everything: (projectId: number | undefined) => ["datasets", "all", projectId ?? null] as const,
  preview: (datasetId: number, model: string | null, maxLength: number | null, offset: number) =>
    ["datasets", "preview", datasetId, model, maxLength, offset] as const,
};

/**
 * Every dataset of a project and the bundled samples (undefined: of all your projects), following the cursor:
 * pickers and the datasets page need the whole list, and it is short.
 */
export function allDatasetsQueryOptions(projectId: number | undefined) {
  return queryOptions({
    queryKey: datasetKeys.everything(projectId),
    queryFn: async ({ signal }) => {
      const data: Dataset[] = [];
      let cursor: string | null | undefined;
      do {
        const page = unwrap(await api.GET("/api/v1/datasets", { params: { query: { project_id: projectId, limit: PAGE_LIMIT, cursor } }, signal }));
        data.push(...page.data);
        cursor = page.next_cursor;
      } while (cursor);
      return { data, count: data.length };
    },
  });
}

/**
 * PREVIEW_ROWS rows from the offset-th and length statistics; with a model and a max length, also what that max
 * length cuts.
 */
export function datasetPreviewQueryOptions(datasetId: number, model?: string, maxLength?: number, offset = 0) {
  return queryOptions({
    queryKey: datasetKeys.preview(datasetId, model ?? null, maxLength ?? null, offset),
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/datasets/{dataset_id}/preview", {
          params: {
            path: { dataset_id: datasetId },
            query: { model: model ?? null, limit: PREVIEW_ROWS, offset, max_length: model ? (maxLength ?? null) : null },
          },
          signal,
        }),
      ),
    // A dataset never changes after upload; only the tokenizer asked for does.
    staleTime: Infinity,
    // The page shown stays while the next one loads, so the pager does not jump.
    placeholderData: keepPreviousData,
  });
}
