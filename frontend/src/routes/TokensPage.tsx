import { useQuery } from "@tanstack/react-query";

import { Card, EmptyState, ErrorBox, Loading } from "../components/ui/ui";
import { apiTokensQueryOptions } from "../features/tokens/api/queries";
import { CreateTokenCard } from "../features/tokens/components/CreateTokenCard";
import { TokensTable } from "../features/tokens/components/TokensTable";

export function TokensPage() {
  const tokens = useQuery(apiTokensQueryOptions());
  return (
    <>
      <h1>API tokens</h1>
      <p className="help page-intro">
        Scripts, notebooks and external training jobs use a token to call the API as you, with your roles in each project.
      </p>
      <CreateTokenCard />
      <Card title={tokens.data ? `Your tokens (${tokens.data.count})` : "Your tokens"}>
        {tokens.isPending && <Loading what="tokens" />}
        {tokens.error && <ErrorBox error={tokens.error} />}
        {tokens.data && tokens.data.data.length === 0 && <EmptyState title="No API tokens yet" />}
        {tokens.data && tokens.data.data.length > 0 && <TokensTable tokens={tokens.data.data} />}
      </Card>
    </>
  );
}
