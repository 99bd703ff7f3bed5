import type { ReactNode } from "react";

/** The frame of the pages shown before anyone is signed in: the product's name and one small card. */
export function AuthCard({ title, intro, children, footer }: { title: string; intro?: ReactNode; children: ReactNode; footer?: ReactNode }) {
  return (
    <div className="auth-page">
      <div className="auth-brand">Tunelab</div>
      <section className="card auth-card">
        <h1>{title}</h1>
        {intro && <p className="auth-intro">{intro}</p>}
        {children}
      </section>
      {footer && <div className="auth-footer">{footer}</div>}
    </div>
  );
}
