// The playground feature's public API: the panel (for a study page too), the run and compare page mounts, and the
// stored samples table (what shared pages show instead).
export { PlaygroundPanel, type PlaygroundPanelProps } from "./components/PlaygroundPanel";
export { ComparePlayground, RunPlayground } from "./components/RunPlayground";
export { SamplesTable } from "./components/SamplesTable";
