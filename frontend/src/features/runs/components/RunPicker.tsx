// Find runs to add (to a comparison) by name or tag, instead of typing their ids.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";

import type { Run } from "../../../api/client";
import { StatusBadge } from "../../../components/ui/ui";
import { formatNumber } from "../../../lib/format";
import { runsQueryOptions } from "../api/queries";

type Props = {
  onPick: (run: Run) => void;
  /** Runs already picked: listed, but not offered again. */
  pickedIds: number[];
  /** The most runs that can be picked; beyond it the picker says so and offers none. */
  max?: number;
  label?: string;
};

const SEARCH_DEBOUNCE_MS = 250;
const RESULTS = 8;

/** Runs named like the text, and runs tagged exactly with it, without repeats: newest first. */
export function mergeResults(byName: Run[], byTag: Run[], limit = RESULTS): Run[] {
  const seen = new Set<number>();
  return [...byTag, ...byName]
    .filter((run) => !seen.has(run.id) && Boolean(seen.add(run.id)))
    .sort((a, b) => b.id - a.id)
    .slice(0, limit);
}

export function RunPicker({ onPick, pickedIds, max, label = "Add runs" }: Props) {
  const [text, setText] = useState("");
  const [search, setSearch] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setSearch(text.trim()), SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [text]);
  // A tag is at most 50 characters without commas; other text only searches names.
  const asTag = search && search.length <= 50 && !search.includes(",") ? search : undefined;
  const byName = useQuery({ ...runsQueryOptions({ q: search || undefined, limit: RESULTS }), enabled: search !== "" });
  const byTag = useQuery({ ...runsQueryOptions({ tag: asTag ? [asTag] : undefined, limit: RESULTS }), enabled: asTag !== undefined });
  const full = max !== undefined && pickedIds.length >= max;
  const results = mergeResults(byName.data?.data ?? [], byTag.data?.data ?? []);

  return (
    <div className="run-picker-search" data-testid="run-picker">
      <input
        type="search"
        aria-label={label}
        placeholder="Find runs by name or tag…"
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      {search !== "" && (
        <ul className="run-picker-results" aria-label="Matching runs">
          {full && <li className="help">At most {max} runs; remove one to add another.</li>}
          {!full && results.length === 0 && !byName.isPending && <li className="help">No run is named or tagged “{search}”.</li>}
          {!full &&
            results.map((run) => {
              const picked = pickedIds.includes(run.id);
              return (
                <li key={run.id}>
                  <button
                    type="button"
                    className="small"
                    disabled={picked}
                    onClick={() => {
                      onPick(run);
                      setText("");
                      setSearch("");
                    }}
                    aria-label={`Add ${run.name}`}
                  >
                    {picked ? "Added" : "Add"}
                  </button>
                  <span className="run-name">{run.name}</span>
                  <span className="help">#{run.id} · {run.method}</span>
                  <StatusBadge status={run.status} />
                  {(run.tags ?? []).map((tag) => (
                    <span key={tag} className="tag-chip">
                      {tag}
                    </span>
                  ))}
                  {run.best_eval_loss !== null && <span className="help">eval {formatNumber(run.best_eval_loss)}</span>}
                </li>
              );
            })}
        </ul>
      )}
    </div>
  );
}
