// Many runs at once: their params and results as parallel coordinates and as a scatter of one against another, fed
// by one request for the runs. Only succeeded runs are drawn; the others are listed with where they are.
import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Link } from "react-router";

import type { Run } from "../../../api/client";
import { Card, EmptyState, ErrorBox, Loading } from "../../../components/ui/ui";
import { runsQueryOptions } from "../../runs";
import {
  buildAxis,
  chosenOr,
  defaultColorKey,
  extractDimensions,
  inAllBrushes,
  splitRuns,
  type Brush,
  type NumericAxis,
} from "../dimensions";
import { MAX_ANALYSIS_RUNS } from "../selection";
import { AnalysisTable } from "./AnalysisTable";
import { AxisChooser } from "./AxisChooser";
import { ColorLegend } from "./ColorLegend";
import { NotDrawnRuns } from "./NotDrawnRuns";
import { ParallelCoordinates } from "./ParallelCoordinates";
import { ParamScatter } from "./ParamScatter";

export function AnalysisView({ ids }: { ids: number[] }) {
  const runsQuery = useQuery(runsQueryOptions({ ids, limit: MAX_ANALYSIS_RUNS }));
  const runs = useMemo(() => {
    const byId = new Map((runsQuery.data?.data ?? []).map((run) => [run.id, run]));
    return ids.map((id) => byId.get(id)).filter((run): run is Run => run !== undefined);
  }, [ids, runsQuery.data]);
  const { drawn, notDrawn } = useMemo(() => splitRuns(runs), [runs]);
  const dimensions = useMemo(() => extractDimensions(drawn), [drawn]);
  const allAxes = useMemo(() => dimensions.map((d) => buildAxis(d, drawn)), [dimensions, drawn]);

  const [hidden, setHidden] = useState<ReadonlySet<string>>(() => new Set());
  const [colorChoice, setColorChoice] = useState<string | null>(null);
  const [brushes, setBrushes] = useState<Readonly<Record<string, Brush>>>({});
  const [showTable, setShowTable] = useState(false);

  if (runsQuery.isPending) return <Loading what="runs" />;
  if (runsQuery.error) return <ErrorBox error={runsQuery.error} />;

  const unknown = ids.filter((id) => !runs.some((run) => run.id === id));
  const axes = allAxes.filter((axis) => !hidden.has(axis.dimension.key));
  const colorAxes = allAxes.filter((axis): axis is NumericAxis => axis.kind === "numeric" && axis.dimension.group === "figure");
  const colorKey = chosenOr(
    colorAxes.map((axis) => axis.dimension),
    colorChoice,
    defaultColorKey(dimensions),
  );
  const colorAxis = colorAxes.find((axis) => axis.dimension.key === colorKey) ?? null;
  const brushedKeys = Object.keys(brushes).filter((key) => axes.some((axis) => axis.dimension.key === key));
  const isActive = (run: Run) => inAllBrushes(axes, brushes, run);
  const activeCount = drawn.filter(isActive).length;

  const setBrush = (key: string, brush: Brush | null) =>
    setBrushes((current) => {
      const next = { ...current };
      if (brush) next[key] = brush;
      else delete next[key];
      return next;
    });

  return (
    <>
      {unknown.length > 0 && (
        <div className="error-box" role="alert" data-testid="analysis-message">
          Unknown run{unknown.length > 1 ? "s" : ""}: {unknown.map((id) => `#${id}`).join(", ")}
        </div>
      )}
      {runs.length === 0 ? (
        <EmptyState title="None of these runs exist">
          <Link to="/">Back to the runs</Link>
        </EmptyState>
      ) : (
        <>
          <Card
            title="Parallel coordinates"
            testId="analysis-pc-card"
            actions={
              <>
                {colorAxes.length > 0 && (
                  <label className="inline">
                    Colour by
                    <select value={colorKey ?? ""} onChange={(e) => setColorChoice(e.target.value)} data-testid="analysis-color">
                      {colorAxes.map((axis) => (
                        <option key={axis.dimension.key} value={axis.dimension.key}>
                          {axis.dimension.label}
                        </option>
                      ))}
                    </select>
                  </label>
                )}
                <button type="button" aria-pressed={showTable} onClick={() => setShowTable((shown) => !shown)} data-testid="analysis-show-table">
                  {showTable ? "Hide the table" : "Show as table"}
                </button>
              </>
            }
          >
            <p className="help">
              {drawn.length} of {runs.length} selected {runs.length === 1 ? "run" : "runs"} drawn
              {brushedKeys.length > 0 && (
                <>
                  {" "}
                  · {activeCount} in the kept ranges{" "}
                  <button type="button" className="link-button" onClick={() => setBrushes({})}>
                    Clear the ranges
                  </button>
                </>
              )}
            </p>
            {dimensions.length > 0 && (
              <AxisChooser
                dimensions={dimensions}
                hidden={hidden}
                onChange={(key, shown) =>
                  setHidden((current) => {
                    const next = new Set(current);
                    if (shown) next.delete(key);
                    else next.add(key);
                    return next;
                  })
                }
              />
            )}
            <ParallelCoordinates runs={drawn} axes={axes} colorAxis={colorAxis} brushes={brushes} onBrush={setBrush} />
            {colorAxis && drawn.length > 0 && <ColorLegend axis={colorAxis} anyMissing={colorAxis.hasMissing} />}
            <NotDrawnRuns runs={notDrawn} />
            {showTable && <AnalysisTable runs={drawn} axes={axes} />}
          </Card>
          <Card title="Param against result" testId="analysis-scatter-card">
            <ParamScatter runs={drawn} dimensions={dimensions} colorAxis={colorAxis} isActive={brushedKeys.length ? isActive : undefined} />
          </Card>
        </>
      )}
    </>
  );
}
