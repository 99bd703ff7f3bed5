"""One error type and one error shape: {"error": {"code", "message", "details"}}."""

from typing import Any

from pydantic import BaseModel

STATUS_BY_CODE: dict[str, int] = {
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
    "IDEMPOTENCY_KEY_REUSED": 422,
    "IDEMPOTENCY_KEY_IN_USE": 409,
    "SHARE_REVOKED": 410,
    "SHARE_EXPIRED": 410,
    "RUN_NOT_EXTERNAL": 409,
    "PROJECT_HOLDS_SAMPLES": 409,
    "INTERNAL_ERROR": 500,
    "DATABASE_UNAVAILABLE": 503,
}


class AppError(Exception):
    """The one exception the API turns into an error response."""

    def __init__(self, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @property
    def status_code(self) -> int:
        return STATUS_BY_CODE.get(self.code, 400)


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody


def error_payload(code: str, message: str, details: Any = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details}}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Declare error responses on a route so the OpenAPI document (and the generated client) knows them."""
    return {status: {"model": ErrorResponse} for status in statuses}
