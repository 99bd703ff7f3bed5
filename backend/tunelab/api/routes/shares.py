"""Share links: made by editors for one run or a comparison; opened by anyone at /s/<token>."""

from fastapi import APIRouter, status

from tunelab.api.deps import SessionDep
from tunelab.api.policies import Public, ShareManaged, UserDep
from tunelab.core.errors import responses
from tunelab.db.models import Role
from tunelab.schemas.shares import ShareCreate, ShareCreated, SharedViewPublic, SharePublic
from tunelab.services.accounts import access, shares

router = APIRouter(tags=["shares"])


@router.post("/shares", response_model=ShareCreated, status_code=status.HTTP_201_CREATED,
             responses=responses(401, 403, 404, 422))
def create_share(body: ShareCreate, principal: UserDep, session: SessionDep) -> ShareCreated:
    """The token is in the answer only: keep the URL, it cannot be shown again (make a new link instead)."""
    runs = [access.run(session, principal, run_id, Role.editor, "sharing") for run_id in dict.fromkeys(body.run_ids)]
    link, token = shares.create_share(session, principal.actor, runs, body.title, body.expires_at,
                                      body.allow_downloads)
    return ShareCreated(**shares.to_public(session, link).model_dump(), url=f"/s/{token}", token=token)


@router.delete("/shares/{share_id}", response_model=SharePublic, responses=responses(401, 403, 404))
def revoke_share(link: ShareManaged, principal: UserDep, session: SessionDep) -> SharePublic:
    """Revoked at once: the next request with the token, from any open page, is refused."""
    return shares.to_public(session, shares.revoke_share(session, principal.actor, link))


@router.get("/shared/{token}", response_model=SharedViewPublic, dependencies=[Public],
            responses=responses(404, 410))
def read_shared(token: str, session: SessionDep) -> SharedViewPublic:
    """What a link shows. Its holder then reads those runs with the token in the X-Share-Token header."""
    link = shares.resolve(session, token)
    shares.record_open(session, link)
    return shares.shared_view(session, link)
