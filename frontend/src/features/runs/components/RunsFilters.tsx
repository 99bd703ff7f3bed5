// Filters above the runs table: statuses, method, model and a debounced text search.
import { useEffect, useRef, useState } from "react";

import type { RunStatus } from "../../../api/client";
import { RUN_STATUSES, addFilter, removeFilter } from "./runsView";
import type { FilterKind, RunsView } from "./runsView";

type Props = {
  view: RunsView;
  onChange: (view: RunsView, options?: { replace?: boolean }) => void;
  methods: { name: string; title: string }[];
  models: { name: string; title: string }[];
};

const SEARCH_DEBOUNCE_MS = 300;

export function RunsFilters({ view, onChange, methods, models }: Props) {
  const [text, setText] = useState(view.q ?? "");
  const latest = useRef({ view, onChange });
  latest.current = { view, onChange };

  // The URL changed under us (back button, "Clear filters"): show its search text.
  const [shownQ, setShownQ] = useState(view.q);
  if (view.q !== shownQ) {
    setShownQ(view.q);
    if ((text.trim() || undefined) !== view.q) setText(view.q ?? "");
  }

  useEffect(() => {
    const timer = setTimeout(() => {
      const q = text.trim() || undefined;
      if (q !== latest.current.view.q) latest.current.onChange({ ...latest.current.view, q }, { replace: true });
    }, SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [text]);

  const toggleStatus = (status: RunStatus, checked: boolean) => {
    const next = checked ? [...view.status, status] : view.status.filter((s) => s !== status);
    onChange({ ...view, status: RUN_STATUSES.filter((s) => next.includes(s)) });
  };

  const modelOptions = view.model && !models.some((m) => m.name === view.model) ? [...models, { name: view.model, title: view.model }] : models;

  return (
    <div className="toolbar runs-filters">
      <input
        type="search"
        aria-label="Search runs"
        placeholder="Search name, model, method…"
        value={text}
        onChange={(e) => setText(e.target.value)}
        className="search"
      />
      <fieldset className="status-filter">
        <legend className="visually-hidden">Status</legend>
        {RUN_STATUSES.map((status) => (
          <label key={status} className="checkbox-label">
            <input type="checkbox" checked={view.status.includes(status)} onChange={(e) => toggleStatus(status, e.target.checked)} />
            {status}
          </label>
        ))}
      </fieldset>
      <select aria-label="Method" value={view.method ?? ""} onChange={(e) => onChange({ ...view, method: e.target.value || undefined })}>
        <option value="">All methods</option>
        {methods.map((m) => (
          <option key={m.name} value={m.name}>
            {m.title}
          </option>
        ))}
      </select>
      <select aria-label="Model" value={view.model ?? ""} onChange={(e) => onChange({ ...view, model: e.target.value || undefined })}>
        <option value="">All models</option>
        {modelOptions.map((m) => (
          <option key={m.name} value={m.name}>
            {m.title}
          </option>
        ))}
      </select>
      <FilterAdder view={view} onChange={onChange} />
    </div>
  );
}

const FILTER_HINTS: Record<FilterKind, string> = {
  tag: "baseline",
  param: "r:16 or learning_rate>0.0001",
  metric: "eval/loss<2 or min(eval/loss)<=1.5",
};

/** Tag, param and metric conditions: added one at a time, shown as chips that remove themselves. */
function FilterAdder({ view, onChange }: Pick<Props, "view" | "onChange">) {
  const [kind, setKind] = useState<FilterKind>("tag");
  const [text, setText] = useState("");
  const chips: { kind: FilterKind; value: string; label: string }[] = [
    ...view.tags.map((value) => ({ kind: "tag" as const, value, label: `tag: ${value}` })),
    ...view.params.map((value) => ({ kind: "param" as const, value, label: `param ${value}` })),
    ...view.metrics.map((value) => ({ kind: "metric" as const, value, label: `metric ${value}` })),
  ];
  return (
    <>
      <form
        className="filter-adder"
        onSubmit={(e) => {
          e.preventDefault();
          onChange(addFilter(view, kind, text));
          setText("");
        }}
      >
        <select aria-label="Filter by" value={kind} onChange={(e) => setKind(e.target.value as FilterKind)}>
          <option value="tag">Tag</option>
          <option value="param">Param</option>
          <option value="metric">Metric</option>
        </select>
        <input
          aria-label="Filter value"
          placeholder={FILTER_HINTS[kind]}
          value={text}
          onChange={(e) => setText(e.target.value)}
        />
        <button type="submit" disabled={!text.trim()}>
          Add filter
        </button>
      </form>
      {chips.length > 0 && (
        <div className="filter-chips" data-testid="filter-chips">
          {chips.map((chip) => (
            <span key={`${chip.kind}:${chip.value}`} className="tag-chip compare-chip">
              {chip.label}
              <button
                type="button"
                className="chip-remove"
                aria-label={`Remove filter ${chip.label}`}
                onClick={() => onChange(removeFilter(view, chip.kind, chip.value))}
              >
                ×
              </button>
            </span>
          ))}
        </div>
      )}
    </>
  );
}
