"""Names the user types (a project, a dataset) as the ids the API takes."""

from typing import Any

from tunelab.client.http import ApiClient
from tunelab.commands.common import CommandError, ExitCode


def project_id(client: ApiClient, given: str | int | None) -> int | None:
    """A project id, or the id of the project of that name among yours."""
    if given is None or given == "":
        return None
    if isinstance(given, int) or str(given).isdigit():
        return int(given)
    projects = client.get("/projects")["data"]
    for project in projects:
        if project["name"] == given:
            return int(project["id"])
    names = ", ".join(p["name"] for p in projects) or "none"
    raise CommandError(ExitCode.NOT_FOUND, "PROJECT_NOT_FOUND", f"you have no project named {given!r} (yours: {names})")


def dataset_id(client: ApiClient, given: str | int, project: int | None = None) -> int:
    """A dataset id, or the newest dataset of that name you can read (in `project` and the bundled samples when
    given)."""
    if isinstance(given, int) or str(given).isdigit():
        return int(given)
    params: dict[str, Any] = {"limit": 100, **({"project_id": project} if project is not None else {})}
    while True:
        page = client.get("/datasets", params=params)
        for dataset in page["data"]:
            if dataset["name"] == given:
                return int(dataset["id"])
        if not page.get("next_cursor"):
            raise CommandError(ExitCode.NOT_FOUND, "DATASET_NOT_FOUND", f"no dataset named {given!r}",
                               {"field": "dataset"})
        params["cursor"] = page["next_cursor"]
