// When a view of several runs (compare, study) reads their metrics again outside its poll.

/** Whether a run listed in both "id:status,…" strings has a new status. */
export function statusChanged(before: string, after: string): boolean {
  const previous = new Map(before.split(",").map((pair) => pair.split(":") as [string, string]));
  return after.split(",").some((pair) => {
    const [id, status] = pair.split(":");
    const was = previous.get(id);
    return was !== undefined && was !== status;
  });
}
