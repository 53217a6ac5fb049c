"""Pure, notebook-inlinable stages: prompts, parse, vote, metrics, stats, transcripts."""
