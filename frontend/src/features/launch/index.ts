// The launch feature's public API for other features (the study and pipeline forms lay their fields out as the run
// form does; the pipeline form renders each stage's params from its schema as the run form does).
export { ModelOptions, TopField, UnavailableModels, inputProps } from "./FormField";
export { SchemaForm } from "./SchemaForm";
export { rewardRunsQueryOptions } from "./api/rewardRuns";
export { rewardRunField, rewardRunLabel } from "./rewardRuns";
export { BUNDLED_MODEL, paramDefaults, queueLabel, type Catalog, type Queue } from "./launchChoice";
export { assignFieldErrors, describeSchema, toFormValues, toParams } from "./schemaFields";
export type { FieldSpec, FormValue, FormValues, JsonSchema } from "./schemaFields";
