// The shares feature's public API for other features.
export { ShareButton } from "./components/ShareButton";
export { ShareDialog } from "./components/ShareDialog";
