// The studies feature's public API for other features and pages.
export { studiesQueryOptions, studyKeys, studyQueryOptions } from "./api/queries";
export { FairCostTable } from "./components/FairCostTable";
export { StudyForm, type StudyCatalog } from "./components/StudyForm";
export { StudyView } from "./components/StudyView";
