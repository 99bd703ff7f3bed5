export function NewRunPage() {
  return <h1>NewRunPage</h1>;
}
