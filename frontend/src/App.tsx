import { NavLink, Route, Routes } from "react-router";

import { ComparePage } from "./routes/ComparePage";
import { DatasetsPage } from "./routes/DatasetsPage";
import { NewRunPage } from "./routes/NewRunPage";
import { NotFoundPage } from "./routes/NotFoundPage";
import { RunPage } from "./routes/RunPage";
import { RunsPage } from "./routes/RunsPage";

export function App() {
  return (
    <div className="app">
      <nav className="topbar">
        <NavLink to="/" className="brand" end>
          Tunelab
        </NavLink>
        <NavLink to="/" end>
          Runs
        </NavLink>
        <NavLink to="/runs/new">New run</NavLink>
        <NavLink to="/compare">Compare</NavLink>
        <NavLink to="/datasets">Datasets</NavLink>
      </nav>
      <main className="page">
        <Routes>
          <Route path="/" element={<RunsPage />} />
          <Route path="/runs/new" element={<NewRunPage />} />
          <Route path="/runs/:runId" element={<RunPage />} />
          <Route path="/compare" element={<ComparePage />} />
          <Route path="/datasets" element={<DatasetsPage />} />
          <Route path="*" element={<NotFoundPage />} />
        </Routes>
      </main>
    </div>
  );
}
