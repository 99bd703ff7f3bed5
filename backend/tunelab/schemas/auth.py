import re
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from tunelab.db.models import Role
from tunelab.schemas.common import ResourceId

# EmailStr would need the email-validator package; an account id needs only to look like an address.
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+$")


def _looks_like_an_address(value: str) -> str:
    # A check of our own rather than Field(pattern=...): pydantic's message for that is the raw regex.
    if not EMAIL_PATTERN.match(value):
        raise PydanticCustomError("email", "enter an email address like name@example.com")
    return value


EmailAddress = Annotated[str, Field(max_length=320, description="Sign-in address",
                                    json_schema_extra={"pattern": EMAIL_PATTERN.pattern}),
                         AfterValidator(_looks_like_an_address)]
Password = Field(min_length=8, max_length=256, description="At least 8 characters")
DisplayName = Field("", max_length=100, description="Shown in member lists and the audit log")


class SetupPublic(BaseModel):
    needs_first_admin: bool = Field(description="A fresh install: the first visit creates the admin account")
    open_signup: bool


class FirstAdminCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailAddress
    display_name: str = DisplayName
    password: str = Password


class SignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(max_length=320)
    password: str = Field(max_length=256)


class SignUp(FirstAdminCreate):
    pass


class InviteAccept(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(max_length=200)
    password: str = Password
    display_name: str | None = Field(None, max_length=100)


class InvitePublic(BaseModel):
    email: str
    display_name: str


class UserPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    email: str
    display_name: str
    is_admin: bool
    is_active: bool
    invite_pending: bool
    created_at: datetime
    last_sign_in_at: datetime | None


class UsersPublic(BaseModel):
    data: list[UserPublic]
    count: int


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: EmailAddress
    display_name: str = DisplayName
    password: str | None = Field(None, min_length=8, max_length=256,
                                 description="Set it now, or leave it out to get an invitation link")
    is_admin: bool = Field(False, strict=True)
    project_id: ResourceId | None = Field(None, strict=True,
                                          description="Also add the user to this project (you must own it)")
    role: Role = Field(Role.viewer, description="Their role in project_id")


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    is_active: bool | None = Field(None, strict=True,
                                   description="false: sign-in, sessions and API tokens stop working at once")
    is_admin: bool | None = Field(None, strict=True)


class InvitationPublic(BaseModel):
    invite_url: str = Field(description="Path of the new invitation page; the previous link no longer works")


class UserCreated(BaseModel):
    user: UserPublic
    invite_url: str | None = Field(description="Path of the invitation page; shown once, valid for a limited time")


class MembershipPublic(BaseModel):
    project_id: int
    project_name: str
    role: Role


class MePublic(BaseModel):
    user: UserPublic
    projects: list[MembershipPublic]
    via: str = Field(description="session (browser) or token (API token)")


class ApiTokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, description="What the token is for, e.g. 'laptop CLI'")
    expires_in_days: int | None = Field(None, ge=1, le=3650, strict=True, description="Never expires when omitted")


class ApiTokenPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    hint: str = Field(description="The token's first characters, to tell tokens apart")
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


class ApiTokenCreated(ApiTokenPublic):
    token: str = Field(description="The secret, shown only now; send it as `Authorization: Bearer <token>`")


class ApiTokensPublic(BaseModel):
    data: list[ApiTokenPublic]
    count: int
