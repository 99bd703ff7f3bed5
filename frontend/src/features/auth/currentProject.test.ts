import { describe, expect, it } from "vitest";

import { PROJECT_STORAGE_KEY, pageShowsProject, parseProjectParam, pickProjectId, readRememberedProject, rememberProject } from "./currentProject";

const projects = [
  { project_id: 3, project_name: "vision", role: "viewer" as const },
  { project_id: 1, project_name: "default", role: "owner" as const },
  { project_id: 7, project_name: "llm-evals", role: "editor" as const },
];

function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
    clear: () => items.clear(),
    key: (i) => [...items.keys()][i] ?? null,
    get length() {
      return items.size;
    },
  };
}

describe("pickProjectId", () => {
  it("keeps the remembered project while the user is a member", () => {
    expect(pickProjectId(projects, 7)).toBe(7);
  });

  it("falls back to the default project, then the first one", () => {
    expect(pickProjectId(projects, 99)).toBe(1);
    expect(pickProjectId(projects, null)).toBe(1);
    expect(pickProjectId(projects.filter((p) => p.project_name !== "default"), null)).toBe(3);
  });

  it("is undefined without any project", () => {
    expect(pickProjectId([], 7)).toBeUndefined();
  });
});

describe("remembered project", () => {
  it("round-trips through storage", () => {
    const storage = memoryStorage();
    expect(readRememberedProject(storage)).toBeNull();
    rememberProject(7, storage);
    expect(storage.getItem(PROJECT_STORAGE_KEY)).toBe("7");
    expect(readRememberedProject(storage)).toBe(7);
  });

  it("ignores what is not a project id", () => {
    const storage = memoryStorage();
    storage.setItem(PROJECT_STORAGE_KEY, "abc");
    expect(readRememberedProject(storage)).toBeNull();
  });
});

describe("the project in the URL", () => {
  it("reads only a positive whole number", () => {
    expect(parseProjectParam("7")).toBe(7);
    for (const raw of [null, "", "0", "-3", "7.5", "1e3", "seven", "99999999999999999999"]) expect(parseProjectParam(raw)).toBeNull();
  });

  it("is named by the pages that show the current project's content, not a run's or a clone's", () => {
    const none = new URLSearchParams();
    for (const path of ["/", "/studies", "/studies/new", "/datasets", "/datasets/", "/settings/project", "/runs/new"]) {
      expect(pageShowsProject(path, none)).toBe(true);
    }
    for (const path of ["/runs/12", "/compare", "/studies/3", "/settings/tokens"]) expect(pageShowsProject(path, none)).toBe(false);
    expect(pageShowsProject("/runs/new", new URLSearchParams("clone=4"))).toBe(false);
    expect(pageShowsProject("/runs/new", new URLSearchParams("base_run=4"))).toBe(false);
  });
});
