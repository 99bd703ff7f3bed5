// An invitation link, shown once: right after an account is created without a password, or after a new link.
import { CopyField } from "../../../components/ui/ui";

export type IssuedInvite = { email: string; url: string; reissued: boolean };

export function IssuedInviteBox({ invite }: { invite: IssuedInvite }) {
  return (
    <div className="secret-box" data-testid={invite.reissued ? "invite-reissued" : "invite-created"}>
      <strong>
        {invite.reissued ? "New invitation link" : "Invitation"} for {invite.email}. Copy the link now: it is shown only once.
      </strong>
      <CopyField value={invite.url} label="Invitation link" testId="invite-link" copyTestId="copy-invite-link" />
      <p className="help">
        {invite.reissued && "The previous link no longer works. "}It works once and for a limited time. Send it to them
        directly (chat, email).
      </p>
    </div>
  );
}
