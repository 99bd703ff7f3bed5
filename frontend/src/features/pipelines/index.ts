// The pipelines feature's public API for other features and pages.
export { isActive, pipelineKeys, pipelineQueryOptions, pipelinesQueryOptions, pipelineTemplatesQueryOptions } from "./api/queries";
export { PipelineForm } from "./components/PipelineForm";
export { PipelineView } from "./components/PipelineView";
export { StageStatusBadge } from "./components/StageStatusBadge";
export { chainText, finalRunIds } from "./stages";
