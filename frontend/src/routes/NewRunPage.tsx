import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { LaunchForm } from "../features/launch/LaunchForm";
import { methodsQueryOptions, modelsQueryOptions, runQueryOptions } from "../features/runs/api/queries";

export function NewRunPage() {
  const [searchParams] = useSearchParams();
  const cloneParam = Number(searchParams.get("clone"));
  const cloneId = Number.isInteger(cloneParam) && cloneParam > 0 ? cloneParam : undefined;

  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const datasets = useQuery(allDatasetsQueryOptions());
  const source = useQuery({ ...runQueryOptions(cloneId ?? 0), enabled: cloneId !== undefined });

  const error = methods.error ?? models.error ?? datasets.error ?? source.error;
  const ready = methods.data && models.data && datasets.data && (cloneId === undefined || source.data);

  return (
    <>
      <h1>{source.data ? `New run from ${source.data.name}` : "New run"}</h1>
      {error && <ErrorBox error={error} />}
      {!error && !ready && <Loading what="methods, models and datasets" />}
      {ready && (
        <LaunchForm
          key={cloneId ?? "new"}
          catalog={{
            objectives: methods.data.objectives,
            methods: methods.data.methods,
            models: models.data.data,
            datasets: datasets.data.data,
          }}
          source={cloneId !== undefined ? source.data : undefined}
        />
      )}
    </>
  );
}
