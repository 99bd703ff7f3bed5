import { QueryClientProvider, useQuery } from "@tanstack/react-query";
import { useLayoutEffect, useState } from "react";
import { useParams } from "react-router";

import { ApiError, onShareFailure, setShareToken, shareFailureCode } from "../api/client";
import { createQueryClient } from "../api/queryClient";
import { ErrorBox, Loading } from "../components/ui/ui";
import { ComparisonView } from "../features/compare/components/ComparisonView";
import { RunNotFound, RunView } from "../features/run/components/RunView";
import { sharedLinkCheckQueryOptions, sharedViewQueryOptions } from "../features/shares/api/queries";
import { SharedBanner } from "../features/shares/components/SharedBanner";
import { PipelineView } from "../features/pipelines";
import { RlSamplesTable, SamplesTable } from "../features/playground";
import { StudyView } from "../features/studies";
import { ShareUnavailable } from "../features/shares/components/ShareUnavailable";

/**
 * /s/<token>: a run, a comparison, a study or a pipeline, read-only, for anyone holding the link. It has its own query cache, so
 * nothing read with the link's token mixes with what a signed-in user reads with their session.
 */
export function SharedPage() {
  const { token = "" } = useParams();
  return <SharedPageForToken key={token} token={token} />;
}

function SharedPageForToken({ token }: { token: string }) {
  const [queryClient] = useState(createQueryClient);
  const [failure, setFailure] = useState<string | null>(null);

  // Before any child reads a run: every request from here on carries the link's token.
  useLayoutEffect(() => {
    setShareToken(token);
    const stop = onShareFailure(setFailure);
    return () => {
      stop();
      setShareToken(null);
    };
  }, [token]);

  if (failure) return <ShareUnavailable code={failure} />;
  return (
    <QueryClientProvider client={queryClient}>
      <SharedContent token={token} />
    </QueryClientProvider>
  );
}

function SharedContent({ token }: { token: string }) {
  const shared = useQuery(sharedViewQueryOptions(token));
  useQuery({ ...sharedLinkCheckQueryOptions(token), enabled: shared.isSuccess });
  const code = shared.error instanceof ApiError ? shareFailureCode(shared.error.code) : null;
  if (code) return <ShareUnavailable code={code} />;

  const view = shared.data;
  return (
    <div className="app shared-app">
      {view && <SharedBanner view={view} />}
      <main className="page">
        {shared.isPending && <Loading what="the shared page" />}
        {shared.error && <ErrorBox error={shared.error} />}
        {view?.kind === "run" && (
          <>
            <RunView runId={view.run_ids[0]} downloads={view.allow_downloads} notFound={<RunNotFound label={`#${view.run_ids[0]}`} />} />
            <SamplesTable runId={view.run_ids[0]} />
            <RlSamplesTable runId={view.run_ids[0]} />
          </>
        )}
        {view?.kind === "comparison" && <ComparisonView ids={view.run_ids} readOnly />}
        {view?.kind === "study" && view.study_id != null && <StudyView studyId={view.study_id} readOnly />}
        {view?.kind === "pipeline" && view.pipeline_id != null && <PipelineView pipelineId={view.pipeline_id} readOnly />}
      </main>
    </div>
  );
}
