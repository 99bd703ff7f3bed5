"""Access and accounts: who is asking (principals and their cache), sign-in and its limits, users, projects and
roles, share links, and the audit log."""
