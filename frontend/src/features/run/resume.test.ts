import { describe, expect, it } from "vitest";

import { attemptLabel, resumeLabel } from "./resume";

describe("resume labels", () => {
  it("names the checkpoint a resume continues from, or says it restarts", () => {
    expect(resumeLabel({ checkpoint_step: 40 })).toBe("Resume from step 40");
    expect(resumeLabel({ checkpoint_step: null })).toBe("Restart (no checkpoint)");
  });

  it("shows the attempt only once a run has started again", () => {
    expect(attemptLabel({ attempt: 1, auto_resumes: 0 })).toBe("");
    expect(attemptLabel({ attempt: 2, auto_resumes: 0 })).toBe("attempt 2");
    expect(attemptLabel({ attempt: 3, auto_resumes: 2 })).toBe("attempt 3 (2 automatic resumes)");
  });
});
