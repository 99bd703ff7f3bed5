// What a link's holder sees when the link no longer shows anything.

const MESSAGES: Record<string, { title: string; text: string }> = {
  SHARE_REVOKED: {
    title: "Share link revoked",
    text: "This link was revoked by its project, so it no longer shows anything. Ask whoever shared it for a new link.",
  },
  SHARE_EXPIRED: {
    title: "This link has expired",
    text: "Share links can be made to last a limited time. Ask whoever shared it for a new link.",
  },
  SHARE_NOT_FOUND: {
    title: "This link does not exist",
    text: "Check that the whole link was copied: the part after /s/ is a long token.",
  },
};

export function ShareUnavailable({ code }: { code: string }) {
  const message = MESSAGES[code] ?? MESSAGES.SHARE_NOT_FOUND;
  return (
    <div className="auth-page" data-code={code}>
      <div className="auth-brand">Tunelab</div>
      <section className="card auth-card share-unavailable">
        <h1>{message.title}</h1>
        <p>{message.text}</p>
      </section>
    </div>
  );
}
