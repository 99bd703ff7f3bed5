"""One error type and one error shape: {"error": {"code", "message", "details"}}."""

from typing import Any, Literal, get_args

from pydantic import BaseModel

# Every code an error response carries. Clients branch on it: the OpenAPI document publishes the list (the generated
# TypeScript client gets it as a union), and mypy refuses a code that is not in it wherever one is raised.
ErrorCode = Literal[
    "VALIDATION_ERROR",
    "RUN_NOT_FOUND",
    "DATASET_NOT_FOUND",
    "MODEL_NOT_FOUND",
    "METHOD_NOT_FOUND",
    "OBJECTIVE_NOT_FOUND",
    "ARTIFACT_NOT_FOUND",
    "PROJECT_NOT_FOUND",
    "NOT_FOUND",
    "RUN_NOT_FINISHED",
    "RUN_NOT_RESUMABLE",
    "RUN_NOT_EXPORTABLE",
    "RUN_NOT_SUCCEEDED",
    "RUN_HAS_NO_WEIGHTS",
    "BASE_MODELS_DIFFER",
    "PLAYGROUND_NOT_FOUND",
    "QUEUE_UNAVAILABLE",
    "EXPORT_IN_PROGRESS",
    "RUN_FINISHED",
    "DATASET_INVALID",
    "DATASET_IN_USE",
    "RUN_IN_USE",
    "DATASET_BUNDLED",
    "PAYLOAD_TOO_LARGE",
    "INVALID_PATH",
    "INVALID_CURSOR",
    "TOKENIZER_UNAVAILABLE",
    "AUTH_REQUIRED",
    "INVALID_CREDENTIALS",
    "INVALID_TOKEN",
    "FORBIDDEN",
    "CSRF_FAILED",
    "SIGNUP_CLOSED",
    "TOO_MANY_ATTEMPTS",
    "RATE_LIMITED",
    "SETUP_DONE",
    "EMAIL_TAKEN",
    "PROJECT_NAME_TAKEN",
    "ALREADY_MEMBER",
    "LAST_OWNER",
    "LAST_ADMIN",
    "INVITE_ACCEPTED",
    "USER_NOT_FOUND",
    "MEMBER_NOT_FOUND",
    "TOKEN_NOT_FOUND",
    "INVITE_INVALID",
    "SHARE_NOT_FOUND",
    "STUDY_NOT_FOUND",
    "PIPELINE_NOT_FOUND",
    "PIPELINE_FINISHED",
    "IDEMPOTENCY_KEY_REUSED",
    "IDEMPOTENCY_KEY_IN_USE",
    "SHARE_REVOKED",
    "SHARE_EXPIRED",
    "RUN_NOT_EXTERNAL",
    "PROJECT_HOLDS_SAMPLES",
    "INTERNAL_ERROR",
    "DATABASE_UNAVAILABLE",
    "STORE_UNAVAILABLE",
    "METHOD_NOT_ALLOWED",
    "HTTP_ERROR",
]

# The HTTP status of each code. HTTP_ERROR stands for a status Starlette raised that has no code of its own; its
# response keeps that status.
STATUS_BY_CODE: dict[ErrorCode, int] = {
    "VALIDATION_ERROR": 422,
    "RUN_NOT_FOUND": 404,
    "DATASET_NOT_FOUND": 404,
    "MODEL_NOT_FOUND": 422,
    "METHOD_NOT_FOUND": 422,
    "OBJECTIVE_NOT_FOUND": 422,
    "ARTIFACT_NOT_FOUND": 404,
    "PROJECT_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "RUN_NOT_FINISHED": 409,
    "RUN_NOT_RESUMABLE": 409,
    "RUN_NOT_EXPORTABLE": 409,
    "RUN_NOT_SUCCEEDED": 409,
    "RUN_HAS_NO_WEIGHTS": 409,
    "BASE_MODELS_DIFFER": 422,
    "PLAYGROUND_NOT_FOUND": 404,
    "QUEUE_UNAVAILABLE": 503,
    "EXPORT_IN_PROGRESS": 409,
    "RUN_FINISHED": 409,
    "DATASET_INVALID": 422,
    "DATASET_IN_USE": 409,
    "RUN_IN_USE": 409,
    "DATASET_BUNDLED": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "INVALID_PATH": 400,
    "INVALID_CURSOR": 400,
    "TOKENIZER_UNAVAILABLE": 422,
    "AUTH_REQUIRED": 401,
    "INVALID_CREDENTIALS": 401,
    "INVALID_TOKEN": 401,
    "FORBIDDEN": 403,
    "CSRF_FAILED": 403,
    "SIGNUP_CLOSED": 403,
    "TOO_MANY_ATTEMPTS": 429,
    "RATE_LIMITED": 429,
    "SETUP_DONE": 409,
    "EMAIL_TAKEN": 409,
    "PROJECT_NAME_TAKEN": 409,
    "ALREADY_MEMBER": 409,
    "LAST_OWNER": 409,
    "LAST_ADMIN": 409,
    "INVITE_ACCEPTED": 409,
    "USER_NOT_FOUND": 404,
    "MEMBER_NOT_FOUND": 404,
    "TOKEN_NOT_FOUND": 404,
    "INVITE_INVALID": 404,
    "SHARE_NOT_FOUND": 404,
    "STUDY_NOT_FOUND": 404,
    "PIPELINE_NOT_FOUND": 404,
    "PIPELINE_FINISHED": 409,
    "IDEMPOTENCY_KEY_REUSED": 422,
    "IDEMPOTENCY_KEY_IN_USE": 409,
    "SHARE_REVOKED": 410,
    "SHARE_EXPIRED": 410,
    "RUN_NOT_EXTERNAL": 409,
    "PROJECT_HOLDS_SAMPLES": 409,
    "INTERNAL_ERROR": 500,
    "DATABASE_UNAVAILABLE": 503,
    "STORE_UNAVAILABLE": 503,
    "METHOD_NOT_ALLOWED": 405,
    "HTTP_ERROR": 400,
}
if set(STATUS_BY_CODE) != set(get_args(ErrorCode)):  # a code without a status fails at import, not as a 400 later
    raise RuntimeError(f"error codes and statuses differ: {set(get_args(ErrorCode)) ^ set(STATUS_BY_CODE)}")


class AppError(Exception):
    """The one exception the API turns into an error response."""

    def __init__(self, code: ErrorCode, message: str, details: Any = None) -> None:
        super().__init__(message)
        if code not in STATUS_BY_CODE:  # a code computed at run time that is none
            raise ValueError(f"unknown error code {code!r}")
        self.code: ErrorCode = code
        self.message = message
        self.details = details

    @property
    def status_code(self) -> int:
        return STATUS_BY_CODE[self.code]


class ErrorBody(BaseModel):
    code: ErrorCode
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody


def error_payload(code: ErrorCode, message: str, details: Any = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details}}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Declare error responses on a route so the OpenAPI document (and the generated client) knows them."""
    return {status: {"model": ErrorResponse} for status in statuses}
