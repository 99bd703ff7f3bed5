// Which rows a preview page shows and where its previous and next pages start.

export type PreviewPage = {
  /** "Rows 11–20 of 25"; "No rows here (25 in all)" past the end. */
  label: string;
  previousOffset: number | null;
  nextOffset: number | null;
};

export function previewPage(offset: number, shown: number, total: number, pageSize: number): PreviewPage {
  const label =
    shown === 0 ? `No rows here (${total} in all)` : `Rows ${offset + 1}–${offset + shown} of ${total}`;
  return {
    label,
    previousOffset: offset > 0 ? Math.max(0, Math.min(offset - pageSize, total - pageSize)) : null,
    nextOffset: offset + shown < total ? offset + shown : null,
  };
}
