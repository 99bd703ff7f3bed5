"""Share links: a random token (kept only as a hash) that shows one run or one comparison, read-only, to anyone."""

from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from tunelab.core.errors import AppError
from tunelab.core.security import new_token, same_hash, token_hash
from tunelab.db.base import utcnow
from tunelab.db.models import Pipeline, Project, Run, ShareLink, Study, User
from tunelab.schemas.shares import SharedViewPublic, SharePublic
from tunelab.services.accounts import audit
from tunelab.services.accounts.principal import Actor


def is_active(link: ShareLink) -> bool:
    return link.revoked_at is None and (link.expires_at is None or link.expires_at > utcnow())


def _creator_email(session: Session, link: ShareLink) -> str | None:
    return session.scalar(select(User.email).where(User.id == link.created_by_id)) if link.created_by_id else None


def to_public(session: Session, link: ShareLink) -> SharePublic:
    return SharePublic(id=link.id, project_id=link.project_id, kind=link.kind, run_ids=link.run_ids,
                       study_id=link.study_id, pipeline_id=link.pipeline_id, title=link.title,
                       allow_downloads=link.allow_downloads, created_by=_creator_email(session, link),
                       created_at=link.created_at, expires_at=link.expires_at, revoked_at=link.revoked_at,
                       last_opened_at=link.last_opened_at, open_count=link.open_count, active=is_active(link))


def shared_view(session: Session, link: ShareLink) -> SharedViewPublic:
    return SharedViewPublic(kind=link.kind, title=link.title, run_ids=link.run_ids, study_id=link.study_id,
                            pipeline_id=link.pipeline_id,
                            allow_downloads=link.allow_downloads,
                            project_name=session.scalar(select(Project.name).where(Project.id == link.project_id)),
                            expires_at=link.expires_at)


# 24 random bytes: 32 URL-safe characters, so a whole link stays short enough to paste anywhere.
SHARE_TOKEN_BYTES = 24



def create_share(session: Session, actor: Actor, runs: list[Run], title: str | None, expires_at: datetime | None,
                 allow_downloads: bool, study: Study | None = None,
                 pipeline: Pipeline | None = None) -> tuple[ShareLink, str]:
    """`runs` are already checked to be the caller's to share; they must all be in one project. With `study` (or
    `pipeline`), the link shows that study's (or pipeline's) page and `runs` are its runs."""
    page = study or pipeline
    projects = {run.project_id for run in runs} | ({page.project_id} if page is not None else set())
    if len(projects) != 1:
        raise AppError("VALIDATION_ERROR", "run_ids: a link can show runs of one project only",
                       [{"field": "run_ids", "message": "runs of one project only"}])
    if expires_at is not None and expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)  # a time sent without a zone is taken as UTC
    if expires_at is not None and expires_at <= utcnow():
        raise AppError("VALIDATION_ERROR", "expires_at: must be in the future",
                       [{"field": "expires_at", "message": "must be in the future"}])
    token = new_token(nbytes=SHARE_TOKEN_BYTES)
    if study is not None:
        kind, default_title = "study", study.name
    elif pipeline is not None:
        kind, default_title = "pipeline", pipeline.name
    elif len(runs) == 1:
        kind, default_title = "run", runs[0].name
    else:
        kind, default_title = "comparison", f"Comparison of {len(runs)} runs"
    link = ShareLink(project_id=projects.pop(), token_hash=token_hash(token), kind=kind,
                     run_ids=[run.id for run in runs], study_id=study.id if study is not None else None,
                     pipeline_id=pipeline.id if pipeline is not None else None,
                     title=(title or "").strip() or default_title,
                     allow_downloads=allow_downloads, created_by_id=actor.user_id, expires_at=expires_at)
    session.add(link)
    session.flush()
    audit.record(session, link.project_id, actor, "share.create", "share", link.id,
                 f"{actor.label} shared {kind} {link.title!r}" + (" with downloads" if allow_downloads else ""),
                 run_ids=link.run_ids, expires_at=expires_at.isoformat() if expires_at else None)
    return link, token


def list_shares(session: Session, project_id: int, include_inactive: bool) -> list[ShareLink]:
    stmt = select(ShareLink).where(ShareLink.project_id == project_id)
    if not include_inactive:
        now = utcnow()
        stmt = stmt.where(ShareLink.revoked_at.is_(None),
                          (ShareLink.expires_at.is_(None)) | (ShareLink.expires_at > now))
    return list(session.scalars(stmt.order_by(ShareLink.id.desc())))


def get_share(session: Session, share_id: int) -> ShareLink:
    link = session.get(ShareLink, share_id)
    if link is None:
        raise AppError("SHARE_NOT_FOUND", f"share link {share_id} does not exist", {"share_id": share_id})
    return link


def revoke_share(session: Session, actor: Actor, link: ShareLink) -> ShareLink:
    if link.revoked_at is None:
        link.revoked_at = utcnow()
        audit.record(session, link.project_id, actor, "share.revoke", "share", link.id,
                     f"{actor.label} revoked the link to {link.title!r}")
    return link


def resolve(session: Session, token: str) -> ShareLink:
    """The live link behind a token, or the reason there is none (revoked and expired links answer 410)."""
    link = session.scalar(select(ShareLink).where(ShareLink.token_hash == token_hash(token)))
    if link is None or not same_hash(link.token_hash, token):
        raise AppError("SHARE_NOT_FOUND", "this share link does not exist; check that it was copied whole")
    if link.revoked_at is not None:
        raise AppError("SHARE_REVOKED", "this share link was revoked by its project",
                       {"revoked_at": link.revoked_at.isoformat()})
    if link.expires_at is not None and link.expires_at <= utcnow():
        raise AppError("SHARE_EXPIRED", "this share link has expired", {"expired_at": link.expires_at.isoformat()})
    return link


def still_active(link_id: int) -> bool:
    """For long-lived streams: is the link still neither revoked nor expired? (Opens its own session.)"""
    from tunelab.db.session import get_sessionmaker

    with get_sessionmaker()() as session:
        link = session.get(ShareLink, link_id)
        return link is not None and is_active(link)


def record_open(session: Session, link: ShareLink) -> None:
    # One UPDATE, not read-modify-write: many viewers may open a link at once.
    session.execute(update(ShareLink).where(ShareLink.id == link.id)
                    .values(last_opened_at=utcnow(), open_count=ShareLink.open_count + 1))
