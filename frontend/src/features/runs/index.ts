// The runs feature's public API for other features: run queries, their cache keys and the run mutations.
export { useCancelRun, useCreateRun, useResumeRun } from "./api/mutations";
export { isFinished, methodsQueryOptions, runKeys, runQueryOptions, runsQueryOptions } from "./api/queries";
export { RunLabels } from "./components/RunLabels";
export { RunPicker } from "./components/RunPicker";
export { DeleteRunButton } from "./components/DeleteRunButton";
