"""What the prompt-learning methods share (prompt tuning, prefix tuning, P-tuning), as PEFT's PromptLearningConfig
does: a number of learned virtual tokens, and a learning rate far above the other methods' (they train only those).
Not a method of its own: it registers nothing."""

from pydantic import Field

from tunelab.training.params import TrainingParams

# The tiny model: 16 virtual tokens are plenty, and it learns from the first step (each method adds its learning rate).
TINY_PROMPT_LEARNING_DEFAULTS = {"num_virtual_tokens": 16, "warmup_ratio": 0.0}


class PromptLearningParams(TrainingParams):
    # PEFT's guide to the prompt-based methods (causal LM): lr 3e-2 and 20 virtual tokens for all three.
    learning_rate: float = Field(3e-2, gt=0, le=1.0, title="Learning rate", description="Peak learning rate of AdamW")
    num_virtual_tokens: int = Field(
        20, ge=1, le=1024, title="Virtual tokens", description="Number of learned positions prepended to every input"
    )
