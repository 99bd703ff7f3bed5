// The playground feature's public API: the panel (for a study page too), the run and compare page mounts, and the
// stored samples table and an online RL run's sampled completions (what shared pages show instead).
export { PlaygroundPanel, type PlaygroundPanelProps } from "./components/PlaygroundPanel";
export { ComparePlayground, RunPlayground } from "./components/RunPlayground";
export { RlSamplesTable } from "./components/RlSamplesTable";
export { SamplesTable } from "./components/SamplesTable";
