// Which field the runs table groups its runs by (kept in the URL as `group=`): a field of the run, its tags (a run with
// several is under each), or any scalar param of the runs shown.
import type { Run } from "../../../api/client";
import { scalarParamNames } from "./ColumnChooser";
import { isGroupBy } from "./runsView";
import type { RunsView } from "./runsView";

type Props = {
  view: RunsView;
  onChange: (view: RunsView) => void;
  runs: Run[];
};

const FIELDS = [
  { value: "study", label: "Study" },
  { value: "method", label: "Method" },
  { value: "objective", label: "Objective" },
  { value: "model", label: "Model" },
  { value: "dataset", label: "Dataset" },
  { value: "tag", label: "Tag" },
] as const;

export function GroupBySelect({ view, onChange, runs }: Props) {
  const current = view.group?.startsWith("param.") ? [view.group.slice("param.".length)] : [];
  const params = [...new Set([...scalarParamNames(runs).filter((name) => isGroupBy(`param.${name}`)), ...current])].sort();
  return (
    <label className="inline runs-group-by" title="Group the runs of this page, with each figure's mean ± spread over a group's succeeded runs">
      Group by
      <select
        value={view.group ?? ""}
        data-testid="group-by"
        onChange={(e) => onChange({ ...view, group: isGroupBy(e.target.value) ? e.target.value : undefined })}
      >
        <option value="">None</option>
        {FIELDS.map((field) => (
          <option key={field.value} value={field.value}>
            {field.label}
          </option>
        ))}
        {params.length > 0 && (
          <optgroup label="Params">
            {params.map((name) => (
              <option key={name} value={`param.${name}`}>
                {name}
              </option>
            ))}
          </optgroup>
        )}
      </select>
    </label>
  );
}
