// Dataset upload (multipart) through the typed client; a success refreshes the dataset list.
import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api, unwrap } from "../../../api/client";
import type { Schemas } from "../../../api/client";
import { datasetKeys } from "./queries";

export type DatasetUpload = { file: File; name?: string; format?: Schemas["DatasetFormat"]; projectId?: number };

export function useUploadDataset() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ file, name, format, projectId }: DatasetUpload) =>
      unwrap(
        await api.POST("/api/v1/datasets", {
          // The generated type says `string` for the binary part; the serializer below sends the File itself.
          body: { file: file as unknown as string, name, format, project_id: projectId },
          bodySerializer: () => {
            const form = new FormData();
            form.append("file", file);
            if (name) form.append("name", name);
            if (format) form.append("format", format);
            if (projectId !== undefined) form.append("project_id", String(projectId));
            return form;
          },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.all, predicate: (query) => query.queryKey[1] !== "preview" }),
  });
}

/** Delete a dataset; the server refuses (409, naming them) while runs or studies use it, and the bundled samples. */
export function useDeleteDataset() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (datasetId: number) => unwrap(await api.DELETE("/api/v1/datasets/{dataset_id}", { params: { path: { dataset_id: datasetId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.all, predicate: (query) => query.queryKey[1] !== "preview" }),
  });
}
