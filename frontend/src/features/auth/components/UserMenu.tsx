import { useEffect, useRef, useState } from "react";
import { Link, useLocation } from "react-router";

import { useSignOut } from "../api/mutations";
import { useSession } from "../session";

/** Who is signed in, and the account's pages: project settings, users (admins), API tokens, sign out. */
export function UserMenu() {
  const { me } = useSession();
  const signOut = useSignOut();
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  const location = useLocation();

  useEffect(() => setOpen(false), [location.pathname]);
  useEffect(() => {
    if (!open) return;
    const close = (event: MouseEvent | KeyboardEvent) => {
      if (event instanceof KeyboardEvent ? event.key === "Escape" : !ref.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
    };
  }, [open]);

  // A full page load after signing out: no state of this user survives in memory.
  const leave = () => signOut.mutate(undefined, { onSettled: () => window.location.assign("/sign-in") });

  return (
    <div className="user-menu" ref={ref}>
      <button
        type="button"
        className="topbar-button user-menu-button"
        data-testid="user-menu"
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
      >
        {me.user.display_name || me.user.email} ▾
      </button>
      {open && (
        <div className="menu" role="menu">
          <div className="menu-header">
            <strong>{me.user.display_name}</strong>
            <span className="help">{me.user.email}</span>
            {me.user.is_admin && <span className="badge badge-queued">admin</span>}
          </div>
          <Link role="menuitem" to="/settings/project" className="menu-item">
            Project settings
          </Link>
          {me.user.is_admin && (
            <Link role="menuitem" to="/settings/users" className="menu-item">
              Users
            </Link>
          )}
          <Link role="menuitem" to="/settings/tokens" className="menu-item">
            API tokens
          </Link>
          <button role="menuitem" type="button" className="menu-item" disabled={signOut.isPending} onClick={leave}>
            Sign out
          </button>
        </div>
      )}
    </div>
  );
}
