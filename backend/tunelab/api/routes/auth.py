"""Accounts as the browser and scripts see them: first admin, sign-in/out, invitations, the caller, API tokens."""

from fastapi import APIRouter, Request, Response, status

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import Public, UserDep
from tunelab.core.errors import responses
from tunelab.core.security import CSRF_COOKIE, SESSION_COOKIE, csrf_token
from tunelab.core.settings import Settings
from tunelab.schemas.auth import (
    ApiTokenCreate,
    ApiTokenCreated,
    ApiTokenPublic,
    ApiTokensPublic,
    FirstAdminCreate,
    InviteAccept,
    InvitePublic,
    MembershipPublic,
    MePublic,
    SetupPublic,
    SignIn,
    SignUp,
    UserPublic,
)
from tunelab.schemas.common import ResourceId
from tunelab.services.accounts import auth, users
from tunelab.services.accounts.projects import list_projects

router = APIRouter(prefix="/auth", tags=["auth"])


def _set_session_cookies(request: Request, response: Response, settings: Settings, new: auth.NewSession) -> None:
    """The session cookie is HTTP-only (scripts cannot read it); the CSRF cookie is readable by our page, which
    echoes it in a header: a page on another site can make the browser send cookies, but cannot read them."""
    secure = request.url.scheme == "https"
    max_age = int(settings.session_ttl_hours * 3600)
    response.set_cookie(SESSION_COOKIE, new.token, max_age=max_age, httponly=True, samesite="lax", secure=secure)
    response.set_cookie(CSRF_COOKIE, csrf_token(settings.secret_key, new.token), max_age=max_age, httponly=False,
                        samesite="lax", secure=secure)


def _start_browser_session(request: Request, response: Response, session: SessionDep, settings: Settings,
                           user) -> None:
    _set_session_cookies(request, response, settings, auth.start_session(session, settings, user))


def _me(session: SessionDep, principal) -> MePublic:
    memberships = [MembershipPublic(project_id=p.id, project_name=p.name, role=role)
                   for p, role in list_projects(session, principal)]
    return MePublic(user=UserPublic.model_validate(principal.user), projects=memberships, via=principal.via)


@router.get("/setup", response_model=SetupPublic, dependencies=[Public])
def read_setup(session: SessionDep, settings: SettingsDep) -> SetupPublic:
    """What the sign-in page needs to know before anyone is signed in."""
    return SetupPublic(needs_first_admin=users.needs_first_admin(session), open_signup=settings.open_signup)


@router.post("/first-admin", response_model=UserPublic, status_code=status.HTTP_201_CREATED,
             dependencies=[Public], responses=responses(409, 422))
def create_first_admin(body: FirstAdminCreate, request: Request, response: Response, session: SessionDep,
                       settings: SettingsDep) -> UserPublic:
    """Only on a fresh install (409 afterwards): the admin owns the `default` project and is signed in."""
    user = users.create_first_admin(session, body.email, body.display_name, body.password)
    _start_browser_session(request, response, session, settings, user)
    return UserPublic.model_validate(user)


@router.post("/sign-in", response_model=UserPublic, dependencies=[Public], responses=responses(401, 422, 429))
def sign_in(body: SignIn, request: Request, response: Response, session: SessionDep,
            settings: SettingsDep) -> UserPublic:
    address = request.client.host if request.client else "unknown"
    new = auth.sign_in(session, settings, body.email, body.password, address)
    _set_session_cookies(request, response, settings, new)
    return UserPublic.model_validate(new.user)


@router.post("/sign-out", status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403))
def sign_out(principal: UserDep, response: Response, session: SessionDep) -> None:
    auth.sign_out(session, principal.session_token)
    response.delete_cookie(SESSION_COOKIE)
    response.delete_cookie(CSRF_COOKIE)


@router.post("/sign-up", response_model=UserPublic, status_code=status.HTTP_201_CREATED, dependencies=[Public],
             responses=responses(403, 409, 422))
def sign_up(body: SignUp, request: Request, response: Response, session: SessionDep,
            settings: SettingsDep) -> UserPublic:
    """Only when TUNELAB_OPEN_SIGNUP is on; otherwise admins invite people."""
    user = users.sign_up(session, settings, body.email, body.display_name, body.password)
    _start_browser_session(request, response, session, settings, user)
    return UserPublic.model_validate(user)


@router.get("/invites/{token}", response_model=InvitePublic, dependencies=[Public], responses=responses(404))
def read_invite(token: str, session: SessionDep) -> InvitePublic:
    user = users.invitation(session, token)
    return InvitePublic(email=user.email, display_name=user.display_name)


@router.post("/invites/accept", response_model=UserPublic, dependencies=[Public], responses=responses(404, 422))
def accept_invite(body: InviteAccept, request: Request, response: Response, session: SessionDep,
                  settings: SettingsDep) -> UserPublic:
    user = users.accept_invite(session, body.token, body.password, body.display_name)
    _start_browser_session(request, response, session, settings, user)
    return UserPublic.model_validate(user)


@router.get("/me", response_model=MePublic, responses=responses(401))
def read_me(principal: UserDep, session: SessionDep) -> MePublic:
    return _me(session, principal)


@router.get("/tokens", response_model=ApiTokensPublic, responses=responses(401))
def read_api_tokens(principal: UserDep, session: SessionDep) -> ApiTokensPublic:
    found = auth.list_api_tokens(session, principal.signed_in_user)
    return ApiTokensPublic(data=[ApiTokenPublic.model_validate(t) for t in found], count=len(found))


@router.post("/tokens", response_model=ApiTokenCreated, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 422))
def create_api_token(body: ApiTokenCreate, principal: UserDep, session: SessionDep) -> ApiTokenCreated:
    token, secret = auth.create_api_token(session, principal.signed_in_user, body.name, body.expires_in_days)
    return ApiTokenCreated(**ApiTokenPublic.model_validate(token).model_dump(), token=secret)


@router.delete("/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(401, 403, 404))
def revoke_api_token(token_id: ResourceId, principal: UserDep, session: SessionDep) -> None:
    auth.revoke_api_token(session, principal.signed_in_user, token_id)
