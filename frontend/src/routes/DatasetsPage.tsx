export function DatasetsPage() {
  return <h1>DatasetsPage</h1>;
}
