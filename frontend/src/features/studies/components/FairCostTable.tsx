// The fair cost table of the runs of a comparison, computed on the server as a study's is.
import { useQuery } from "@tanstack/react-query";

import { ErrorBox } from "../../../components/ui/ui";
import { costTableQueryOptions } from "../api/queries";
import { StudyCostTable } from "./StudyCostTable";

export function FairCostTable({ runIds, refetchMs = false }: { runIds: readonly number[]; refetchMs?: number | false }) {
  const table = useQuery({ ...costTableQueryOptions(runIds, refetchMs), enabled: runIds.length > 0 });
  if (table.error) return <ErrorBox error={table.error} />;
  if (!table.data) return null;
  return <StudyCostTable table={table.data} title="Fair cost table (per method, mean ± spread over seeds)" testId="fair-cost-table" />;
}
