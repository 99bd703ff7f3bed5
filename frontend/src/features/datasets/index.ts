// The datasets feature's public API for other features.
export { datasetKeys } from "./api/queries";
