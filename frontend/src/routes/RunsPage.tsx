import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";

import { ErrorBox, Loading } from "../components/ui/ui";
import { useSession } from "../features/auth/session";
import { allDatasetsQueryOptions } from "../features/datasets/api/queries";
import { canEdit } from "../features/auth/roles";
import { useCancelRun } from "../features/runs/api/mutations";
import { methodsQueryOptions, modelsQueryOptions, runsQueryOptions } from "../features/runs/api/queries";
import { BulkActions } from "../features/runs/components/BulkActions";
import { ColumnChooser } from "../features/runs/components/ColumnChooser";
import { GroupBySelect } from "../features/runs/components/GroupBySelect";
import { RunsFilters } from "../features/runs/components/RunsFilters";
import { RunsTable } from "../features/runs/components/RunsTable";
import {
  DEFAULT_VIEW,
  columnsOf,
  compareHref,
  isFiltered,
  parseRunsView,
  runsExportHref,
  runsFilter,
  runsViewParams,
  toggleSort,
} from "../features/runs/components/runsView";
import type { RunsView } from "../features/runs/components/runsView";

const PAGE_SIZE = 50;
// Groups are over one page's runs: a grouped page takes as many as the API lists at once.
const GROUPED_PAGE_SIZE = 200;
const MAX_COMPARE = 20;

export function RunsPage() {
  const navigate = useNavigate();
  const { projectId, project, role } = useSession();
  const editor = canEdit(role);
  const [searchParams, setSearchParams] = useSearchParams();
  const view = useMemo(() => parseRunsView(searchParams), [searchParams]);
  const viewKey = `${projectId}:${runsViewParams(view).toString()}`;

  // Cursor paging: the stack of cursors that led to this page; a new view starts again from the first page.
  const [paging, setPaging] = useState<{ viewKey: string; cursors: (string | undefined)[] }>({ viewKey, cursors: [undefined] });
  const cursors = paging.viewKey === viewKey ? paging.cursors : [undefined];
  const cursor = cursors[cursors.length - 1];

  const runs = useQuery({
    ...runsQueryOptions({ ...runsFilter(view, cursor, view.group ? GROUPED_PAGE_SIZE : PAGE_SIZE), project_id: projectId }),
    // Keep the page on screen while a filter or page changes, but never show another project's runs.
    placeholderData: (previous, previousQuery) => (previousQuery?.queryKey[2].project_id === projectId ? previous : undefined),
  });
  const datasets = useQuery(allDatasetsQueryOptions(projectId));
  const methods = useQuery(methodsQueryOptions());
  const models = useQuery(modelsQueryOptions());
  const cancel = useCancelRun();
  const [selected, setSelected] = useState<Set<number>>(() => new Set());
  const [selectionProject, setSelectionProject] = useState(projectId);
  if (selectionProject !== projectId) {
    // Another project's runs are not on this page any more: start the selection afresh.
    setSelectionProject(projectId);
    setSelected(new Set());
  }

  const datasetNames = useMemo(() => new Map((datasets.data?.data ?? []).map((d) => [d.id, d.name])), [datasets.data]);

  const setView = (next: RunsView, options?: { replace?: boolean }) => setSearchParams(runsViewParams(next), options);

  const select = (runIds: number[], checked: boolean) =>
    setSelected((current) => {
      const next = new Set(current);
      for (const id of runIds) {
        if (!checked) next.delete(id);
        else if (next.size < MAX_COMPARE) next.add(id);
      }
      return next;
    });

  const page = runs.data;
  const noRunsAtAll = page && page.count === 0 && !isFiltered(view) && cursors.length === 1;

  return (
    <>
      <div className="page-header">
        <h1>
          Runs{project && <span className="help page-count"> in {project.project_name}</span>}
          {page && <span className="help page-count"> · {page.count} {page.count === 1 ? "run" : "runs"}</span>}
        </h1>
        <div className="card-actions">
          {selected.size > 0 && (
            <button type="button" onClick={() => setSelected(new Set())}>
              Clear selection
            </button>
          )}
          <button
            type="button"
            disabled={selected.size === 0}
            title={selected.size >= MAX_COMPARE ? `At most ${MAX_COMPARE} runs can be compared` : "Compare the selected runs"}
            onClick={() => navigate(compareHref(selected, MAX_COMPARE))}
          >
            Compare ({selected.size})
          </button>
          <a className="button" href={runsExportHref(view, projectId, "csv")} download>
            Export CSV
          </a>
          <a className="button" href={runsExportHref(view, projectId, "json")} download data-testid="export-json">
            Export JSON
          </a>
          {editor && (
            <Link to="/runs/new" className="button primary">
              New run
            </Link>
          )}
        </div>
      </div>

      {noRunsAtAll ? (
        <section className="card empty-state">
          {editor ? (
            <>
              <h3>
                No runs yet — <Link to="/runs/new">launch your first run</Link>
              </h3>
              <p className="help">The bundled tiny model and sample dataset are pre-selected; a run takes seconds on a CPU.</p>
            </>
          ) : (
            <>
              <h3>No runs in this project yet</h3>
              {role && <p className="help">You are a viewer here: an editor or owner launches runs, and you can follow them.</p>}
            </>
          )}
        </section>
      ) : (
        <section className="card">
          <RunsFilters
            view={view}
            onChange={setView}
            methods={methods.data?.methods ?? []}
            models={models.data?.data ?? []}
          />
          <div className="runs-group-controls">
            <ColumnChooser view={view} onChange={setView} runs={page?.data ?? []} projectId={projectId} />
            <GroupBySelect view={view} onChange={setView} runs={page?.data ?? []} />
            {view.group && page && page.data.length > 0 && (
              <span className="help" data-testid="runs-group-note">
                Groups of the {page.data.length} {page.data.length === 1 ? "run" : "runs"} on this page
                {page.count > page.data.length && ` — of ${page.count} matching; each page is grouped on its own`}
              </span>
            )}
          </div>
          {editor && selected.size > 0 && (
            <BulkActions
              selectedIds={[...selected]}
              selectedRuns={(page?.data ?? []).filter((run) => selected.has(run.id))}
              onDeleted={() => setSelected(new Set())}
            />
          )}
          {cancel.error && <ErrorBox error={cancel.error} />}
          {runs.error && <ErrorBox error={runs.error} />}
          {runs.isPending && <Loading what="runs" />}
          {page && page.data.length === 0 && (
            <div className="empty-state">
              <h3>No runs match these filters</h3>
              <button type="button" onClick={() => setView({ ...DEFAULT_VIEW, columns: view.columns, group: view.group, sort: view.sort, order: view.order })}>
                Clear filters
              </button>
            </div>
          )}
          {page && page.data.length > 0 && (
            <RunsTable
              runs={page.data}
              datasetNames={datasetNames}
              columns={columnsOf(view)}
              view={view}
              onSort={(field) => setView(toggleSort(view, field))}
              selected={selected}
              maxSelected={MAX_COMPARE}
              onSelect={select}
              canChange={editor}
              onCancel={(runId) => cancel.mutate({ runId })}
              cancelingIds={new Set(cancel.isPending && cancel.variables !== undefined ? [cancel.variables.runId] : [])}
              onClone={(runId) => navigate(`/runs/new?clone=${runId}`)}
            />
          )}
          {page && (cursors.length > 1 || page.next_cursor) && (
            <div className="pager">
              <button
                type="button"
                disabled={cursors.length === 1}
                onClick={() => setPaging({ viewKey, cursors: cursors.slice(0, -1) })}
              >
                Previous
              </button>
              <span className="help">Page {cursors.length}</span>
              <button
                type="button"
                disabled={!page.next_cursor || runs.isPlaceholderData}
                onClick={() => setPaging({ viewKey, cursors: [...cursors, page.next_cursor ?? undefined] })}
              >
                Next
              </button>
            </div>
          )}
        </section>
      )}
    </>
  );
}
