"""The belief gate and what reads through it: adoption, grants, ContextPolicy, contradictions
and recall. Uses only the model."""
