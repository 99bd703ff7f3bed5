import type { Schemas } from "../../../api/client";
import { formatDateTime } from "../../../lib/format";

/** What a link's holder is looking at, and that it is read-only. */
export function SharedBanner({ view }: { view: Schemas["SharedViewPublic"] }) {
  return (
    <header className="shared-banner">
      <span className="shared-brand">Tunelab</span>
      <span>
        Shared view — <strong>{view.title}</strong> from project <strong>{view.project_name}</strong> · read-only
        {view.expires_at && <> · expires {formatDateTime(view.expires_at)}</>}
      </span>
    </header>
  );
}
