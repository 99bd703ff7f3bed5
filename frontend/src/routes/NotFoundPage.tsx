import { Link } from "react-router";

import { EmptyState } from "../components/ui/ui";

export function NotFoundPage() {
  return (
    <EmptyState title="This page does not exist">
      <Link to="/">Back to the runs</Link>
    </EmptyState>
  );
}
