// The projects feature's public API for other features: the cache keys their changes refresh.
export { projectKeys } from "./api/queries";
