export function RunsPage() {
  return <h1>RunsPage</h1>;
}
