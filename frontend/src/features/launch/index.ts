// The launch feature's public API for other features (the study form lays its fields out as the run form does).
export { TopField, inputProps } from "./FormField";
export type { JsonSchema } from "./schemaFields";
