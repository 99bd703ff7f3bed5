// The run page feature's public API for other features.
export { formatConfigValue } from "./config";
