"""Accounts, managed by admins: list, create with a password, or invite (the invitee chooses one)."""

from fastapi import APIRouter, status

from tunelab.api.deps import SessionDep, SettingsDep
from tunelab.api.policies import AdminDep
from tunelab.core.errors import responses
from tunelab.db.models import Role
from tunelab.schemas.auth import InvitationPublic, UserCreate, UserCreated, UserPublic, UsersPublic, UserUpdate
from tunelab.schemas.common import ResourceId
from tunelab.services.accounts import access, users

router = APIRouter(tags=["users"])


@router.get("/users", response_model=UsersPublic, responses=responses(401, 403))
def read_users(principal: AdminDep, session: SessionDep) -> UsersPublic:
    found = users.list_users(session)
    return UsersPublic(data=[UserPublic.model_validate(u) for u in found], count=len(found))


@router.post("/users", response_model=UserCreated, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 409, 422))
def create_user(body: UserCreate, principal: AdminDep, session: SessionDep, settings: SettingsDep) -> UserCreated:
    """Without a password the answer carries an invitation link to hand to the person (shown only now)."""
    if body.project_id is not None:
        access.project(session, principal, body.project_id, Role.owner, "adding members")
    created = users.create_user(session, settings, principal.actor, body.email, body.display_name, body.password,
                                body.is_admin, body.project_id, body.role if body.project_id is not None else None)
    invite_url = f"/invite/{created.invite_token}" if created.invite_token else None
    return UserCreated(user=UserPublic.model_validate(created.user), invite_url=invite_url)


@router.patch("/users/{user_id}", response_model=UserPublic, responses=responses(401, 403, 404, 409, 422))
def update_user(user_id: ResourceId, body: UserUpdate, principal: AdminDep, session: SessionDep) -> UserPublic:
    """Deactivate or reactivate an account, or grant or drop admin rights."""
    user = users.get_user(session, user_id)
    return UserPublic.model_validate(users.update_user(session, principal.signed_in_user, user, body.is_active, body.is_admin))


@router.post("/users/{user_id}/invitation", response_model=InvitationPublic, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 409))
def reissue_invitation(user_id: ResourceId, principal: AdminDep, session: SessionDep,
                       settings: SettingsDep) -> InvitationPublic:
    """A new invitation link for someone who has not joined yet (the old one may be lost or expired)."""
    token = users.reissue_invite(session, settings, users.get_user(session, user_id))
    return InvitationPublic(invite_url=f"/invite/{token}")
