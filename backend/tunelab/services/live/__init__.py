"""Live views: events published after the transaction they announce, the per-process hub that fans them out to
browsers over SSE, and which runs anyone watches."""
