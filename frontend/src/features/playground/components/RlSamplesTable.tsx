// The completions an online RL run (GRPO, RLOO) sampled while it trained, each with its rewards: what the reward
// curve is made of, newest step first, filling in live while the run trains.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef } from "react";

import { Card, ErrorBox } from "../../../components/ui/ui";
import { isFinished, methodsQueryOptions, runQueryOptions } from "../../runs";
import { playgroundKeys, rlSamplesQueryOptions } from "../api/queries";
import { formatReward, groupByStep, rewardColumns } from "../rlSamples";

const TITLE = "Sampled completions";

/** The table for a run whose objective is online RL (it names a reward run param); nothing for any other run. */
export function RlSamplesTable({ runId }: { runId: number }) {
  // The run page keeps this entry fresh (its status ends the polling below).
  const run = useQuery(runQueryOptions(runId)).data;
  const objectives = useQuery(methodsQueryOptions()).data?.objectives;
  const onlineRl = objectives?.some((o) => o.name === run?.objective && o.reward_run_param !== null) ?? false;
  if (!run || !onlineRl) return null;
  return <SampledCompletions runId={run.id} live={!isFinished(run)} />;
}

function SampledCompletions({ runId, live }: { runId: number; live: boolean }) {
  const samples = useQuery(rlSamplesQueryOptions(runId, live));
  // The last steps' samples may land after the last poll: read them once more when the run ends.
  const queryClient = useQueryClient();
  const wasLive = useRef(live);
  useEffect(() => {
    if (wasLive.current && !live) void queryClient.invalidateQueries({ queryKey: playgroundKeys.rlSamples(runId) });
    wasLive.current = live;
  }, [live, runId, queryClient]);
  if (samples.error) return <ErrorBox error={samples.error} />;
  const rows = samples.data?.data ?? [];
  if (rows.length === 0 && !live) return null;
  const rewards = rewardColumns(rows);
  const advantage = rows.some((row) => row.advantage != null);
  return (
    <Card title={TITLE}>
      <p className="help">
        Completions the policy sampled while it trained, each reward before its weight and the weighted total it was trained on.
      </p>
      {rows.length === 0 ? (
        <p className="help">None yet: the first arrive with the first logged step.</p>
      ) : (
        <div className="table-scroll">
          <table className="samples rl-samples" aria-label={TITLE}>
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">Prompt</th>
                <th scope="col">Completion</th>
                <th scope="col">Expected</th>
                {rewards.map((name) => (
                  <th scope="col" key={name} className="num">{name}</th>
                ))}
                <th scope="col" className="num">Total reward</th>
                {advantage && <th scope="col" className="num">Advantage</th>}
              </tr>
            </thead>
            {groupByStep(rows).map((group) => (
              <tbody key={`${group.step}-${group.split}`}>
                {group.rows.map((row, i) => (
                  <tr key={i}>
                    <td>
                      {row.step} <span className="help">{row.split}</span>
                    </td>
                    <td><pre>{row.prompt}</pre></td>
                    <td>{row.completion === "" ? <span className="help">(nothing: it ended at once)</span> : <pre>{row.completion}</pre>}</td>
                    <td>{row.expected == null ? <span className="help">—</span> : <pre>{row.expected}</pre>}</td>
                    {rewards.map((name) => (
                      <td key={name} className="num">{formatReward(row.rewards[name])}</td>
                    ))}
                    <td className="num"><strong>{formatReward(row.reward)}</strong></td>
                    {advantage && <td className="num">{formatReward(row.advantage)}</td>}
                  </tr>
                ))}
              </tbody>
            ))}
          </table>
        </div>
      )}
    </Card>
  );
}
