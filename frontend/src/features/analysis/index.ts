// The analysis feature's public API for pages: many runs' params and results at once.
export { AnalysisView } from "./components/AnalysisView";
export { MAX_ANALYSIS_RUNS, analysisHref, parseAnalysisRuns } from "./selection";
