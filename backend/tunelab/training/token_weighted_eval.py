"""Eval figures that do not depend on batching: a token-weighted mean over the whole held-out split.

transformers' evaluation loop averages each batch's mean loss, weighting every batch by the batch size, and TRL
averages its per-batch token accuracy and entropy with equal weights. A batch's mean is over its label tokens, so the
split's figure moved with the eval batch size (one model on the same 6 rows: 1.697 at batch 8, 2.299 at batch 4).
Here each batch adds its label-token sum and count, and the figure is sum / count over the split: the same for any
batch size, up to float rounding.
"""

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from trl import SFTTrainer

# TRL's per-batch token means (SFTTrainer.compute_loss appends one per batch to _metrics["eval"]).
TOKEN_MEAN_METRICS = ("mean_token_accuracy", "entropy")
# The eval/loss of an objective whose trainer is sft_trainer_class (ObjectiveSpec.eval_loss).
TOKEN_WEIGHTED_EVAL_LOSS = "token-weighted mean of the next-token loss over every label token of the eval split"


@dataclass
class TokenTotals:
    """Label tokens seen in one evaluation, and each figure's sum over them."""

    tokens: float = 0.0
    loss_sum: float = 0.0
    metric_sums: dict[str, float] = field(default_factory=dict)

    def add(self, tokens: float, loss_sum: float, metric_means: dict[str, float]) -> None:
        self.tokens += tokens
        self.loss_sum += loss_sum
        for key, mean in metric_means.items():
            self.metric_sums[key] = self.metric_sums.get(key, 0.0) + mean * tokens


def label_token_count(inputs: dict[str, Any]) -> Any:
    """The label tokens a causal LM's loss averages over: the shifted labels that are not -100 (TRL's fused head
    counts the same ones; padding-free batches carry `shift_labels` already shifted)."""
    shift_labels = inputs.get("shift_labels")
    labels = inputs["labels"][:, 1:] if shift_labels is None else shift_labels
    return (labels != -100).sum()


@cache
def sft_trainer_class() -> type["SFTTrainer"]:
    """TRL's SFTTrainer with token-weighted eval figures (imported on first use: the API never imports TRL)."""
    import torch
    from trl import SFTTrainer

    class TokenWeightedEvalSFTTrainer(SFTTrainer):
        _token_totals: TokenTotals | None = None

        def evaluation_loop(self, dataloader: Any, description: str, prediction_loss_only: bool | None = None,
                            ignore_keys: list[str] | None = None, metric_key_prefix: str = "eval") -> Any:
            self._token_totals = totals = TokenTotals()
            try:
                output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys,
                                                 metric_key_prefix)
            finally:
                self._token_totals = None
            metrics = cast(dict[str, float], output.metrics)  # set by the loop
            if totals.tokens:
                metrics[f"{metric_key_prefix}_loss"] = totals.loss_sum / totals.tokens
                # TRL's log averages these lists: one value each, weighted by tokens, replaces its per-batch means.
                for key, total in totals.metric_sums.items():
                    self._metrics["eval"][key] = [total / totals.tokens]
            return output

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            totals = self._token_totals
            if totals is None or model.training:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            local_tokens = label_token_count(inputs)
            result = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            loss = result[0] if return_outputs else result
            # Every process's batch: summed over processes, as TRL's own figures for this batch already are.
            local = torch.stack([local_tokens.to(torch.float64), loss.detach().to(torch.float64) * local_tokens])
            tokens, loss_sum = self.accelerator.gather(local.to(loss.device)).reshape(-1, 2).sum(dim=0).tolist()
            metric_means = {key: self._metrics["eval"][key].pop() for key in TOKEN_MEAN_METRICS
                            if self._metrics["eval"].get(key)}
            if tokens:
                totals.add(tokens, loss_sum, metric_means)
            return result

    return TokenWeightedEvalSFTTrainer
