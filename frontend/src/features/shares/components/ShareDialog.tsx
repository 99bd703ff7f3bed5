// Make a read-only link to one run, a comparison or a study: its title, lifetime and downloads; the URL is shown only
// once.
import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";

import type { Run } from "../../../api/client";
import { formErrors } from "../../../api/formErrors";
import { CopyField, ErrorBox, Field, fieldProps, Loading, Modal } from "../../../components/ui/ui";
import { formatDateTime } from "../../../lib/format";
import { absoluteUrl } from "../../../lib/url";
import { useCreateShare } from "../api/mutations";
import { projectSharesQueryOptions } from "../api/queries";
import { DEFAULT_EXPIRY, EXPIRY_OPTIONS, localDateString, resolveExpiry, type ExpiryChoice } from "../expiry";
import { linksShowing } from "../links";
import { SharesTable } from "./SharesTable";

type SharedRun = Pick<Run, "id" | "name" | "project_id">;

/**
 * `study`: a link to the study page (its runs, those an extension adds too) instead of to these runs; `pipeline`: a
 * link to the pipeline page (its stages' runs, those launched later too), which may have no run yet.
 */
export function ShareDialog({
  runs,
  study,
  pipeline,
  onClose,
}: {
  runs: readonly SharedRun[];
  study?: { id: number; name: string };
  pipeline?: { id: number; name: string; projectId: number };
  onClose: () => void;
}) {
  const projectId = pipeline?.projectId ?? runs[0].project_id;
  const runIds = runs.map((r) => r.id);
  const create = useCreateShare({ runIds, studyId: study?.id, pipelineId: pipeline?.id });
  const page = study ? { kind: "study", ...study } : pipeline ? { kind: "pipeline", ...pipeline } : null;
  const shares = useQuery(projectSharesQueryOptions(projectId));
  const [title, setTitle] = useState("");
  const [expiry, setExpiry] = useState<ExpiryChoice>(DEFAULT_EXPIRY);
  const [customDate, setCustomDate] = useState("");
  const [allowDownloads, setAllowDownloads] = useState(false);
  const [expiryError, setExpiryError] = useState<string | null>(null);

  const defaultTitle = page ? page.name : runs.length === 1 ? runs[0].name : `Comparison of ${runs.length} runs`;
  const errors = formErrors(create.error, { expires_at: "expiry", title: "title" });
  const related = shares.data
    ? study
      ? shares.data.data.filter((share) => share.study_id === study.id)
      : pipeline
        ? shares.data.data.filter((share) => share.pipeline_id === pipeline.id)
        : linksShowing(shares.data.data, runIds)
    : [];
  const noun = page ? page.kind : runs.length === 1 ? "run" : "comparison";

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    const resolved = resolveExpiry(expiry, customDate);
    setExpiryError(resolved.error ?? null);
    if (resolved.error !== undefined) return;
    create.mutate({ title: title.trim() || null, expires_at: resolved.expiresAt, allow_downloads: allowDownloads });
  };

  const created = create.data;
  // The list holds active links only: the one just made is gone from it once revoked (here or elsewhere), and its URL
  // must not stay on offer to copy. Only a list read after the link was made can say so: one read before it (a refetch
  // that failed leaves it in place) never holds the new link.
  const listedSinceCreated = shares.data !== undefined && shares.dataUpdatedAt >= create.submittedAt;
  const createdRevoked =
    created !== undefined && listedSinceCreated && !shares.data.data.some((s) => s.id === created.id);
  const what = page ? `${page.kind} “${page.name}” and its runs` : runs.length === 1 ? `run “${runs[0].name}”` : `${runs.length} runs`;

  return (
    <Modal title={`Share this ${noun}`} onClose={onClose}>
      <p className="help">
        Anyone with the link sees the {what} read-only, live while training, without signing in. You can revoke it at any time.
      </p>
      {created && createdRevoked ? (
        <div className="share-created" data-state="revoked">
          <p className="notice" role="status">
            The link to the {created.kind} was revoked: it no longer opens.
          </p>
          <button type="button" onClick={() => create.reset()}>
            Make another link
          </button>
        </div>
      ) : created ? (
        <div className="share-created" data-state="active">
          <label>Link to the {created.kind}</label>
          <CopyField value={absoluteUrl(window.location.origin, created.url)} label="Share link" testId="share-url" copyTestId="copy-share-url" />
          <p className="help">
            Copy it now: it is shown only once. {created.expires_at ? `It expires ${formatDateTime(created.expires_at)}.` : "It never expires."}{" "}
            {created.allow_downloads ? "Holders can read the log and download artifacts." : "Logs and artifacts stay private."}
          </p>
          <button type="button" onClick={() => create.reset()}>
            Make another link
          </button>
        </div>
      ) : (
        <form className="share-form" onSubmit={submit} noValidate>
          {errors.form && <ErrorBox error={errors.form} />}
          <Field name="title" label="Title" error={errors.fields.title} help="What the viewer sees at the top of the page">
            <input {...fieldProps("title", errors.fields.title)} type="text" value={title} placeholder={defaultTitle} maxLength={200} onChange={(e) => setTitle(e.target.value)} />
          </Field>
          <Field name="expiry" label="Expires" error={expiryError ?? errors.fields.expiry}>
            <div className="expiry-inputs">
              <select {...fieldProps("expiry", expiryError ?? errors.fields.expiry)} value={expiry} onChange={(e) => setExpiry(e.target.value as ExpiryChoice)}>
                {EXPIRY_OPTIONS.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
              {expiry === "custom" && (
                <input
                  type="date"
                  name="expiry_date"
                  aria-label="Last day the link works"
                  min={localDateString()}
                  value={customDate}
                  onChange={(e) => setCustomDate(e.target.value)}
                />
              )}
            </div>
          </Field>
          <label className="checkbox-label">
            <input type="checkbox" name="allow_downloads" checked={allowDownloads} onChange={(e) => setAllowDownloads(e.target.checked)} />
            Allow downloads
          </label>
          <p className="help">Lets holders read the training log and download artifacts (checkpoints, adapters).</p>
          <div className="form-actions">
            <button type="submit" className="primary" disabled={create.isPending}>
              {create.isPending ? "Creating…" : "Create link"}
            </button>
          </div>
        </form>
      )}
      <section className="share-existing">
        <h3>Active links to {page ? `this ${page.kind}` : runs.length === 1 ? "this run" : "these runs"}</h3>
        {shares.isPending && <Loading what="share links" />}
        {shares.error && <ErrorBox error={shares.error} />}
        {shares.data && related.length === 0 && <p className="help">No share links yet.</p>}
        {related.length > 0 && <SharesTable shares={related} showRuns={false} />}
      </section>
    </Modal>
  );
}
