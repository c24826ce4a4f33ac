"""Infrastructure every stage shares: the output transaction, staging, signals, progress, memory, data files."""
