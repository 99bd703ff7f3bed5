export function ComparePage() {
  return <h1>ComparePage</h1>;
}
