// Which axes the parallel coordinates show: a labelled checkbox per dimension, config and results apart.
import type { Dimension } from "../dimensions";

type Props = {
  dimensions: readonly Dimension[];
  hidden: ReadonlySet<string>;
  onChange: (key: string, shown: boolean) => void;
};

export function AxisChooser({ dimensions, hidden, onChange }: Props) {
  const shown = dimensions.filter((d) => !hidden.has(d.key)).length;
  const groups = [
    { name: "Config that differs", dimensions: dimensions.filter((d) => d.group === "param") },
    { name: "Results", dimensions: dimensions.filter((d) => d.group === "figure") },
  ].filter((group) => group.dimensions.length > 0);
  return (
    <details className="analysis-axis-chooser" data-testid="analysis-axis-chooser">
      <summary>
        Axes ({shown} of {dimensions.length})
      </summary>
      <div className="analysis-axis-groups">
        {groups.map((group) => (
          <fieldset key={group.name} className="analysis-axis-group">
            <legend>{group.name}</legend>
            {group.dimensions.map((d) => (
              <label key={d.key} className="checkbox-label">
                <input type="checkbox" checked={!hidden.has(d.key)} onChange={(e) => onChange(d.key, e.target.checked)} />
                {d.label}
              </label>
            ))}
          </fieldset>
        ))}
      </div>
    </details>
  );
}
