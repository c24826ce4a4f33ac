"""Load stage: a model file, detected by its content → LoadedModel (and the safety checks on untrusted .pt2)."""
