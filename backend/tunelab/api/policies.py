"""Who may call what. Every route declares exactly one policy, as a dependency from this module.

A policy is a dependency marked with its name (`policy`); `create_app` refuses to start if a route has none,
and the authorization-matrix test reads the same marks. Lookups by id are policies too: the dependency
returns the run, dataset, project or link already checked, so a route cannot forget the check.
"""

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute
from sqlalchemy.orm import Session

from tunelab.api.deps import SessionDep
from tunelab.core.errors import AppError
from tunelab.core.security import CSRF_HEADER, SESSION_COOKIE, SHARE_HEADER, csrf_matches
from tunelab.core.settings import get_settings
from tunelab.db.models import Dataset, Pipeline, Project, Role, Run, ShareLink, Study
from tunelab.schemas.common import ResourceId
from tunelab.services.accounts import access, auth, principal_cache, shares
from tunelab.services.accounts.principal import Principal
from tunelab.services.runs import run_refs
from tunelab.services.runs.run_refs import RunRef

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SHARE_QUERY_PARAM = "share"  # for EventSource and download links, which cannot send headers


Dependency = TypeVar("Dependency", bound=Callable[..., Any])


def policy(name: str) -> Callable[[Dependency], Dependency]:
    def mark(fn: Dependency) -> Dependency:
        setattr(fn, "policy", name)  # read back by route_policies
        return fn

    return mark


def _bearer(request: Request) -> str | None:
    header = request.headers.get("Authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AppError("INVALID_TOKEN", "the Authorization header must be `Bearer <API token>`")
    return value.strip()


def _resolve(session: Session, key: str | None, bearer: str | None, share_token: str | None,
             session_cookie: str | None) -> Principal:
    since = principal_cache.generation()
    principal = auth.resolve_principal(session, bearer=bearer, share_token=share_token, session_cookie=session_cookie)
    if key is not None and principal.user is not None:
        access.roles(session, principal)
        principal_cache.remember(session, key, principal, since)
    return principal


async def get_principal(request: Request, session: SessionDep) -> Principal:
    """The caller. A token or browser session resolved a moment ago comes from principal_cache, on the event loop
    (no SQL, no thread hop: the metrics hot path); anything else is read from SQL."""
    bearer = _bearer(request)
    share_token = request.headers.get(SHARE_HEADER) or request.query_params.get(SHARE_QUERY_PARAM)
    session_cookie = request.cookies.get(SESSION_COOKIE)
    key = principal_cache.credential_key(bearer, share_token, session_cookie)
    principal = principal_cache.recall(session, key)
    if principal is None:
        principal = await run_in_threadpool(_resolve, session, key, bearer, share_token, session_cookie)
    settings = request.app.dependency_overrides.get(get_settings, get_settings)()
    # A cookie is sent by the browser on its own, so a state change by cookie must prove it came from our page.
    if principal.via == "session" and request.method not in SAFE_METHODS and not csrf_matches(
            settings.secret_key, principal.session_token or "", request.headers.get(CSRF_HEADER)):
        raise AppError("CSRF_FAILED", f"missing or wrong {CSRF_HEADER} header; reload the page and try again")
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def caller_or_anonymous(request: Request, session: Session) -> Principal:
    """Who calls, for a public route that shows more to some callers: a bad credential is only 'anonymous' there."""
    try:
        return auth.resolve_principal(session, bearer=_bearer(request), share_token=None,
                                      session_cookie=request.cookies.get(SESSION_COOKIE))
    except AppError:
        return Principal()


@policy("public")
def public(request: Request) -> None:
    """Anyone, signed in or not. A public POST (sign-in, first admin, invitations) must not come from another
    site's page, or that page could sign a visitor in to an account of its choosing (login CSRF); browsers say
    where a request comes from in Origin, and scripts send none."""
    origin = request.headers.get("Origin")
    if request.method not in SAFE_METHODS and origin is not None and origin != _own_origin(request):
        raise AppError("CSRF_FAILED", f"requests from {origin} are not accepted here")


def _own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"


def _require_user(principal: Principal) -> Principal:
    if principal.user is None:
        raise AppError("AUTH_REQUIRED", "sign in, or send an API token as `Authorization: Bearer <token>`")
    return principal


# The checks that need no SQL are async: a sync dependency costs a hop to a thread and back on every request.
@policy("signed_in")
async def signed_in(principal: PrincipalDep) -> Principal:
    return _require_user(principal)


@policy("signed_in_or_share")
async def signed_in_or_share(principal: PrincipalDep) -> Principal:
    """Lists and bulk reads: the service scopes them to the caller's projects, or to a link's runs."""
    return principal if principal.share is not None else _require_user(principal)


@policy("admin")
def admin(principal: Annotated[Principal, Depends(signed_in)]) -> Principal:
    if not principal.signed_in_user.is_admin:
        raise AppError("FORBIDDEN", "only an admin can do this")
    return principal


UserDep = Annotated[Principal, Depends(signed_in)]
ReaderDep = Annotated[Principal, Depends(signed_in_or_share)]
AdminDep = Annotated[Principal, Depends(admin)]
Public = Depends(public)


def _project_policy(role: Role, doing: str) -> Callable:
    @policy(f"project:{role.value}")
    def check(project_id: ResourceId, session: SessionDep, principal: UserDep) -> Project:
        return access.project(session, principal, project_id, role, doing)

    return check


def _run_policy(role: Role, doing: str, downloads: bool = False) -> Callable:
    name = "run:download" if downloads else f"run:{role.value}"

    @policy(name)
    def check(run_id: ResourceId, session: SessionDep, principal: ReaderDep) -> Run:
        return access.run(session, principal, run_id, role, doing, downloads=downloads)

    return check


def _run_ref_policy(role: Role, doing: str) -> Callable:
    """The run policy for the metrics hot path: a run seen before by this process is checked on the event loop
    against the caller's (remembered) roles, with no SQL and no thread hop; see services/runs/run_refs."""

    @policy(f"run:{role.value}")
    async def check(run_id: ResourceId, session: SessionDep, principal: ReaderDep) -> RunRef:
        ref = run_refs.recall(run_id)
        if ref is not None and run_refs.can_check_remembered(principal):
            try:
                return run_refs.check_remembered(session, principal, ref, role, doing)
            except AppError:
                pass  # a refusal is answered from SQL, in case what was remembered is of a deleted run
        return await run_in_threadpool(run_refs.read_and_check, session, principal, run_id, role, doing)

    return check


def _study_policy(role: Role, doing: str) -> Callable:
    @policy(f"study:{role.value}")
    def check(study_id: ResourceId, session: SessionDep, principal: ReaderDep) -> Study:
        return access.study(session, principal, study_id, role, doing)

    return check


def _pipeline_policy(role: Role, doing: str) -> Callable:
    @policy(f"pipeline:{role.value}")
    def check(pipeline_id: ResourceId, session: SessionDep, principal: ReaderDep) -> Pipeline:
        return access.pipeline(session, principal, pipeline_id, role, doing)

    return check


def _dataset_policy(role: Role, doing: str) -> Callable:
    @policy(f"dataset:{role.value}")
    def check(dataset_id: ResourceId, session: SessionDep, principal: UserDep) -> Dataset:
        return access.dataset(session, principal, dataset_id, role, doing)

    return check


@policy("share:editor")
def _share_to_manage(share_id: ResourceId, session: SessionDep, principal: UserDep) -> ShareLink:
    link = shares.get_share(session, share_id)
    try:
        access.require_role(session, principal, link.project_id, Role.editor, "managing share links")
    except AppError as exc:
        if exc.code == "PROJECT_NOT_FOUND":
            raise AppError("SHARE_NOT_FOUND", f"share link {share_id} does not exist", {"share_id": share_id}) from None
        raise
    return link


ProjectViewer = Annotated[Project, Depends(_project_policy(Role.viewer, "reading this project"))]
ProjectEditor = Annotated[Project, Depends(_project_policy(Role.editor, "managing share links"))]
ProjectOwner = Annotated[Project, Depends(_project_policy(Role.owner, "managing the project"))]
RunReader = Annotated[Run, Depends(_run_policy(Role.viewer, "reading"))]
RunDownloader = Annotated[Run, Depends(_run_policy(Role.viewer, "downloading", downloads=True))]
RunCanceler = Annotated[Run, Depends(_run_policy(Role.editor, "canceling a run"))]
RunCloner = Annotated[Run, Depends(_run_policy(Role.editor, "cloning a run"))]
RunResumer = Annotated[Run, Depends(_run_policy(Role.editor, "resuming a run"))]
RunDeleter = Annotated[Run, Depends(_run_policy(Role.editor, "deleting a run"))]
RunEditor = Annotated[Run, Depends(_run_policy(Role.editor, "editing a run"))]
RunExporter = Annotated[Run, Depends(_run_policy(Role.editor, "exporting a merged model"))]
RunLogger = Annotated[Run, Depends(_run_policy(Role.editor, "logging metrics"))]
RunMetricsLogger = Annotated[RunRef, Depends(_run_ref_policy(Role.editor, "logging metrics"))]
DatasetReader = Annotated[Dataset, Depends(_dataset_policy(Role.viewer, "reading"))]
DatasetEditor = Annotated[Dataset, Depends(_dataset_policy(Role.editor, "deleting a dataset"))]
StudyReader = Annotated[Study, Depends(_study_policy(Role.viewer, "reading"))]
StudyEditor = Annotated[Study, Depends(_study_policy(Role.editor, "changing a study"))]
PipelineReader = Annotated[Pipeline, Depends(_pipeline_policy(Role.viewer, "reading"))]
PipelineEditor = Annotated[Pipeline, Depends(_pipeline_policy(Role.editor, "changing a pipeline"))]
ShareManaged = Annotated[ShareLink, Depends(_share_to_manage)]


def route_policies(route: APIRoute) -> list[str]:
    """The policy names a route's dependencies declare (walked through nested dependencies)."""
    found: list[str] = []
    pending = list(route.dependant.dependencies)
    while pending:
        dependant = pending.pop()
        name = getattr(dependant.call, "policy", None)
        if name is not None:
            found.append(name)
        else:
            pending.extend(dependant.dependencies)
    return found


def route_policy_table(routers: list, prefix: str) -> dict[tuple[str, str], list[str]]:
    """(method, path) -> policy names for every documented route; refuses a route that declares none."""
    table: dict[tuple[str, str], list[str]] = {}
    missing = []
    for router in routers:
        for route in router.routes:
            if not isinstance(route, APIRoute) or not route.include_in_schema:
                continue
            names = route_policies(route)
            if not names:
                missing.append(f"{sorted(route.methods or ())} {route.path}")
            for method in route.methods or ():
                table[(method, prefix + route.path)] = names
    if missing:
        raise RuntimeError(f"routes without an access policy (see tunelab.api.policies): {missing}")
    return table
