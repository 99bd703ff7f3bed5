import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { Card, EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { DatasetPreview } from "../features/datasets/components/DatasetPreview";
import { DeleteDatasetButton } from "../features/datasets/components/DeleteDatasetButton";
import { DatasetsTable } from "../features/datasets/components/DatasetsTable";
import { UploadCard } from "../features/datasets/components/UploadCard";
import { canEdit } from "../features/auth/roles";
import { modelsQueryOptions } from "../features/runs/api/queries";

export function DatasetsPage() {
  const [searchParams, setSearchParams] = useSearchParams();
  const { projectId, project, role } = useSession();
  const datasets = useQuery(allDatasetsQueryOptions(projectId));
  const models = useQuery(modelsQueryOptions());
  const selectedId = Number(searchParams.get("dataset")) || undefined;
  const selected = datasets.data?.data.find((d) => d.id === selectedId);
  const select = (id: number) => setSearchParams({ dataset: String(id) }, { replace: true });
  const editor = canEdit(role);

  return (
    <>
      <h1>
        Datasets{project && <span className="help page-count"> in {project.project_name}</span>}
      </h1>
      {editor && <UploadCard projectId={projectId} onUploaded={(dataset) => select(dataset.id)} />}
      {!editor && project && (
        <p className="notice">You are a viewer in {project.project_name}: uploading datasets needs the editor role.</p>
      )}
      <Card title={datasets.data ? `Datasets (${datasets.data.count})` : "Datasets"}>
        {datasets.error && <ErrorBox error={datasets.error} />}
        {datasets.isPending && <Loading what="datasets" />}
        {datasets.data && datasets.data.data.length === 0 && (
          <EmptyState title={editor ? "No datasets yet — upload one above" : "No datasets yet"} />
        )}
        {datasets.data && datasets.data.data.length > 0 && (
          <DatasetsTable datasets={datasets.data.data} selectedId={selectedId} onSelect={select} />
        )}
      </Card>
      {selected && editor && <DeleteDatasetButton key={`delete-${selected.id}`} dataset={selected} onDeleted={() => setSearchParams({}, { replace: true })} />}
      {selected && <DatasetPreview key={selected.id} dataset={selected} models={models.data?.data ?? []} />}
      {datasets.data && !selected && datasets.data.data.length > 0 && <p className="help">Choose a dataset to preview its rows and lengths.</p>}
    </>
  );
}
