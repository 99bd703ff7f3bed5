import { Route, Routes } from "react-router";

import { AcceptInvitePage } from "./routes/AcceptInvitePage";
import { AnalysisPage } from "./routes/AnalysisPage";
import { ComparePage } from "./routes/ComparePage";
import { DatasetsPage } from "./routes/DatasetsPage";
import { NewRunPage } from "./routes/NewRunPage";
import { NewPipelinePage } from "./routes/NewPipelinePage";
import { NewStudyPage } from "./routes/NewStudyPage";
import { NotFoundPage } from "./routes/NotFoundPage";
import { PipelinePage } from "./routes/PipelinePage";
import { PipelinesPage } from "./routes/PipelinesPage";
import { ProjectSettingsPage } from "./routes/ProjectSettingsPage";
import { RunPage } from "./routes/RunPage";
import { RunsPage } from "./routes/RunsPage";
import { SetupPage } from "./routes/SetupPage";
import { SharedPage } from "./routes/SharedPage";
import { SignedInShell } from "./routes/SignedInShell";
import { SignInPage } from "./routes/SignInPage";
import { SignUpPage } from "./routes/SignUpPage";
import { StudiesPage } from "./routes/StudiesPage";
import { StudyPage } from "./routes/StudyPage";
import { TokensPage } from "./routes/TokensPage";
import { UsersPage } from "./routes/UsersPage";

export function App() {
  return (
    <Routes>
      {/* Pages for people who are not signed in (or hold only a share link): no top bar. */}
      <Route path="/setup" element={<SetupPage />} />
      <Route path="/sign-in" element={<SignInPage />} />
      <Route path="/sign-up" element={<SignUpPage />} />
      <Route path="/invite/:token" element={<AcceptInvitePage />} />
      <Route path="/s/:token" element={<SharedPage />} />
      <Route element={<SignedInShell />}>
        <Route path="/" element={<RunsPage />} />
        <Route path="/runs/new" element={<NewRunPage />} />
        <Route path="/runs/:runId" element={<RunPage />} />
        <Route path="/compare" element={<ComparePage />} />
        <Route path="/analysis" element={<AnalysisPage />} />
        <Route path="/studies" element={<StudiesPage />} />
        <Route path="/studies/new" element={<NewStudyPage />} />
        <Route path="/studies/:studyId" element={<StudyPage />} />
        <Route path="/pipelines" element={<PipelinesPage />} />
        <Route path="/pipelines/new" element={<NewPipelinePage />} />
        <Route path="/pipelines/:pipelineId" element={<PipelinePage />} />
        <Route path="/datasets" element={<DatasetsPage />} />
        <Route path="/settings/project" element={<ProjectSettingsPage />} />
        <Route path="/settings/tokens" element={<TokensPage />} />
        <Route path="/settings/users" element={<UsersPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}
