import { describe, expect, it } from "vitest";

import { ApiError } from "../../../api/client";
import { describeUploadError } from "./uploadErrors";

describe("describeUploadError", () => {
  it("lists a DATASET_INVALID's errors by line", () => {
    const error = new ApiError(422, "DATASET_INVALID", "line 2: output: Field required (and 1 more error)", {
      errors: [
        { line: 2, field: "output", message: "Field required" },
        { line: 3, field: null, message: "invalid JSON: Expecting value (column 1)" },
      ],
      more_errors: 4,
    });
    expect(describeUploadError(error)).toEqual({
      message: "line 2: output: Field required (and 1 more error)",
      lines: ["line 2: output: Field required", "line 3: invalid JSON: Expecting value (column 1)"],
      more: 4,
    });
  });

  it("groups the errors by cause, naming a few lines of each and how many more", () => {
    const missing = Array.from({ length: 8 }, (_, i) => ({ line: i + 2, field: "output", message: "Field required" }));
    const error = new ApiError(422, "DATASET_INVALID", "line 2: output: Field required (and 9 more errors)", {
      errors: [...missing.slice(0, 3), { line: 5, field: null, message: "invalid JSON" }, ...missing.slice(3)],
      more_errors: 40,
    });
    expect(describeUploadError(error).lines).toEqual([
      "lines 2, 3, 4, 5, 6 and 3 more: output: Field required",
      "line 5: invalid JSON",
    ]);
    expect(describeUploadError(error).more).toBe(40);
  });

  it("keeps the server's message for other failures", () => {
    const error = new ApiError(413, "PAYLOAD_TOO_LARGE", "The upload is larger than 200 MiB", null);
    expect(describeUploadError(error)).toEqual({ message: "The upload is larger than 200 MiB", lines: [], more: 0 });
  });
});
