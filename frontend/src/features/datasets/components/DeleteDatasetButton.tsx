// Delete an uploaded dataset after the browser's confirmation. The server refuses while runs or studies use it and
// names them; that refusal shows beside the button.
import type { Dataset } from "../../../api/client";
import { useDeleteDataset } from "../api/mutations";

export function DeleteDatasetButton({ dataset, onDeleted }: { dataset: Dataset; onDeleted: () => void }) {
  const remove = useDeleteDataset();
  if (dataset.bundled) return null;
  return (
    <div className="toolbar">
      <button
        type="button"
        className="danger"
        data-testid="delete-dataset"
        disabled={remove.isPending}
        onClick={() => {
          if (window.confirm(`Delete dataset “${dataset.name}” (${dataset.row_count} rows)? This cannot be undone.`)) {
            remove.mutate(dataset.id, { onSuccess: onDeleted });
          }
        }}
      >
        Delete dataset
      </button>
      {remove.error && (
        <span className="field-error" role="alert" data-testid="delete-dataset-error">
          {remove.error.message}
        </span>
      )}
    </div>
  );
}
